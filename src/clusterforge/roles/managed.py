"""What the deploy manages on a host: where its files, units and packages live, and which packages each host gets.
The one list the roles and the host-state fact share, so the state read before the run covers exactly what the roles
manage."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources

from ..exporter import PACKAGE as EXPORTER_PACKAGE
from ..exporter import PROGRAM_FILES
from ..health.expect import EXPECTATIONS_PATH, STATE_DIR
from ..model import ValidCluster
from ..model.hosts import SLURM_GROUPS
from ..model.stack import parts
from ..model.settings import (
    ALERTMANAGER_CONFIG,
    ALERTMANAGER_DEFAULTS,
    JWT_KEY,
    PROMETHEUS_CONFIG,
    PROMETHEUS_DEFAULTS,
    PROMETHEUS_RULES,
    SLURM_LOG_DIR,
    TEXTFILE_DIR,
)
from ..render import slurm_exporter, slurmrestd
from ..render.containers import APPARMOR_PROFILE, ENROOT_HOOKS, NVIDIA_KEYRING
from ..render.health import LAUNCHERS, LIB_DIR, PACKAGE
from ..render.nfs import unit_name
from ..render.stack import DCGM_EXPORTER_DROPIN, DCGM_EXPORTER_DROPIN_DIR, SLURM_PACKAGES
from ..engine.ops import APPLIED_DIR
from ..versions import v

APT_PROXY_FILE = "/etc/apt/apt.conf.d/01clusterforge-proxy"
ETC_HOSTS = "/etc/hosts"
MUNGE_DIR = "/etc/munge"
MUNGE_KEY = f"{MUNGE_DIR}/munge.key"
SLURM_DIR = "/etc/slurm"
SLURM_KEY = f"{SLURM_DIR}/slurm.key"
SLURMDBD_CONF = f"{SLURM_DIR}/slurmdbd.conf"
SLURMRESTD_DROPIN_DIR = slurmrestd.DROPIN_DIR
SLURMRESTD_DROPIN = slurmrestd.DROPIN
MARIADB_CNF = "/etc/mysql/mariadb.conf.d/60-clusterforge-slurmdbd.cnf"
EXPORTS_DIR = "/etc/exports.d"
EXPORTS = f"{EXPORTS_DIR}/clusterforge.exports"
GANESHA_CONF = "/etc/ganesha/ganesha.conf"
SYSTEMD_DIR = "/etc/systemd/system"
SLURMD_DROPIN_DIR = f"{SYSTEMD_DIR}/slurmd.service.d"
SLURMD_DROPIN = f"{SLURMD_DROPIN_DIR}/clusterforge-gpus.conf"
# Containers: artifacts uploaded to a host, what the controller builds from them, Enroot's site files.
ARTIFACT_DIR = "/var/cache/clusterforge/artifacts"
BUILD_DIR = "/var/cache/clusterforge/build"
ENROOT_CONF = "/etc/enroot/enroot.conf.d/90-clusterforge.conf"
ENROOT_TMPFILES = "/etc/tmpfiles.d/clusterforge-enroot.conf"
ENROOT_HOOKS_DIR = "/etc/enroot/hooks.d"
ENROOT_APPARMOR = f"/etc/apparmor.d/{APPARMOR_PROFILE}"
NVIDIA_SOURCES = "/etc/apt/sources.list.d/clusterforge-nvidia-container.list"
# The pinned stack: what apt keeps, what unattended-upgrades leaves, NVIDIA's repository (its key armored or not:
# apt reads a signed-by file by its extension), NCCL's settings; the packages clusterforge held, as a record.
PREFERENCES = "/etc/apt/preferences.d/clusterforge"
UNATTENDED = "/etc/apt/apt.conf.d/51clusterforge-held"
STACK_SOURCES = "/etc/apt/sources.list.d/clusterforge-nvidia.list"
STACK_KEYRINGS = {False: "/usr/share/keyrings/clusterforge-nvidia.gpg", True: "/usr/share/keyrings/clusterforge-nvidia.asc"}
NCCL_CONF = "/etc/nccl.conf"
ENROOT_ENVIRON_DIR = "/etc/enroot/environ.d"
NCCL_ENVIRON = f"{ENROOT_ENVIRON_DIR}/50-clusterforge-nccl.env"
HELD_RECORD = "held-packages"
STACK_PATHS = (PREFERENCES, UNATTENDED, STACK_SOURCES, *STACK_KEYRINGS.values(), NCCL_CONF, ENROOT_ENVIRON_DIR,
               NCCL_ENVIRON, DCGM_EXPORTER_DROPIN_DIR, DCGM_EXPORTER_DROPIN)

# The node health check: its package (the modules of clusterforge/health, shipped as they are), its launcher, the
# node's expectations, its state.
HEALTH_LIB = f"{LIB_DIR}/{PACKAGE}"
EXPORTER_LIB = f"{LIB_DIR}/{EXPORTER_PACKAGE}"
HEALTH_MODULES = tuple(sorted(f.name for f in resources.files("clusterforge.health").iterdir()
                              if f.name.endswith(".py")))
HEALTH_ETC = EXPECTATIONS_PATH.rsplit("/", 1)[0]
HEALTH_PATHS = (LIB_DIR, HEALTH_LIB, *(f"{HEALTH_LIB}/{m}" for m in HEALTH_MODULES), *LAUNCHERS, HEALTH_ETC,
                EXPECTATIONS_PATH, STATE_DIR)

# What building Pyxis needs (a C compiler, make, Slurm's headers: not build-essential, whose C++ compiler and Debian
# packaging tools it never uses), and what Enroot's `make deb` needs: each alone, since a kept build of the other
# (roles/build_cache.py), or Enroot given as a package, may spare it.
PYXIS_BUILD = ("gcc", "make", "libc6-dev", "libslurm-dev")
ENROOT_BUILD = ("build-essential", "debhelper", "dh-make", "devscripts", "dh-apparmor", "autotools-dev", "fakeroot")
BUILD_PACKAGES = tuple(dict.fromkeys(PYXIS_BUILD + ENROOT_BUILD))

# The unit each daemon package brings.
DAEMON_UNITS = {"munge": "munge.service", "chrony": "chrony.service", "mariadb-server": "mariadb.service",
                "slurmdbd": "slurmdbd.service", "slurmctld": "slurmctld.service", "slurmd": "slurmd.service",
                "sackd": "sackd.service", "nfs-kernel-server": "nfs-server.service",
                "nfs-ganesha": "nfs-ganesha.service", "prometheus-node-exporter": "prometheus-node-exporter.service",
                "prometheus": "prometheus.service", "prometheus-alertmanager": "prometheus-alertmanager.service",
                "slurmrestd": slurmrestd.UNIT}
MONITORING_FILES = (PROMETHEUS_CONFIG, PROMETHEUS_RULES, PROMETHEUS_DEFAULTS, ALERTMANAGER_CONFIG,
                    ALERTMANAGER_DEFAULTS)
# With Monitoring: node exporter everywhere, the Slurm exporter's Python on the controller, the rest on its host.
MONITORING_PACKAGES = {"*": ("prometheus-node-exporter",), "controller": ("python3", "python3-prometheus-client"),
                       "monitoring": ("prometheus", "prometheus-alertmanager")}
# With Rest: auth/jwt where the key is loaded (slurmctld, slurmdbd), and where slurmrestd authenticates with tokens.
JWT_PLUGIN = "slurm-wlm-jwt-plugin"
REST_PACKAGES = {"controller": (JWT_PLUGIN,), "database": (JWT_PLUGIN,), "rest": ("slurmrestd", JWT_PLUGIN)}
PACKAGES = ("ca-certificates", "procps", "chrony", "munge", "slurmctld", "slurmd", "slurm-client", "slurmdbd",
            "sackd", "mariadb-server", "libpmix2", "libpmix2t64", "nfs-kernel-server", "nfs-ganesha",
            "nfs-ganesha-vfs", "nfs-common", "enroot", "libnvidia-container-tools", "python3",
            "python3-prometheus-client", "prometheus-node-exporter", "prometheus", "prometheus-alertmanager",
            *BUILD_PACKAGES,
            *SLURM_PACKAGES)


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


# The multiarch directory of each architecture Debian 12 and Ubuntu release Slurm for, by dpkg architecture: the
# host state reads the link at each (it is read before the host's architecture is known).
MULTIARCH = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu", "armel": "arm-linux-gnueabi",
             "armhf": "arm-linux-gnueabihf", "i386": "i386-linux-gnu", "mips64el": "mips64el-linux-gnuabi64",
             "mipsel": "mipsel-linux-gnu", "ppc64el": "powerpc64le-linux-gnu", "riscv64": "riscv64-linux-gnu",
             "s390x": "s390x-linux-gnu"}
PMIX_LINKS = {arch: f"/usr/lib/{triplet}/pmix2/lib/libpmix.so" for arch, triplet in MULTIARCH.items()}


def packages_for(valid: ValidCluster, groups: tuple[str, ...]) -> tuple[str, ...]:
    """The Debian packages a host in ``groups`` gets (one table, one install per host)."""
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
    if valid.health is not None and "compute" in groups:
        wanted.append("python3")  # the health check runs on it (its standard library; python3-minimal lacks json)
    nfs = valid.nfs
    if nfs is not None and "nfs" in groups:
        wanted += ["nfs-ganesha", "nfs-ganesha-vfs"] if nfs.software == "ganesha" else ["nfs-kernel-server"]
    if nfs is not None and any(set(m.on) & set(groups) for m in nfs.mounts):
        wanted.append("nfs-common")
    if valid.monitoring is not None:
        for group in ("*", *groups):
            wanted += MONITORING_PACKAGES.get(group, ())
    if valid.rest is not None:
        for group in groups:
            wanted += REST_PACKAGES.get(group, ())
    return tuple(dict.fromkeys(wanted))


def stack_packages(valid: ValidCluster) -> tuple[str, ...]:
    """Every package of every GPU stack of the cluster: a host's state says which it has, at which version."""
    if valid.stack is None:
        return ()
    return tuple(dict.fromkeys(p for stack in valid.stack.gpu.values() for part in parts(stack)
                               for p in part.packages))


def stack_units(valid: ValidCluster, groups: tuple[str, ...]) -> tuple[str, ...]:
    """The units of the GPU stacks, on compute hosts (a host's profile is not known here, only its groups)."""
    if valid.stack is None or "compute" not in groups:
        return ()
    return tuple(dict.fromkeys(part.unit for stack in valid.stack.gpu.values() for part in parts(stack)
                               if part.unit))


def slurm_file(name: str) -> str:
    return f"{SLURM_DIR}/{name}"


def applied_copy(name: str) -> str:
    """Where a host keeps the Slurm file its daemons last applied (one directory: the state reads it whole)."""
    return f"{APPLIED_DIR}/slurm/{name.replace('/', '--')}"


def artifact_path(filename: str) -> str:
    return f"{ARTIFACT_DIR}/{filename}"


def enroot_package(valid: ValidCluster) -> str:
    """Where a compute host keeps the Enroot package it installs (and the controller the one it built)."""
    assert valid.containers is not None
    enroot = valid.containers.spec.enroot
    artifact = enroot.package or enroot.source
    assert artifact is not None
    return artifact_path(f"enroot_{enroot.version}_{artifact.sha256[:12]}.deb")


def container_paths(valid: ValidCluster) -> list[str]:
    setup = valid.containers
    if setup is None:
        return []
    spec_ = setup.spec
    sources = [a for a in (spec_.enroot.source, spec_.pyxis.source) if a is not None]
    return [ARTIFACT_DIR, setup.pyxis_library, enroot_package(valid), *(artifact_path(a.filename) for a in sources),
            ENROOT_CONF, ENROOT_TMPFILES, ENROOT_APPARMOR, NVIDIA_SOURCES, NVIDIA_KEYRING,
            *(f"{ENROOT_HOOKS_DIR}/{name}" for name in ENROOT_HOOKS.values()),
            *sorted({d for paths in setup.paths.values() for d in paths.shared})]


def config_texts(valid: ValidCluster) -> list[str]:
    """The text files the deploy writes that hold no secret (the keys and slurmdbd.conf do), beyond
    those every run reads: `clusterforge plan` shows their diffs."""
    mounts = valid.nfs.mounts if valid.nfs else ()
    texts = [APT_PROXY_FILE, MARIADB_CNF, EXPORTS, GANESHA_CONF, SLURMD_DROPIN, SLURMRESTD_DROPIN, EXPECTATIONS_PATH,
             *LAUNCHERS,
             PREFERENCES, UNATTENDED, STACK_SOURCES, NCCL_ENVIRON, DCGM_EXPORTER_DROPIN,
             *(f"{SYSTEMD_DIR}/{unit_name(m.mount_point)}" for m in mounts)]
    if valid.containers is not None:
        texts += [ENROOT_CONF, ENROOT_TMPFILES, ENROOT_APPARMOR, NVIDIA_SOURCES,
                  *(f"{ENROOT_HOOKS_DIR}/{name}" for name in ENROOT_HOOKS.values())]
    return texts


def monitoring_paths(valid: ValidCluster) -> tuple[str, ...]:
    """What monitoring puts on its hosts (roles/monitoring.py), where the inventory has it."""
    if valid.monitoring is None:
        return ()
    exporter = [f"{EXPORTER_LIB}/{name}" for name in PROGRAM_FILES]
    return (TEXTFILE_DIR, *sorted({p.rsplit("/", 1)[0] for p in exporter}), *exporter, slurm_exporter.LAUNCHER,
            slurm_exporter.UNIT_PATH, *MONITORING_FILES)


def spec(valid: ValidCluster, groups: tuple[str, ...], plan: bool = False) -> dict[str, tuple]:
    """What the host-state fact reads on a host in ``groups``; for a plan, also the text of every file whose diff it
    shows. Every managed path on every host (a file may have to go where it no longer
    belongs), but only the units of the daemons the host runs: systemd searches its unit directories for each unit
    asked about that it has not loaded, on every read."""
    nfs = valid.nfs
    mounts = nfs.mounts if nfs else ()
    slurm_names = [f.name for f in valid.slurm_files]
    paths = [
        APT_PROXY_FILE, ETC_HOSTS, MUNGE_DIR, MUNGE_KEY, SLURM_DIR, SLURM_KEY, SLURMDBD_CONF, SLURM_LOG_DIR,
        MARIADB_CNF, EXPORTS_DIR, EXPORTS, GANESHA_CONF, SLURMD_DROPIN_DIR, SLURMD_DROPIN, JWT_KEY,
        SLURMRESTD_DROPIN_DIR, SLURMRESTD_DROPIN,
        valid.slurm_conf.get("StateSaveLocation", ""), valid.slurm_conf.get("SlurmdSpoolDir", ""),
        *(slurm_file(n) for n in slurm_names), *(slurm_file(n.rsplit("/", 1)[0]) for n in slurm_names if "/" in n),
        *(e.path for e in (nfs.exports if nfs else ())),
        *(m.mount_point for m in mounts), *(f"{SYSTEMD_DIR}/{unit_name(m.mount_point)}" for m in mounts),
        *container_paths(valid), *HEALTH_PATHS, *STACK_PATHS, *monitoring_paths(valid),
        *(PMIX_LINKS.values() if "libpmix2" in pmix_library(valid) else ()),
    ]
    # /etc/nccl.conf always: one clusterforge did not write is never removed.
    texts = [ETC_HOSTS, NCCL_CONF, *(slurm_file(n) for n in slurm_names), *(config_texts(valid) if plan else ())]
    units = ["munge.service",  # on every host: where auth/slurm replaced munge, it is stopped wherever it runs
             *(DAEMON_UNITS[p] for p in packages_for(valid, groups) if p in DAEMON_UNITS),
             *(unit_name(m.mount_point) for m in mounts if set(m.on) & set(groups)),
             *stack_units(valid, groups),
             *((slurm_exporter.UNIT,) if valid.monitoring is not None and "controller" in groups else ())]
    setup = valid.setup
    users = {"munge": setup.munge_user, "slurm": setup.slurm_user}
    if valid.rest is not None and "rest" in groups:
        users[slurmrestd.USER] = setup.slurmrestd_user
    accounts = [*users, *{str(i) for u in users.values() for i in (u.uid, u.gid)}]
    pinned = valid.stack.slurm if valid.stack is not None and SLURM_GROUPS & set(groups) else None
    return {"paths": tuple(dict.fromkeys(p for p in paths if p)), "texts": tuple(dict.fromkeys(texts)),
            "units": tuple(dict.fromkeys(units)), "packages": PACKAGES + stack_packages(valid),
            "accounts": tuple(sorted(accounts)), "records": APPLIED_DIR, "slurm": pinned or ""}
