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

from pyinfra import host
from pyinfra.api import operation

from ..errors import DeployError, for_pyinfra
from ..model import ValidCluster
from ..model.hosts import SLURM_GROUPS
from ..versions import v
from . import ops
from .auth import runs_sackd
from .rehearsal import step
from .waits import bounded

POLICY = "/usr/sbin/policy-rc.d"
LISTS = "/var/lib/apt/lists"

NET_TIMEOUT_S = 30  # apt: a connection silent this long fails (and is retried, Acquire::Retries)
UPDATE_TIMEOUT_S = 300  # apt-get update, the whole of it
DOWNLOAD_TIMEOUT_S = 900  # apt-get install --download-only, the whole of it
INSTALL_TIMEOUT_S = 900  # unpacking and configuring (no network, no daemon starts), and dpkg --configure -a
APT_NETWORK = (f"-o Acquire::http::Timeout={NET_TIMEOUT_S} -o Acquire::https::Timeout={NET_TIMEOUT_S} "
               "-o Acquire::Retries=3")


def install_command(packages: Sequence[str]) -> str:
    names = " ".join(shlex.quote(p) for p in packages)
    update = bounded(f"apt-get update -qq {APT_NETWORK}", UPDATE_TIMEOUT_S, "apt-get update")
    download = bounded(f"apt-get install -y -q --no-install-recommends --download-only {APT_NETWORK} {names}",
                       DOWNLOAD_TIMEOUT_S, f"apt-get install --download-only {' '.join(packages)}")
    configure = bounded("dpkg --configure -a", INSTALL_TIMEOUT_S, "dpkg --configure -a")
    install = bounded("apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confdef "
                      f"-o Dpkg::Options::=--force-confold {names}",
                      INSTALL_TIMEOUT_S, f"apt-get install {' '.join(packages)}")
    apt = ("export DEBIAN_FRONTEND=noninteractive; "
           # The first install of a run refreshes the package lists; later ones within ten minutes reuse them.
           f"if [ -z \"$(find {LISTS} -maxdepth 1 -name '*Packages*' -mmin -10 2>/dev/null | head -1)\" ]; "
           f"then {update}; fi; {download}; {configure}; {install}")
    return (f"if [ ! -e {POLICY} ]; then "
            f"trap 'rm -f {POLICY}' EXIT; printf '#!/bin/sh\\nexit 101\\n' > {POLICY}; chmod 755 {POLICY}; fi; {apt}")


# Group -> packages; "*" is every host, "slurm" every host that runs or talks to Slurm.
TABLE: dict[str, tuple[str, ...]] = {
    "*": ("ca-certificates", "procps"),
    "slurm": ("slurm-client",),
    "controller": ("slurmctld",),
    "compute": ("slurmd",),
    "database": ("mariadb-server", "slurmdbd"),
}
# Distributions with Slurm 23.11 or newer (Debian 13, Ubuntu 24.04) ship libpmix.so.2 as libpmix2t64.
PMIX_T64 = v("23.11")


def pmix_library(valid: ValidCluster) -> list[str]:
    """With MpiDefault=pmix, srun and slurmd dlopen libpmix, which Debian 12's Slurm packages do not depend on; every
    Slurm host needs it. Debian 12's plugin (22.05) opens the unversioned pmix2/lib/libpmix.so, which only
    libpmix-dev ships; Debian 13's (24.11) opens libpmix.so.2 from libpmix2t64."""
    if not valid.slurm_conf.get("MpiDefault", "").startswith("pmix"):
        return []
    return ["libpmix2t64" if valid.version >= PMIX_T64 else "libpmix-dev"]


def packages_for(valid: ValidCluster, groups: tuple[str, ...]) -> tuple[str, ...]:
    wanted = list(TABLE["*"])
    if valid.setup.time_sync:
        wanted.append("chrony")
    slurm = bool(SLURM_GROUPS & set(groups))
    if slurm:
        wanted += TABLE["slurm"]
        wanted += ["munge"] if valid.auth == "munge" else (["sackd"] if runs_sackd(groups) else [])
        wanted += pmix_library(valid)
    for group in groups:
        wanted += TABLE.get(group, ())
    nfs = valid.nfs
    if nfs is not None and "nfs" in groups:
        wanted += ["nfs-ganesha", "nfs-ganesha-vfs"] if nfs.software == "ganesha" else ["nfs-kernel-server"]
    if nfs is not None and any(set(m.on) & set(groups) for m in nfs.mounts):
        wanted.append("nfs-common")
    return tuple(dict.fromkeys(wanted))


@operation(is_idempotent=True)
def installed(names: tuple[str, ...]):
    """The packages are installed (with their maintainer scripts kept from starting daemons)."""
    missing = [n for n in names if n not in ops.host_state().packages]
    if not missing:
        host.noop("installed: " + " ".join(names))
        return
    yield install_command(missing)


@ops.describes(installed)
def _plan_installed(names: tuple[str, ...]) -> ops.Description:
    return [f"installed: {' '.join(n for n in names if n not in ops.host_state().packages)}"], None


def installed_release(version: str) -> str:
    """Slurm's major.minor from a Debian package version: '22.05.8-4+deb12u3' -> '22.05'."""
    return ".".join(version.split(".")[:2])


def _refuse_another_release(valid: ValidCluster) -> None:
    """Every file clusterforge renders, and Pyxis, is made for the inventory's release: a host that runs another
    (upgraded by apt, say) would get keys its daemons reject and a plugin they refuse to load."""
    have = ops.host_state().packages.get("slurm-client")
    if have and installed_release(have) != str(valid.version):
        raise for_pyinfra(DeployError(
            f"{host.name} has Slurm {have} installed, but the inventory says slurm_version={str(valid.version)!r}: "
            "set the release the hosts run, so that every file (and Pyxis) is made for it"))


@step("packages")
def packages() -> None:
    valid: ValidCluster = host.data.clusterforge
    _refuse_another_release(valid)
    names = packages_for(valid, host.data.clusterforge_machine.groups)
    ops.create(installed, any(n not in ops.host_state().packages for n in names), name="packages", names=names)
    if valid.setup.time_sync:
        # A container's clock is its host's; chrony's unit skips itself there (ConditionCapability=CAP_SYS_TIME).
        container = ops.host_state().container
        ops.daemon(name="chrony is enabled" + ("" if container else " and running"), unit="chrony", inputs="",
                   restart=False, here=not container)
        if container:
            ops.commands(name="chrony is enabled", otherwise="chrony is enabled",
                         commands=[] if ops.host_state().unit("chrony").enabled else ["systemctl enable chrony"])
