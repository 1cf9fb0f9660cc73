"""Which Debian packages each host gets, by the groups it is in (one table, one install per host), installed
without letting their maintainer scripts start daemons.

Whether a package is installed comes from the host's state read before the run (roles/state.py): a converged host
runs no apt command at all, and the package lists are refreshed only when something is missing.

Debian's maintainer scripts start a daemon as soon as it is installed, before its configuration exists: trixie's
slurmd then hangs looking for a configless controller, munged starts with a random key. A policy-rc.d that says
"no" (exit 101) for the length of the install keeps them stopped; the roles start each daemon once its files are
in place. An admin's own policy-rc.d is left alone.

Every apt step that waits on the network is bounded: apt gives up on a connection that is silent for
``NET_TIMEOUT_S`` seconds (and retries a failed download), and each step as a whole is killed after its own limit,
failing the operation with "<command> timed out after N s" (pyinfra names the host). Packages are downloaded
before any is unpacked, so a download that times out leaves dpkg untouched; should an unpack or configure ever be
killed, the next run finishes it first (``dpkg --configure -a``).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from ..errors import DeployError, for_pyinfra
from ..model.upgrades import upgrade_problems
from ..versions import RELEASES, SlurmVersion
from . import ops
from .builds import build_packages
from .change import Change
from .managed import packages_for
from .run import DeployRun, Here, step
from .waits import bounded

POLICY = "/usr/sbin/policy-rc.d"
LISTS = "/var/lib/apt/lists"

NET_TIMEOUT_S = 30  # apt: a connection silent this long fails (and is retried, Acquire::Retries)
UPDATE_TIMEOUT_S = 300  # apt-get update, the whole of it
DOWNLOAD_TIMEOUT_S = 900  # apt-get install --download-only, the whole of it
INSTALL_TIMEOUT_S = 900  # unpacking and configuring (no network, no daemon starts), and dpkg --configure -a
APT_NETWORK = (f"-o Acquire::http::Timeout={NET_TIMEOUT_S} -o Acquire::https::Timeout={NET_TIMEOUT_S} "
               "-o Acquire::Retries=3")


def install_command(packages: Sequence[str], refresh: bool = False, pinned: bool = False) -> str:
    """Install ``packages`` (``name`` or ``name=version``). ``refresh``: fetch the package lists first whatever
    their age (a repository new in this run). ``pinned``: exact versions that may be older than what is installed,
    of packages clusterforge holds."""
    names = " ".join(shlex.quote(p) for p in packages)
    said = " ".join(packages)
    moves = " --allow-downgrades --allow-change-held-packages" if pinned else ""
    update = bounded(f"apt-get update -qq {APT_NETWORK}", UPDATE_TIMEOUT_S, "apt-get update")
    download = bounded(f"apt-get install -y -q --no-install-recommends{moves} --download-only {APT_NETWORK} {names}",
                       DOWNLOAD_TIMEOUT_S, f"apt-get install --download-only {said}")
    configure = bounded("dpkg --configure -a", INSTALL_TIMEOUT_S, "dpkg --configure -a")
    install = bounded(f"apt-get install -y -q --no-install-recommends{moves} -o Dpkg::Options::=--force-confdef "
                      f"-o Dpkg::Options::=--force-confold {names}",
                      INSTALL_TIMEOUT_S, f"apt-get install {said}")
    # The first install of a run refreshes the package lists; later ones within ten minutes reuse them.
    fresh = (f"if [ -z \"$(find {LISTS} -maxdepth 1 -name '*Packages*' -mmin -10 2>/dev/null | head -1)\" ]; "
             f"then {update}; fi" if not refresh else update)
    apt = f"export DEBIAN_FRONTEND=noninteractive; {fresh}; {download}; {configure}; {install}"
    return (f"if [ ! -e {POLICY} ]; then "
            f"trap 'rm -f {POLICY}' EXIT; printf '#!/bin/sh\\nexit 101\\n' > {POLICY}; chmod 755 {POLICY}; fi; {apt}")


def installed(here: Here, name: str, names: tuple[str, ...]) -> Change:
    """The packages are installed (with their maintainer scripts kept from starting daemons)."""
    missing = [n for n in names if n not in here.state.packages]
    return here.apply(Change(name, (install_command(missing),) if missing else (),
                             (f"installed: {' '.join(missing)}",), otherwise="installed: " + " ".join(names)))


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
    (Debian 12's 22.05 to Debian 13's 24.11) is refused with its reason and the path Slurm supports, before the
    per-host refusal below asks for the release the hosts run."""
    def guard() -> DeployError | None:
        valid = run.valid
        # Hosts ahead of the inventory (upgraded by apt) are the per-host refusal's: set the release they run.
        before = {name: release for name, found in run.states.items()
                  if (have := found.packages.get("slurm-client")) and (release := running_release(have))
                  and release < valid.version}
        problems = upgrade_problems(valid, before, dict.fromkeys(before, valid.version))
        if not problems:
            return None
        return DeployError(f"the inventory's slurm_version={str(valid.version)!r} is not a move Slurm supports: "
                           + "; ".join(problems) + ". Nothing was changed on any host")
    error = run.once("Slurm's releases guarded", guard)
    if error is not None:
        raise for_pyinfra(error)


def _refuse_another_release(here: Here) -> None:
    """Every file clusterforge renders, and Pyxis, is made for the inventory's release: a host that runs another
    (upgraded by apt, say) would get keys its daemons reject and a plugin they refuse to load."""
    valid = here.valid
    have = here.state.packages.get("slurm-client")
    if have and installed_release(have) != str(valid.version):
        raise for_pyinfra(DeployError(
            f"{here.name} has Slurm {have} installed, but the inventory says slurm_version={str(valid.version)!r}: "
            "set the release the hosts run, so that every file (and Pyxis) is made for it"))


@step("packages")
def packages(here: Here) -> None:
    valid = here.valid
    _refuse_another_release(here)
    installed(here, name="packages", names=packages_for(valid, here.machine.groups)
              + build_packages(here.run, here.machine.name))
    if valid.setup.time_sync:
        # A container's clock is its host's; chrony's unit skips itself there (ConditionCapability=CAP_SYS_TIME).
        container = here.state.container
        ops.daemon(here, name="chrony is enabled" + ("" if container else " and running"), unit="chrony", inputs="",
                   restart=False, there=not container)
        if container:
            ops.commands(here, name="chrony is enabled", otherwise="chrony is enabled",
                         commands=[] if here.state.unit("chrony").enabled else ["systemctl enable chrony"])
