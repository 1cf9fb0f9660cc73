"""Rules for the pinned stack and NCCL: versions a package can have, a fabric manager of the driver's own version
where the profile has NVSwitches (and none where it has not), Slurm's packages of the cluster's release, NCCL told
only HCAs the profile has."""

from __future__ import annotations

import re

from ...health import gpu_names
from ...versions import JOB_ID_PATHS, below_patch
from ..hardware import Profile
from ..stack import DCGM_PACKAGES, GpuStack, Nccl, major, upstream
from .check import Check
from .containers import artifact

# Debian policy 5.6.12: [epoch:]upstream[-revision], the upstream part starting with a digit.
DEBIAN_VERSION = re.compile(r"^(\d+:)?\d[A-Za-z0-9.+~]*(-[A-Za-z0-9.+~]+)?$")
PACKAGE = re.compile(r"^[a-z0-9][a-z0-9.+-]+$")
HCA = re.compile(r"^[A-Za-z0-9_.-]+$")
NCCL_VARIABLE = re.compile(r"^NCCL_[A-Z0-9_]+$")
# What the Nccl fields render; extra= may not give them a second time.
NCCL_FIELDS = {"NCCL_IB_HCA": "ib_hca", "NCCL_SOCKET_IFNAME": "socket_ifname", "NCCL_IB_GID_INDEX": "ib_gid_index"}


# The first driver branch that supports each GPU family (gpu_names.family; NVIDIA's release notes: H100 from R525).
OLDEST_BRANCH = {"h100": 525}


def release_of(version: str) -> str:
    """Slurm's major.minor from a Debian package version: '22.05.8-4+deb12u3' -> '22.05'."""
    return ".".join(upstream(version).split(".")[:2])


def _gpu_stack(check: Check, where: str, stack: GpuStack) -> None:
    for field in ("driver", "fabric_manager", "persistenced", "dcgm", "dcgm_exporter", "container_toolkit"):
        version = getattr(stack, field)
        if version is not None and not DEBIAN_VERSION.match(version):
            check.add(f"{where}.{field}", f"{version!r} is not a Debian package version such as '550.163.01-1' "
                      "(`apt-cache policy PACKAGE` lists them)", stack, field)
    if DEBIAN_VERSION.match(stack.driver) and not stack.branch.isdigit():
        check.add(f"{where}.driver", f"{stack.driver!r}: a driver version starts with its branch, e.g. '550.'",
                  stack, "driver")
    fabric_manager = stack.fabric_manager
    if fabric_manager is not None and upstream(fabric_manager) != upstream(stack.driver):
        check.add(f"{where}.fabric_manager", f"{fabric_manager!r} is not the driver's version {stack.driver!r}: "
                  "nvidia-fabricmanager must match the driver to the patch level or the NVSwitch fabric never "
                  "starts and CUDA sees no usable GPU", stack, "fabric_manager")
    persistenced = stack.persistenced
    if persistenced is not None and DEBIAN_VERSION.match(persistenced) and upstream(persistenced) != upstream(
            stack.driver):
        check.add(f"{where}.persistenced", f"{persistenced!r} is not the driver's version {stack.driver!r}: "
                  "nvidia-persistenced is released with each driver and keeps that driver loaded",
                  stack, "persistenced")
    _dcgm(check, where, stack)
    for name in stack.driver_packages:
        if not PACKAGE.match(name):
            check.add(f"{where}.driver_packages", f"{name!r} is not a Debian package name", stack, "driver_packages")


def _dcgm(check: Check, where: str, stack: GpuStack) -> None:
    """DCGM 3 or 4; the exporter (4.x: it loads libdcgm.so.4) only beside DCGM 4, whose host engine it reads."""
    dcgm, exporter = stack.dcgm, stack.dcgm_exporter
    if dcgm is not None and DEBIAN_VERSION.match(dcgm) and major(dcgm) not in DCGM_PACKAGES:
        check.add(f"{where}.dcgm", f"{dcgm!r}: clusterforge installs DCGM 3 (datacenter-gpu-manager, '1:3.x') or "
                  "DCGM 4 (datacenter-gpu-manager-4-core, '1:4.x')", stack, "dcgm")
    if exporter is None or not DEBIAN_VERSION.match(exporter):
        return
    if major(exporter) != "4":
        check.add(f"{where}.dcgm_exporter", f"{exporter!r}: clusterforge installs DCGM exporter 4 "
                  "(datacenter-gpu-manager-exporter 4.x, NVIDIA's package for DCGM 4)", stack, "dcgm_exporter")
    elif dcgm is None:
        check.add(f"{where}.dcgm_exporter", "the exporter reads DCGM's host engine (nvidia-dcgm): give dcgm a "
                  "DCGM 4 version, the one NVIDIA releases with this exporter", stack, "dcgm_exporter")
    elif major(dcgm) == "3":
        check.add(f"{where}.dcgm_exporter", f"exporter {exporter!r} loads libdcgm.so.4, which DCGM {dcgm!r} does "
                  "not have: give dcgm DCGM 4's version (NVIDIA publishes no exporter package for DCGM 3)", stack,
                  "dcgm_exporter")


def _profile_stack(check: Check, index: int, profile: Profile) -> None:
    """The GPU stack a profile's nodes get fits the profile: it has GPUs, and a fabric manager where it has
    NVSwitches and only there."""
    own = profile.gpu_stack
    shared = check.cluster.stack.gpu if check.cluster.stack is not None else None
    where = f"profiles[{index}]"
    if own is not None and profile.gpus is None:
        check.add(f"{where}.gpu_stack", f"profile {profile.name} has no GPUs: a GPU stack has nothing to drive",
                  profile, "gpu_stack")
        return
    stack = own or (shared if profile.gpus is not None else None)
    if stack is None:
        return
    entry, stack_where = (profile, f"{where}.gpu_stack") if own is not None else (stack, "stack.gpu")
    oldest = OLDEST_BRANCH.get(gpu_names.family(profile.gpus.type) or "")
    if oldest is not None and stack.branch.isdigit() and int(stack.branch) < oldest:
        check.add(f"{stack_where}.driver", f"driver branch {stack.branch} is older than the first that drives "
                  f"profile {profile.name}'s {profile.gpus.type} (R{oldest}): the driver would not load on its GPUs",
                  entry, "gpu_stack" if own is not None else "driver")
    if profile.nvswitch and stack.fabric_manager is None:
        check.add(stack_where, f"profile {profile.name} has NVSwitches (nvswitch=True): its GPU stack needs "
                  f"fabric_manager={stack.driver!r}, the driver's version, or no GPU is usable",
                  entry, "gpu_stack" if own is not None else None)
    if not profile.nvswitch and stack.fabric_manager is not None:
        check.add(stack_where, f"profile {profile.name} has no NVSwitches: nvidia-fabricmanager would fail to "
                  "start on its nodes; give the profile nvswitch=True if it has them, or a GPU stack without "
                  "fabric_manager", entry, "gpu_stack" if own is not None else "fabric_manager")


def _nccl(check: Check, index: int, profile: Profile, nccl: Nccl, rail_hcas: tuple[str, ...]) -> None:
    where = f"profiles[{index}].nccl"
    if profile.gpus is None:
        check.add(where, f"profile {profile.name} has no GPUs: NCCL has nothing to configure", profile, "nccl")
        return
    known = tuple(dict.fromkeys((*profile.hcas, *rail_hcas)))
    for item in nccl.ib_hca:
        name, _, port = item.partition(":")
        if port and not (port.isdigit() and int(port) >= 1):
            check.add(f"{where}.ib_hca", f"{item!r}: the port after ':' is a number from 1", nccl, "ib_hca")
        if not known:
            check.add(f"{where}.ib_hca", f"profile {profile.name} declares no HCAs to check {item!r} against: "
                      "list its RDMA devices in Profile(hcas=...) (or name the rails' HCAs)", nccl, "ib_hca")
            break
        if name not in known:
            check.add(f"{where}.ib_hca", f"{name!r} is not one of profile {profile.name}'s HCAs "
                      f"({', '.join(known)})", nccl, "ib_hca")
    if len({i.partition(":")[0] for i in nccl.ib_hca}) != len(nccl.ib_hca):
        check.add(f"{where}.ib_hca", "an HCA is named twice", nccl, "ib_hca")
    if nccl.socket_ifname is not None and not re.match(r"^[\^=]{0,2}[A-Za-z0-9_.:,@-]+$", nccl.socket_ifname):
        check.add(f"{where}.socket_ifname", f"{nccl.socket_ifname!r} is not a list of interface names in NCCL's "
                  "grammar ('=ib0', 'ib', '^docker')", nccl, "socket_ifname")
    if nccl.ib_gid_index is not None and not 0 <= nccl.ib_gid_index <= 255:
        check.add(f"{where}.ib_gid_index", f"{nccl.ib_gid_index}: a GID index is 0 to 255", nccl, "ib_gid_index")
    for name, value in nccl.extra.items():
        if not NCCL_VARIABLE.match(name):
            check.add(f"{where}.extra[{name}]", f"{name!r} is not an NCCL variable (NCCL_ and capitals)", nccl,
                      "extra", name)
        elif name in NCCL_FIELDS:
            check.add(f"{where}.extra[{name}]", f"{name} is Nccl({NCCL_FIELDS[name]}=...)", nccl, "extra", name)
        if not value or any(c in value for c in "\n\r\"'`$\\ "):
            check.add(f"{where}.extra[{name}]", f"{value!r}: one word without quotes, $ or backslashes", nccl,
                      "extra", name)


def stack(check: Check) -> None:
    cluster = check.cluster
    found = cluster.stack
    if found is not None:
        if found.slurm is not None:
            if not DEBIAN_VERSION.match(found.slurm):
                check.add("stack.slurm", f"{found.slurm!r} is not a Debian package version such as "
                          "'22.05.8-4+deb12u3' (`apt-cache policy slurmd` lists them)", found, "slurm")
            elif release_of(found.slurm) != str(check.version):
                check.add("stack.slurm", f"{found.slurm!r} is Slurm {release_of(found.slurm)}, but the cluster "
                          f"runs {check.version} (slurm_version): every file clusterforge renders is made for "
                          "that release", found, "slurm")
            elif below_patch(found.slurm, JOB_ID_PATHS):
                check.add("stack.slurm", f"{found.slurm!r} is older than Slurm {JOB_ID_PATHS}, "
                          "the first 26.05 whose cgroup.conf takes CgroupJobIdPaths=yes, which the health check "
                          "needs to tell a job's GPU processes from strays: pin 26.05.2 or later", found, "slurm")
        if found.gpu is not None:
            _gpu_stack(check, "stack.gpu", found.gpu)
            if not check.lacks("profiles") and not any(p.gpus is not None and p.gpu_stack is None
                                                        for p in cluster.profiles):
                check.add("stack.gpu", "no profile uses it: every profile with GPUs has its own gpu_stack, or none "
                          "has GPUs", found, "gpu")
        if found.repository is not None:
            repo = found.repository
            if not repo.url.startswith(("https://", "http://")):
                check.add("stack.repository.url", f"{repo.url!r} is not an http(s) URL", repo, "url")
            if not repo.key.source.startswith(("https://", "http://", "file://", "/")):
                check.add("stack.repository.key.source", f"{repo.key.source!r} is a relative path: give an "
                          "absolute path or a URL", repo.key, "source")
            artifact(check, "stack.repository.key", repo.key, "/")
    rail_hcas = tuple(r.hca for r in cluster.fabric.rails if r.hca) if cluster.fabric is not None else ()
    for index, profile in enumerate(cluster.profiles):
        for name in profile.hcas:
            if not HCA.match(name):
                check.add(f"profiles[{index}].hcas", f"{name!r} is not an RDMA device name such as 'mlx5_0'",
                          profile, "hcas")
        if profile.gpu_stack is not None:
            _gpu_stack(check, f"profiles[{index}].gpu_stack", profile.gpu_stack)
        _profile_stack(check, index, profile)
        if profile.nccl is not None:
            _nccl(check, index, profile, profile.nccl, rail_hcas)
