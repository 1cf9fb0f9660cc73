"""The acceptance tests: one module each (``dcgm.py``, ``allreduce.py``, ...), each holding one ``AcceptanceTest``
(base.py: its name, program, unit, floors with their defaults per GPU family, expected time, arguments, how its
script runs it and how its output is judged), and this registry, ``REGISTRY``, which lists them in the order a
profile runs them. What the rest reads is derived from it here: each test's entry in admission.json (``entries``),
the Slurm batch script that runs it (``job_script``), the judging of its output into Results (``judge``), and the
names and floors the inventory's model accepts (model/admission.py: ``TestName``, ``Floors``, ``DEFAULT_FLOORS``).

Adding a test is one module here and one line in ``REGISTRY`` (docs/development/architecture.md, "A new acceptance
test"); ``dcgm_quick`` was added so.

Where this lives, whole: the gate (gate/) runs ``job_script`` and ``judge`` on the controller, shipped alone with the
admission modules it imports (render/programs.py follows these imports), so the tests' code must stay standard
library only (the contract admission-stdlib-only). The model sits above admission in the layers (pyproject's
contracts: model > ... > admission), so it may read the registry directly: a test's description (name, floors,
expected time) and its code are one object, not two tables to keep in step, and nothing of pydantic comes down.

One entry of admission.json describes one test on one node (or, for allreduce_multi, on the nodes it is given):

    {"name": "allreduce", "argv": ["/opt/nccl-tests/all_reduce_perf", "-b", "16G", "-e", "16G", "-g", "8"],
     "image": null, "gpus": 8, "hcas": [], "floors": {"allreduce": 460.0}, "unit": "GB/s", "timeout": 360}

allreduce_multi's entry also holds the node's CPUs ("cpus": 224), by which its script places one rank per GPU.

The script runs the tool through srun, so that it gets the allocation, cgroup and GPU binding users' jobs get (and
Pyxis' --container-image where the programs come from an image), under ``timeout`` so that a hung run ends inside
its share of the node's budget; its exit status is the tool's, or 124 where it was cut. Judging is strict: output a
parser cannot read fails the test ("unreadable output: ..."), and so does an exit status the tool gives a failure,
whatever the output says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...slurm import jobs
from ..parse import ParseError
from ..verdict import Result
from . import allreduce, allreduce_multi, dcgm, dcgm_quick, ib_write_bw, nvbandwidth
from .base import CUT, AcceptanceTest, Floor, Setup, exit_meaning
from .ib_write_bw import MARK

__all__ = ["CUT", "DEFAULT", "DEFAULT_SINGLE_NODE", "FLOORS", "FLOORS_OF", "MARK", "REGISTRY", "SINGLE_NODE",
           "SLURM_MARGIN_S", "TESTS", "AcceptanceTest", "Floor", "entries", "expected_seconds", "job_script", "judge", "slurm_minutes"]

# The tests, in the order a profile runs them.
REGISTRY: dict[str, AcceptanceTest] = {test.name: test for test in (
    dcgm.TEST,
    nvbandwidth.TEST,
    allreduce.TEST,
    ib_write_bw.TEST,
    allreduce_multi.TEST,
    dcgm_quick.TEST,
)}

TESTS = tuple(REGISTRY)
DEFAULT = tuple(name for name, test in REGISTRY.items() if test.default)  # Admission.tests' default
SINGLE_NODE = tuple(name for name, test in REGISTRY.items() if not test.across_nodes)
DEFAULT_SINGLE_NODE = tuple(name for name in DEFAULT if name in SINGLE_NODE)  # a profile's by default, on one node
FLOORS_OF = {name: test.floor_keys for name, test in REGISTRY.items()}  # the floors each test is held to
FLOORS = tuple({floor.key: floor for test in REGISTRY.values() for floor in test.floors}.values())
SLURM_MARGIN_S = 60  # the gate's --time is a test's timeout and this, in whole minutes (slurm_minutes)


def _known(name: str) -> AcceptanceTest:
    if name not in REGISTRY:
        raise ValueError(f"unknown test {name!r}: the tests are {', '.join(TESTS)}")
    return REGISTRY[name]


def slurm_minutes(timeout: float) -> int:
    """The --time of a test of ``timeout`` seconds, the gate's and its script's: its tool is cut at the timeout
    (exit 124, judged a failure), Slurm's bound comes a margin after, in whole minutes (never under one). A
    partition whose MaxTime is less cannot run it (EnforcePartLimits=ALL: sbatch refuses it)."""
    return jobs.minutes(timeout + SLURM_MARGIN_S)


def expected_seconds(name: str, dcgm_level: int, hcas: int = 1) -> int:
    return REGISTRY[name].expected_s(Setup(gpus=0, dcgm_level=dcgm_level, hcas=hcas))


def entries(tests: Sequence[str], *, bin_dir: str | None, image: str | None, gpus: int, hcas: Sequence[str],
            dcgm_level: int, floors: Mapping[str, float], budget: int, ib_cuda: bool,
            cpus: int | None = None) -> list[dict[str, Any]]:
    """The admission.json entries of one node's tests, in the order given. Each single-node test gets its share of
    ``budget``, proportional to the time it takes on a healthy node; allreduce_multi, which runs across nodes in
    `clusterforge accept` only, twice its time on a healthy pair, and the node's ``cpus`` where known (its script
    places its ranks by them)."""
    setup = Setup(gpus=gpus, dcgm_level=dcgm_level, hcas=len(hcas), ib_cuda=ib_cuda)
    expected = {name: REGISTRY[name].expected_s(setup) for name in tests}
    total = sum(seconds for name, seconds in expected.items() if name in SINGLE_NODE) or 1
    out = []
    for name in tests:
        test = REGISTRY[name]
        program = f"{bin_dir.rstrip('/')}/{test.program}" if bin_dir else test.program
        out.append({
            "name": name, "argv": [program, *test.arguments(setup)], "image": image,
            "gpus": gpus, "hcas": list(hcas) if test.hcas else [],
            # ib_write_bw from GPU memory (GPUDirect RDMA), HCA i with GPU i modulo the GPUs
            "use_cuda": bool(test.hcas and ib_cuda and gpus),
            "floors": {key: float(value) for key, value in sorted(floors.items()) if key in test.floor_keys},
            "unit": test.unit,
            "timeout": 2 * expected[name] if test.across_nodes else max(1, budget * expected[name] // total),
        })
        if test.across_nodes and cpus is not None:
            out[-1]["cpus"] = cpus
    return out


def job_script(entry: Mapping[str, Any], nodes: Sequence[str]) -> str:
    """The sbatch script of one test (an admission.json entry) on ``nodes``: one node for a single-node test, two or
    more for allreduce_multi. The caller adds what is its own (--reservation, --job-name, --output)."""
    name = entry["name"]
    test = _known(name)
    if not nodes or (not test.across_nodes and len(nodes) != 1):
        raise ValueError(f"{name} runs on {'nodes' if test.across_nodes else 'one node'}, given {len(nodes)}")
    gpus, timeout = int(entry["gpus"]), int(entry["timeout"])
    # Slurm's own bound a minute past the script's: timeout(1) ends the tool first, with its status. The job asks
    # for the node's GPUs in so many words: its steps' GPUs do not rest on what --exclusive gives (on 26.05 all of
    # them, tests/realslurm/test_admission_scripts.py; not documented for every release).
    lines = ["#!/bin/bash", *jobs.header(jobs.Spec(nodes=len(nodes), nodelist=tuple(nodes), exclusive=True,
                                                   minutes=slurm_minutes(timeout), gpus_per_node=gpus))]
    lines += [f"# clusterforge admission test {name}, bound {timeout} s", "set -u"]
    srun = jobs.step_argv(jobs.Spec(nodes=len(nodes), image=entry.get("image") or ""))
    bound = ["timeout", "--kill-after=10", str(timeout)]
    lines += test.launch(entry, nodes, bound, srun, [str(a) for a in entry["argv"]])
    return "\n".join(lines) + "\n"


def judge(entry: Mapping[str, Any], node: str, output: str, exit_status: int) -> list[Result]:
    """The results of one run of the test of ``entry`` whose job printed ``output`` and ended with ``exit_status``:
    one per number held to a floor (per HCA, per nvbandwidth test), or one for the test where it gives no number.

    The verdict needs both: a job that failed (its exit status, as slurmctld recorded it) passes nothing, whatever
    its output says; output is only ever what the job wrote, but text that reads as a pass is cheap to make."""
    name = entry["name"]
    if exit_status == CUT or exit_status == 128 + 9:
        return [Result(node, name, False, detail=f"cut at its bound of {entry['timeout']} s (hung or too slow)")]
    test = _known(name)
    try:
        return test.judge(entry, node, output, exit_status)
    except ParseError as error:
        meaning = exit_meaning(test.exits, exit_status)
        return [Result(node, name, False, detail=f"unreadable output: {error}" + (f"; {meaning}" if meaning else ""))]
