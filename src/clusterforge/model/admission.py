"""Admission: the tests a node of a profile must pass before it takes users' jobs (the admission gate) and that
`clusterforge accept` runs on demand, their floors, where their programs come from, and the time they may take.

Floors default per GPU type from public figures for 8 × H100/H200 SXM with 8 × NDR 400G (the design page's table,
../shared/reference/acceptance.md §1): a GPU type without defaults must give every floor its tests need.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, create_model

from ..admission import tests
from ..health import gpu_names
from .base import Entry

# The tests' names, their floors and the defaults of each are the registry's (admission/tests/): a test added there
# is a name the inventory may give and, with its floors, fields of Floors, without a line here.
TestName = Literal[tests.TESTS]  # type: ignore[valid-type]

Floors = create_model(
    "Floors", __base__=Entry, __module__=__name__,
    __doc__="The lowest number each test accepts; None: the GPU type's default (DEFAULT_FLOORS).",
    **{floor.key: (float | None, Field(default=None, gt=0, description=floor.description))
       for floor in tests.FLOORS})  # type: ignore[call-overload]

# Per GPU family (health/gpu_names.py's family of Gpus.type): the public figures of the design's table.
DEFAULT_FLOORS: dict[str, Entry] = {
    family: Floors(**{floor.key: floor.defaults[family] for floor in tests.FLOORS if family in floor.defaults})
    for family in dict.fromkeys(family for floor in tests.FLOORS for family in floor.defaults)}


def default_floors(gpu_type: str) -> Entry | None:
    """The defaults of a GPU type's family, or None: clusterforge knows no figure for it."""
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
    tests: tuple[TestName, ...] = Field(default=tests.DEFAULT, description="which tests run: any of "
                                        + ", ".join(tests.TESTS) + "; allreduce_multi runs in `clusterforge "
                                        "accept` only (across nodes)" + "".join(
                                            f"; {name} only where named" for name in tests.TESTS
                                            if name not in tests.DEFAULT))
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
