"""Where the deploy's files, units and packages live on a host: the one list the roles and the host-state fact share,
so the state read before the run covers exactly what the roles manage."""

from __future__ import annotations

from ..model import ValidCluster
from ..render.nfs import unit_name

APT_PROXY_FILE = "/etc/apt/apt.conf.d/01clusterforge-proxy"
ETC_HOSTS = "/etc/hosts"
MUNGE_DIR = "/etc/munge"
MUNGE_KEY = f"{MUNGE_DIR}/munge.key"
SLURM_DIR = "/etc/slurm"
SLURM_KEY = f"{SLURM_DIR}/slurm.key"
SLURMDBD_CONF = f"{SLURM_DIR}/slurmdbd.conf"
SLURM_LOG_DIR = "/var/log/slurm"
MARIADB_CNF = "/etc/mysql/mariadb.conf.d/60-clusterforge-slurmdbd.cnf"
EXPORTS_DIR = "/etc/exports.d"
EXPORTS = f"{EXPORTS_DIR}/clusterforge.exports"
GANESHA_CONF = "/etc/ganesha/ganesha.conf"
SYSTEMD_DIR = "/etc/systemd/system"
SLURMD_DROPIN_DIR = f"{SYSTEMD_DIR}/slurmd.service.d"
SLURMD_DROPIN = f"{SLURMD_DROPIN_DIR}/clusterforge-gpus.conf"
APPLIED_DIR = "/var/lib/clusterforge/applied"

DAEMONS = ("munge", "chrony", "mariadb", "slurmdbd", "slurmctld", "slurmd", "sackd", "nfs-server", "nfs-ganesha")
PACKAGES = ("ca-certificates", "procps", "chrony", "munge", "slurmctld", "slurmd", "slurm-client", "slurmdbd",
            "sackd", "mariadb-server", "libpmix-dev", "libpmix2t64", "nfs-kernel-server", "nfs-ganesha",
            "nfs-ganesha-vfs", "nfs-common")


def slurm_file(name: str) -> str:
    return f"{SLURM_DIR}/{name}"


def applied_copy(name: str) -> str:
    """Where a host keeps the Slurm file its daemons last applied."""
    return f"{APPLIED_DIR}/slurm/{name}"


def spec(valid: ValidCluster) -> dict[str, tuple]:
    """What the host-state fact reads, the same on every host of the cluster (so it is read for all in parallel)."""
    nfs = valid.nfs
    mounts = nfs.mounts if nfs else ()
    slurm_names = [f.name for f in valid.slurm_files]
    paths = [
        APT_PROXY_FILE, ETC_HOSTS, MUNGE_DIR, MUNGE_KEY, SLURM_DIR, SLURM_KEY, SLURMDBD_CONF, SLURM_LOG_DIR,
        MARIADB_CNF, EXPORTS_DIR, EXPORTS, GANESHA_CONF, SLURMD_DROPIN_DIR, SLURMD_DROPIN,
        valid.slurm_conf.get("StateSaveLocation", ""), valid.slurm_conf.get("SlurmdSpoolDir", ""),
        *(slurm_file(n) for n in slurm_names),
        *(e.path for e in (nfs.exports if nfs else ())),
        *(m.mount_point for m in mounts), *(f"{SYSTEMD_DIR}/{unit_name(m.mount_point)}" for m in mounts),
    ]
    texts = [ETC_HOSTS, *(slurm_file(n) for n in slurm_names)]
    units = [f"{d}.service" for d in DAEMONS] + [unit_name(m.mount_point) for m in mounts]
    setup = valid.setup
    accounts = ["munge", "slurm", *{str(i) for u in (setup.munge_user, setup.slurm_user) for i in (u.uid, u.gid)}]
    return {"paths": tuple(dict.fromkeys(p for p in paths if p)), "texts": tuple(dict.fromkeys(texts)),
            "units": tuple(units), "packages": PACKAGES, "accounts": tuple(sorted(accounts)), "records": APPLIED_DIR}
