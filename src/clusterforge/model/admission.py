"""Admission: the tests a node of a profile must pass before it takes users' jobs (the admission gate) and that
`clusterforge accept` runs on demand, their floors, where their programs come from, and the time they may take.

Floors default per GPU type from public figures for 8 × H100/H200 SXM with 8 × NDR 400G (the design page's table,
../shared/reference/acceptance.md §1): a GPU type without defaults must give every floor its tests need.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..admission.tests import TESTS
from ..health import gpu_names
from .base import Entry

TestName = Literal["dcgm", "nvbandwidth", "allreduce", "ib_write_bw", "allreduce_multi"]
assert set(TestName.__args__) == set(TESTS)  # type: ignore[attr-defined]  # one list of tests, here and there


class Floors(Entry):
    """The lowest number each test accepts; None: the GPU type's default (DEFAULT_FLOORS)."""

    allreduce: float | None = Field(default=None, gt=0, description="GB/s: all_reduce_perf's bus bandwidth at "
                                    "16 GiB on one node, all its GPUs (H100 460, H200 431: Azure's floors)")
    allreduce_multi: float | None = Field(default=None, gt=0, description="GB/s: all_reduce_perf's bus bandwidth "
                                          "of its largest row across nodes with NCCL_ALGO=Ring, bound by the NICs "
                                          "(350 for 8 × NDR 400G)")
    ib_write_bw: float | None = Field(default=None, gt=0, description="Gb/s: ib_write_bw's BW average per HCA, "
                                      "server and client on the node (380 for NDR 400G)")
    host_to_device: float | None = Field(default=None, gt=0, description="GB/s: every cell of nvbandwidth's "
                                         "host_to_device_memcpy_ce and device_to_host_memcpy_ce (48: PCIe Gen5 x16)")
    device_to_device: float | None = Field(default=None, gt=0, description="GB/s: every GPU pair of nvbandwidth's "
                                           "device_to_device_memcpy_read_ce (335 over NVLink 4)")


# Per GPU family (health/gpu_names.py's family of Gpus.type): the public figures of the design's table.
DEFAULT_FLOORS: dict[str, Floors] = {
    "h100": Floors(allreduce=460, allreduce_multi=350, ib_write_bw=380, host_to_device=48, device_to_device=335),
    "h200": Floors(allreduce=431, allreduce_multi=350, ib_write_bw=380, host_to_device=48, device_to_device=335),
}
# The floors each test is held to.
FLOORS_OF: dict[str, tuple[str, ...]] = {"dcgm": (), "nvbandwidth": ("host_to_device", "device_to_device"),
                                         "allreduce": ("allreduce",), "ib_write_bw": ("ib_write_bw",),
                                         "allreduce_multi": ("allreduce_multi",)}


def default_floors(gpu_type: str) -> Floors | None:
    """The defaults of a GPU type, or None: clusterforge knows no figure for it."""
    return DEFAULT_FLOORS.get(gpu_names.family(gpu_type) or "")


class Programs(Entry):
    """Where the test programs come from; clusterforge ships no NVIDIA program. Exactly one of the two."""

    image: str | None = Field(default=None, description="a container image holding all_reduce_perf (built with "
                              "MPI), nvbandwidth, ib_write_bw and dcgmi, run through Pyxis (srun "
                              "--container-image): needs the cluster's containers")
    bin_dir: str | None = Field(default=None, description="an absolute directory on every node of the profile "
                                "holding all_reduce_perf, nvbandwidth, ib_write_bw and dcgmi")


class Admission(Entry):
    """What a node of this profile must pass before it takes users' jobs: a new node, or one back from a hardware
    drain, is held in a reservation of its own until every test passes (the admission gate); `clusterforge accept`
    runs the same tests on demand."""

    programs: Programs = Field(description="where the test programs come from: Programs(image=...) or "
                                           "Programs(bin_dir=...)")
    tests: tuple[TestName, ...] = Field(default=TESTS, description="which tests run: any of " + ", ".join(TESTS)
                                        + "; allreduce_multi runs in `clusterforge accept` only (across nodes)")
    dcgm_level: int = Field(default=2, ge=1, le=4, description="dcgmi diag -r LEVEL: 1 seconds, 2 about 2 "
                            "minutes, 3 about 15, 4 longer (burn-in)")
    floors: Floors = Field(default_factory=Floors, description="the lowest number each test accepts, over the "
                           "GPU type's defaults (h100, h200)")
    hcas: tuple[str, ...] = Field(default=(), description="the HCAs ib_write_bw tests, as `ibstat` names them; "
                                  "default: those NCCL uses (Profile.nccl.ib_hca), else every HCA the profile "
                                  "declares. Each must be one of the profile's HCAs")
    budget: int = Field(default=1800, gt=0, description="seconds the tests of one node may take in all; a test "
                        "still running at its share is cut and fails")
    falling_percent: float = Field(default=10, gt=0, lt=100, description="percent below its baseline (the node's "
                                   "first passing result of a test) or the median of its profile's nodes (their "
                                   "last results) at which a node's last result is reported: by `clusterforge "
                                   "check`, and by the alert NodeTestFalling; a node falling behind before it fails "
                                   "its floor (a cable that degrades, a GPU that throttles)")
    ib_write_bw_cuda: bool = Field(default=True, description="ib_write_bw reads GPU memory (--use_cuda, GPUDirect "
                                   "RDMA) as its floor assumes; needs a CUDA-enabled perftest, not Debian's")
