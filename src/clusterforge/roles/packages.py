"""Which Debian packages each host gets, by the groups it is in (one table, one apt transaction per host, with the
GPU stack's exact versions and Enroot's package where it is at hand), installed without letting their maintainer
scripts start daemons (engine/apt.py).

Whether a package is installed comes from the host's state read before the run (engine/state.py): a converged host
runs no apt command at all, and the package lists are refreshed only when something is missing.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..distributions import os_problem
from ..errors import DeployError, for_pyinfra
from ..model import ValidCluster
from ..model.hosts import SLURM_GROUPS
from ..model.upgrades import upgrade_problems
from ..versions import JOB_ID_PATHS, RELEASES, SlurmVersion, below_patch, v
from ..engine import ops
from ..engine.apt import install_command
from .builds import build_packages
from ..engine.change import Change
from .containers import enroot_package_ready
from ..engine.footprint import Footprint
from ..engine.run import DeployRun, Here, step
from .stack import PinnedInstall, pinned_install

# Group -> the packages Slurm and its database bring there (each daemon's step runs it: roles/daemons.py,
# roles/mariadb.py); the host's one install has every step's packages (engine/footprint.py).
TABLE: dict[str, tuple[str, ...]] = {
    "controller": ("slurmctld",),
    "compute": ("slurmd",),
    "database": ("mariadb-server", "slurmdbd"),
}
KNOWN = ("chrony", "munge", "slurmctld", "slurmd", "slurm-client", "slurmdbd", "sackd", "mariadb-server", "libpmix2",
         "libpmix2t64")
# Distributions with Slurm 23.11 or newer (Debian 13, Ubuntu 24.04) ship libpmix.so.2 as libpmix2t64.
PMIX_T64 = v("23.11")
# The multiarch directory of each architecture Debian 12 and Ubuntu release Slurm for, by dpkg architecture: the
# host state reads the link at each (it is read before the host's architecture is known).
MULTIARCH = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "armel": "arm-linux-gnueabi",
             "armhf": "arm-linux-gnueabihf", "i386": "i386-linux-gnu", "mips64el": "mips64el-linux-gnuabi64",
             "mipsel": "mipsel-linux-gnu", "ppc64el": "powerpc64le-linux-gnu", "riscv64": "riscv64-linux-gnu",
             "s390x": "s390x-linux-gnu"}
PMIX_LINKS = {arch: f"/usr/lib/{triplet}/pmix2/lib/libpmix.so" for arch, triplet in MULTIARCH.items()}


def runs_sackd(groups: Iterable[str]) -> bool:
    """Login hosts run sackd unless slurmctld or slurmd already serve credentials there (slurmd and sackd would
    share /run/slurm)."""
    found = set(groups)
    return "login" in found and not {"compute", "controller"} & found


def pmix_library(valid: ValidCluster) -> list[str]:
    """With MpiDefault=pmix, srun and slurmd dlopen libpmix, which Debian 12's Slurm packages do not depend on; every
    Slurm host needs it. Debian 13's plugin (24.11) opens libpmix.so.2 from libpmix2t64; Debian 12's (22.05) opens
    the unversioned pmix2/lib/libpmix.so, which only libpmix-dev ships, with autotools, the C library's headers and
    four more -dev packages behind it (21 packages, 3.5 s of CPU a host): those hosts get libpmix2 and the link
    (PMIX_LINKS)."""
    if not valid.slurm_conf.get("MpiDefault", "").startswith("pmix"):
        return []
    return ["libpmix2t64" if valid.version >= PMIX_T64 else "libpmix2"]


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """chrony, Slurm's packages and its database's by the host's groups, the authentication's (munge, or sackd on a
    login host), libpmix (and its link for Slurm 22.05)."""
    wanted = ["chrony"] if valid.setup.time_sync else []
    if SLURM_GROUPS & set(groups):
        wanted += ["slurm-client", *(["munge"] if valid.auth == "munge" else ["sackd"] if runs_sackd(groups) else []),
                   *pmix_library(valid)]
    for group in groups:
        wanted += TABLE.get(group, ())
    return Footprint(paths=tuple(PMIX_LINKS.values()) if "libpmix2" in pmix_library(valid) else (),
                     units=("chrony.service",) if valid.setup.time_sync else (), packages=tuple(wanted), known=KNOWN)


def installed(here: Here, name: str, names: tuple[str, ...], pinned: PinnedInstall = PinnedInstall(),
              local: tuple[str, ...] = ()) -> Change:
    """The packages are installed (with their maintainer scripts kept from starting daemons), in one apt
    transaction with the pinned stack's exact versions and ``local`` package files already on the host."""
    missing = [n for n in names if n not in here.state.packages]
    asked = [*missing, *pinned.packages, *local]
    commands = ((install_command(asked, refresh=pinned.refresh, pinned=bool(pinned.packages)), *pinned.recorded)
                if asked else ())
    said = ((f"installed: {' '.join(missing)}",) if missing else ()) + pinned.said + tuple(
        f"installed: {path}" for path in local)
    return here.apply(Change(name, commands, said, otherwise="installed: " + " ".join(names)))


def installed_release(version: str) -> str:
    """Slurm's major.minor from a Debian package version: '22.05.8-4+deb12u3' -> '22.05'."""
    return ".".join(version.split(".")[:2])


def running_release(version: str) -> SlurmVersion | None:
    """The release of an installed Slurm package version, where it is one Slurm's upgrade table knows."""
    found = installed_release(version)
    return next((r for r in RELEASES if str(r) == found), None)


def refuse_slurm_jumps(run: DeployRun) -> None:
    """Once per run, before any drain or operation: where the inventory's release is newer than the one hosts run,
    Slurm's upgrade rules are checked over every host of the run (model/upgrades.py), so that a jump Slurm cannot make
    (Debian 12's 22.05 to Debian 13's 24.11), or a daemon moved ahead of the one that serves it, is refused with its
    reason and the path Slurm supports. The controller's release counts where it is not in the run: the hosts that
    move ask slurmctld for it (engine/state.py). A host without Slurm whose OS ships another release (and no pinned
    version from a site repository) is refused the same way (distributions.py)."""
    def guard() -> DeployError | None:
        valid = run.valid
        # Hosts ahead of the inventory (upgraded by apt) are the per-host refusal's: set the release they run.
        before = {name: release for name, found in run.states.items()
                  if (have := found.packages.get("slurm-client")) and (release := running_release(have))
                  and release < valid.version}
        controller = valid.controller.name
        seen = [release for found in run.states.values() if (release := running_release(found.slurmctld))]
        around = {controller: seen[0]} if controller not in run.states and seen else {}
        problems = upgrade_problems(valid, {**around, **before}, dict.fromkeys(before, valid.version))
        # A host without Slurm gets it from its OS's archive, unless the inventory pins a site repository's version.
        pinned = valid.stack.slurm if valid.stack is not None else None
        elsewhere = [problem for name, found in sorted(run.states.items()) if "slurm-client" not in found.packages
                     and (problem := os_problem(name, found.os, valid.version, pinned))]
        elsewhere += [f"{name} has Slurm {have}, older than {JOB_ID_PATHS}, the first 26.05 whose cgroup.conf takes "
                      "CgroupJobIdPaths=yes (the health check's job cgroups): upgrade it, or pin 26.05.2 or later"
                      for name, found in sorted(run.states.items())
                      if (have := found.packages.get("slurm-client")) and below_patch(have, JOB_ID_PATHS)
                      and str(valid.version) == installed_release(have)]
        if elsewhere:
            return DeployError(f"the inventory's slurm_version={str(valid.version)!r} is not what the hosts' OS ships: "
                               + "; ".join(elsewhere) + ". Nothing was changed on any host")
        if not problems:
            return None
        return DeployError(f"the inventory's slurm_version={str(valid.version)!r} is not a move Slurm supports: "
                           + "; ".join(problems) + ". Nothing was changed on any host")
    error = run.once("Slurm's releases guarded", guard)
    if error is not None:
        raise for_pyinfra(error)


def _refuse_another_release(here: Here) -> None:
    """Every file clusterforge renders, and Pyxis, is made for the inventory's release: a host that runs another
    gets it only by moving to it, to the exact version the inventory pins, where Slurm's rules allow the move
    (refuse_slurm_jumps); anything else would give its daemons keys they reject and a plugin they refuse to load."""
    valid = here.valid
    have = here.state.packages.get("slurm-client")
    if not have or installed_release(have) == str(valid.version):
        return
    pinned = valid.stack.slurm if valid.stack is not None else None
    release = running_release(have)
    if release is not None and release < valid.version and pinned is not None:
        return  # moves in this run (roles/stack.py), in Slurm's order
    if release is not None and release < valid.version:
        raise for_pyinfra(DeployError(
            f"{here.name} has Slurm {have} installed, and the inventory says slurm_version={str(valid.version)!r}: "
            f"to move the hosts to Slurm {valid.version}, pin the exact version they move to (stack.slurm, e.g. "
            f"'{valid.version}.x-y'); to keep them, set the release they run"))
    raise for_pyinfra(DeployError(
        f"{here.name} has Slurm {have} installed, but the inventory says slurm_version={str(valid.version)!r}: "
        "set the release the hosts run, so that every file (and Pyxis) is made for it (Slurm does not go back to "
        "an older release)"))


def _pmix_link(here: Here) -> str:
    """Where Slurm 22.05's mpi/pmix opens the unversioned libpmix.so on this host, which libpmix2 does not ship
    (pmix_library)."""
    link = PMIX_LINKS.get(here.state.arch)
    if link is None:
        raise for_pyinfra(DeployError(
            f"{here.name}: its architecture {here.state.arch or '(unknown)'} is none Debian releases Slurm 22.05 for "
            f"({', '.join(PMIX_LINKS)}): there is no libpmix link to make for MpiDefault=pmix"))
    return link


@step("packages", footprint=footprint)
def packages(here: Here) -> None:
    """The host's one apt transaction: the packages every step of the deploy wants here (their footprints), the
    controller's build packages, the GPU stack at its pinned versions, and Enroot's package where it is at hand
    before the run (a package given, or a kept build)."""
    valid = here.valid
    _refuse_another_release(here)
    names = here.footprint.packages
    link = _pmix_link(here) if "libpmix2" in names else None
    installed(here, name="packages", names=names + build_packages(here.run, here.machine.name),
              pinned=pinned_install(here), local=enroot_package_ready(here))
    if link is not None:
        ops.commands(here, name="libpmix where Slurm 22.05 opens it", otherwise=f"{link} is there",
                     commands=[] if link in here.state.paths else [f"ln -sfn libpmix.so.2 {link}"])
    if valid.setup.time_sync:
        # A container's clock is its host's; chrony's unit skips itself there (ConditionCapability=CAP_SYS_TIME).
        container = here.state.container
        ops.daemon(here, name="chrony is enabled" + ("" if container else " and running"), unit="chrony", inputs="",
                   restart=False, there=not container)
        if container:
            ops.commands(here, name="chrony is enabled", otherwise="chrony is enabled",
                         commands=[] if here.state.unit("chrony").enabled else ["systemctl enable chrony"])
