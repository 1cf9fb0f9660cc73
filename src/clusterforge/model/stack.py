"""The software stack a node runs whose parts must agree with each other: the NVIDIA driver and what must match it
(fabric manager, persistenced), DCGM, the container toolkit, and Slurm's own packages. Each is pinned to an exact
version and held, so that no `apt-get upgrade` or unattended upgrade moves one of them unplanned; and NCCL's
settings, which follow from the nodes' fabric."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from .base import Entry
from .containers import AptRepository


def upstream(version: str) -> str:
    """A Debian version without its epoch and revision: '1:550.163.01-1' -> '550.163.01'."""
    plain = version.split(":", 1)[-1]
    return plain.rsplit("-", 1)[0] if "-" in plain else plain


def major(version: str) -> str:
    """A package version's first number: '1:4.5.2-1' -> '4'."""
    return upstream(version).split(".", 1)[0]


class GpuStack(Entry):
    """NVIDIA's packages on the nodes of a GPU profile, each at an exact Debian version (as `apt-cache policy`
    prints it). A part left None is not installed by clusterforge (nor pinned or held)."""

    driver: str = Field(description="the driver's exact package version, e.g. '550.163.01-1'; its first number is "
                                    "the branch the package names carry (cuda-drivers-550)")
    driver_packages: tuple[str, ...] = Field(
        default=(), description="the driver's packages to install, pin and hold at `driver`; empty: "
                                "cuda-drivers-<branch>, NVIDIA's metapackage")
    fabric_manager: str | None = Field(
        default=None, description="nvidia-fabricmanager-<branch>'s version: the driver's to the patch level (the "
                                  "fabric does not start otherwise); required where the profile has NVSwitches, "
                                  "refused where it has none")
    persistenced: str | None = Field(default=None, description="nvidia-persistenced's version, which keeps the "
                                                               "driver loaded between jobs")
    dcgm: str | None = Field(default=None, description="DCGM's version: DCGM 3's datacenter-gpu-manager, e.g. "
                                                       "'1:3.3.9', or DCGM 4's datacenter-gpu-manager-4-core and "
                                                       "-4-proprietary, e.g. '1:4.5.2-1'")
    dcgm_exporter: str | None = Field(
        default=None, description="datacenter-gpu-manager-exporter's version, e.g. '4.8.2-1' (exporter 4, which "
                                  "needs DCGM 4: keep the pair NVIDIA releases together, its tag "
                                  "<dcgm>-<exporter>); it reads the node's nvidia-dcgm and serves GPU metrics on "
                                  "port 9400, which Prometheus scrapes where the inventory has Monitoring")
    container_toolkit: str | None = Field(
        default=None, description="the version of nvidia-container-toolkit, libnvidia-container-tools and "
                                  "libnvidia-container1 (Enroot's GPU hook calls nvidia-container-cli)")

    @property
    def branch(self) -> str:
        return upstream(self.driver).split(".", 1)[0]


class Stack(Entry):
    """What is pinned and held: Slurm's packages on every host, and the GPU stack of every GPU profile (a profile
    may declare its own)."""

    slurm: str | None = Field(
        default=None, description="the exact Debian version of Slurm's packages on every host, e.g. "
                                  "'22.05.8-4+deb12u3', of the cluster's slurm_version; None: the version each host "
                                  "has (Slurm's packages are held either way)")
    gpu: GpuStack | None = Field(default=None, description="the GPU stack of every GPU profile without its own")
    repository: AptRepository | None = Field(
        default=None, description="NVIDIA's apt repository the GPU stack comes from (CUDA's, "
                                  "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64), its "
                                  "key pinned like an artifact (an absolute path or a URL); None: the hosts' own "
                                  "repositories (a site mirror)")


# The packages and units of each part of a GPU stack; the driver's packages carry its branch.
FABRIC_MANAGER_UNIT = "nvidia-fabricmanager.service"
PERSISTENCED_UNIT = "nvidia-persistenced.service"
DCGM_UNIT = "nvidia-dcgm.service"
DCGM_EXPORTER_UNIT = "nvidia-dcgm-exporter.service"
# DCGM 4 split DCGM 3's one package: the host engine and libdcgm.so.4 in -core, the profiling modules in -proprietary.
DCGM_PACKAGES = {"3": ("datacenter-gpu-manager",),
                 "4": ("datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-proprietary")}
DCGM_EXPORTER = "datacenter-gpu-manager-exporter"
CONTAINER_TOOLKIT = ("nvidia-container-toolkit", "libnvidia-container-tools", "libnvidia-container1")


# What apt pins at a part's version (apt_preferences(5) Package: field): the packages installed, and those their
# exact-version dependencies pull in (nvidia-container-toolkit-base; the driver's libraries, unnamed and many: every
# package of the driver's exact version, which only NVIDIA's driver packages have). Pinning a metapackage alone fails
# the install where a newer dependency exists (seen with apt 2.6).
EVERY_PACKAGE = "/.*/"


@dataclass(frozen=True, slots=True)
class Part:
    """One part of a GPU stack: its packages at one version, what apt pins at that version, and the unit it runs
    (if any)."""

    name: str
    packages: tuple[str, ...]
    version: str
    unit: str | None = None
    pinned: tuple[str, ...] = ()  # Package: patterns; the packages themselves where empty

    @property
    def pins(self) -> tuple[str, ...]:
        return self.pinned or self.packages


def parts(stack: GpuStack) -> tuple[Part, ...]:
    """The parts a GPU stack declares, in the order their units start: the driver, persistenced, the fabric manager
    (which needs the driver loaded), DCGM (which watches the fabric), its exporter (which reads DCGM), the container
    toolkit."""
    found = [Part("driver", stack.driver_packages or (f"cuda-drivers-{stack.branch}",), stack.driver,
                  pinned=(EVERY_PACKAGE,))]
    if stack.persistenced is not None:
        found.append(Part("persistenced", ("nvidia-persistenced",), stack.persistenced, PERSISTENCED_UNIT))
    if stack.fabric_manager is not None:
        found.append(Part("fabric manager", (f"nvidia-fabricmanager-{stack.branch}",), stack.fabric_manager,
                          FABRIC_MANAGER_UNIT))
    if stack.dcgm is not None:
        found.append(Part("DCGM", DCGM_PACKAGES.get(major(stack.dcgm), DCGM_PACKAGES["3"]), stack.dcgm, DCGM_UNIT,
                          pinned=("datacenter-gpu-manager*",) if major(stack.dcgm) == "3"
                          else ("datacenter-gpu-manager-4-*",)))
    if stack.dcgm_exporter is not None:
        found.append(Part("DCGM exporter", (DCGM_EXPORTER,), stack.dcgm_exporter, DCGM_EXPORTER_UNIT))
    if stack.container_toolkit is not None:
        found.append(Part("container toolkit", CONTAINER_TOOLKIT, stack.container_toolkit,
                          pinned=("nvidia-container-toolkit*", "libnvidia-container*")))
    return tuple(found)


class Nccl(Entry):
    """NCCL's settings for the jobs on a profile's nodes, written to /etc/nccl.conf (which NCCL reads) and into
    every Enroot container's environment. A job's own environment still wins."""

    ib_hca: tuple[str, ...] = Field(
        default=(), description="the HCAs that carry GPU traffic, as `ibstat` names them, each with its port: "
                                "('mlx5_0:1', 'mlx5_3:1'); rendered as an exact list (NCCL_IB_HCA==...), never a "
                                "prefix that would also match mlx5_10. Each must be one of the profile's HCAs")
    socket_ifname: str | None = Field(default=None, description="NCCL_SOCKET_IFNAME, in NCCL's own grammar: "
                                                                "'=ib0' exact, 'ib' a prefix, '^docker' excluded")
    ib_gid_index: int | None = Field(default=None, description="NCCL_IB_GID_INDEX, RoCE only (3 for RoCEv2 over "
                                                               "IPv4); None on native InfiniBand")
    extra: dict[str, str] = Field(default_factory=dict, description="other NCCL_* variables, as NCCL spells them")
