"""Which Debian packages each host gets, by the groups it is in: one table, one install per host.

Debian's maintainer scripts start a daemon as soon as it is installed, before its configuration exists; the
install keeps them stopped (roles/packages.py), and each daemon's step starts it once its files are in place.
"""

from __future__ import annotations

from pyinfra import host
from pyinfra.api import deploy

from ..model import ValidCluster
from ..versions import v
from . import ops
from .auth import runs_sackd

# Group -> packages; "*" is every host, "slurm" every host that runs or talks to Slurm.
TABLE: dict[str, tuple[str, ...]] = {
    "*": ("ca-certificates", "procps"),
    "slurm": ("slurm-client",),
    "controller": ("slurmctld",),
    "compute": ("slurmd",),
    "database": ("mariadb-server", "slurmdbd"),
}
SLURM_GROUPS = frozenset({"controller", "compute", "login", "database"})
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


@deploy("packages")
def packages() -> None:
    valid: ValidCluster = host.data.clusterforge
    ops.packages(name="packages", names=packages_for(valid, host.data.clusterforge_machine.groups))
    if valid.setup.time_sync:
        # A container's clock is its host's; chrony's unit skips itself there (ConditionCapability=CAP_SYS_TIME).
        container = ops.host_state().container
        ops.daemon(name="chrony is enabled" + ("" if container else " and running"), unit="chrony", inputs="",
                   restart=False, here=not container)
        if container:
            ops.commands(name="chrony is enabled", otherwise="chrony is enabled",
                         commands=[] if ops.host_state().unit("chrony").enabled else ["systemctl enable chrony"])
