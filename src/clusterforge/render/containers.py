"""The container files: Pyxis' plugstack line, Enroot's site settings and its shared directories, the AppArmor
profile Ubuntu 24.04 needs, NVIDIA's apt source. Pure text; the roles decide where each goes."""

from __future__ import annotations

from ..model import ContainerSetup, EnrootPaths, ValidCluster
from .text import fill, header

ENROOT_HOOKS = {  # the inventory's name -> the file Enroot ships in /usr/share/enroot/hooks.d
    "slurm-pmi": "50-slurm-pmi.sh",
    "slurm-pytorch": "50-slurm-pytorch.sh",
    "mig-config": "50-mig-config.sh",
    "sharp": "50-sharp.sh",
}
NVIDIA_KEYRING = "/usr/share/keyrings/clusterforge-nvidia-container.gpg"
# The AppArmor profile: its file in /etc/apparmor.d and the site's own additions in local/ are named alike.
APPARMOR_PROFILE = "enroot"
APPARMOR_ABI = "4.0"  # the first with the userns rule (Ubuntu 24.04)
ENROOT_NSENTER = "/usr/bin/enroot-nsenter"


def _setup(valid: ValidCluster) -> ContainerSetup:
    assert valid.containers is not None, "rendered only for a cluster with containers"
    return valid.containers


def _flag(value: bool) -> str:
    return "1" if value else "0"


def pyxis_conf(valid: ValidCluster) -> str:
    """plugstack.conf.d/pyxis.conf: Debian's plugstack.conf includes that directory. ``required``: a job asking for
    a container never runs without one."""
    setup = _setup(valid)
    pyxis = setup.spec.pyxis
    options = (f"runtime_path={pyxis.runtime_path}", f"execute_entrypoint={_flag(pyxis.execute_entrypoint)}",
               f"container_scope={pyxis.container_scope}", f"sbatch_support={_flag(pyxis.sbatch_support)}")
    return fill("lines.conf.j2", header=header(valid, f"Pyxis {pyxis.version}, built for Slurm {valid.version}"),
                lines=[" ".join(("required", setup.pyxis_library, *options))])


def _yes_no(value: bool) -> str:
    return "y" if value else "n"


def enroot_conf(valid: ValidCluster, paths: EnrootPaths) -> str:
    """/etc/enroot/enroot.conf.d/90-clusterforge.conf: read after the packaged enroot.conf, which stays as shipped."""
    enroot = _setup(valid).spec.enroot
    settings = [
        ("ENROOT_RUNTIME_PATH", paths.runtime),
        ("ENROOT_DATA_PATH", paths.data),
        ("ENROOT_CACHE_PATH", paths.cache),
        ("ENROOT_TEMP_PATH", paths.temp),
        ("ENROOT_SQUASH_OPTIONS", enroot.squash_options),
        ("ENROOT_MOUNT_HOME", _yes_no(enroot.mount_home)),
        ("ENROOT_RESTRICT_DEV", _yes_no(enroot.restrict_dev)),
        ("ENROOT_ROOTFS_WRITABLE", _yes_no(enroot.rootfs_writable)),
    ]
    return fill("lines.conf.j2", header=header(valid), lines=[f"{key} {value}" for key, value in settings])


def enroot_tmpfiles(valid: ValidCluster, paths: EnrootPaths) -> str:
    """tmpfiles.d: the directories every user's Enroot shares, made 1777 at every boot. Made private by the first
    user's job, they fail every other user's; missing, the job epilog fails and Slurm drains the node."""
    return fill("lines.conf.j2", header=header(valid), lines=[f"d {path} 1777 root root -" for path in paths.shared])


def enroot_apparmor(valid: ValidCluster) -> str:
    """/etc/apparmor.d/enroot: from Ubuntu 24.04, AppArmor denies an unprivileged user namespace to a program
    without a profile that allows it, and enroot-nsenter is the one that makes it."""
    return fill("enroot.apparmor.j2", header=header(valid), abi=APPARMOR_ABI, program=ENROOT_NSENTER,
                profile=APPARMOR_PROFILE)


def nvidia_sources(valid: ValidCluster) -> str:
    repo = _setup(valid).spec.nvidia_repository
    assert repo is not None
    line = " ".join(("deb", f"[signed-by={NVIDIA_KEYRING}]", repo.url, repo.suite, *repo.components))
    return fill("lines.conf.j2", header=header(valid), lines=[line])
