"""The acceptance tests: each one's entry in admission.json (what runs, its floors, its share of the time), the
Slurm batch script that runs it, and the judging of its output into Results.

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

import math
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from .parse import ParseError, dcgm, nccl, nvbandwidth, perftest
from .verdict import Result, figure

TESTS = ("dcgm", "nvbandwidth", "allreduce", "ib_write_bw", "allreduce_multi")
SINGLE_NODE = ("dcgm", "nvbandwidth", "allreduce", "ib_write_bw")
PROGRAMS = {"dcgm": "dcgmi", "nvbandwidth": "nvbandwidth", "allreduce": "all_reduce_perf",
            "ib_write_bw": "ib_write_bw", "allreduce_multi": "all_reduce_perf"}
UNITS = {"dcgm": "", "nvbandwidth": "GB/s", "allreduce": "GB/s", "ib_write_bw": "Gb/s", "allreduce_multi": "GB/s"}
# nvbandwidth's tests, each with the floor its every cell is held to and the short name a reason gives it.
NVBANDWIDTH = {"host_to_device_memcpy_ce": ("host_to_device", "h2d"),
               "device_to_host_memcpy_ce": ("host_to_device", "d2h"),
               "device_to_device_memcpy_read_ce": ("device_to_device", "d2d_read")}
ALLREDUCE_BYTES = 16 * 2**30   # Azure's size: large enough for the peak, one row, so no mean over small ones
IB_MESSAGE_BYTES = 8 * 2**20   # Azure's per-HCA check
IB_FIRST_PORT = 18515          # perftest's default; one port per HCA
CUT = 124                      # timeout(1)'s status for a command it ended
SLURM_MARGIN_S = 60            # the gate's --time is a test's timeout and this, in whole minutes (slurm_minutes)
# Seconds each test takes on a healthy 8-GPU node, by which a node's budget is shared out (dcgm by its level:
# acceptance.md §1, level 3 "up to 20 minutes").
EXPECTED_S = {"nvbandwidth": 120, "allreduce": 120, "ib_write_bw": 30, "allreduce_multi": 300}
DCGM_EXPECTED_S = {1: 60, 2: 300, 3: 1200, 4: 3600}
MARK = "### clusterforge ib_write_bw"  # a line before each HCA's output, and after it with the HCA's exit status
# Seconds the ib_write_bw server is given to listen before its client connects: perftest's client does not retry,
# and a server with --use_cuda first sets up a CUDA context. (A probe of its port would take its one connection.)
SERVER_START_S = 3

NCCL_EXITS = {1: "internal error", 2: "CUDA error", 3: "NCCL error", 4: "timeout (-T)",
              5: "not implemented (more GPUs than present?)", 6: "invalid usage", 7: "wrong results"}
DCGM_EXITS = {226: "a test failed or warned", 205: "an error of isolate priority: take the GPU out",
              203: "the diagnostic was killed", 235: "no connection to the host engine (nv-hostengine)",
              233: "the GPUs are not all alike", 250: "not supported by the driver", 245: "timeout"}


def slurm_minutes(timeout: float) -> int:
    """The --time the gate asks for a test of ``timeout`` seconds: its tool is cut at the timeout (exit 124, judged
    a failure), Slurm's bound comes a margin after, in whole minutes (never under one). A partition whose MaxTime is
    less cannot run it (EnforcePartLimits=ALL: sbatch refuses it)."""
    return max(1, math.ceil((timeout + SLURM_MARGIN_S) / 60))


def expected_seconds(name: str, dcgm_level: int, hcas: int = 1) -> int:
    if name == "dcgm":
        return DCGM_EXPECTED_S[dcgm_level]
    return EXPECTED_S[name] * (max(hcas, 1) if name == "ib_write_bw" else 1)


def entries(tests: Sequence[str], *, bin_dir: str | None, image: str | None, gpus: int, hcas: Sequence[str],
            dcgm_level: int, floors: Mapping[str, float], budget: int, ib_cuda: bool,
            cpus: int | None = None) -> list[dict[str, Any]]:
    """The admission.json entries of one node's tests, in the order given. Each single-node test gets its share of
    ``budget``, proportional to the time it takes on a healthy node; allreduce_multi, which runs across nodes in
    `clusterforge accept` only, twice its time on a healthy pair, and the node's ``cpus`` where known (its script
    places its ranks by them)."""
    expected = {name: expected_seconds(name, dcgm_level, len(hcas)) for name in tests}
    total = sum(seconds for name, seconds in expected.items() if name in SINGLE_NODE) or 1
    out = []
    for name in tests:
        program = f"{bin_dir.rstrip('/')}/{PROGRAMS[name]}" if bin_dir else PROGRAMS[name]
        out.append({
            "name": name, "argv": [program, *_arguments(name, gpus, dcgm_level, ib_cuda)], "image": image,
            "gpus": gpus, "hcas": list(hcas) if name == "ib_write_bw" else [],
            # ib_write_bw from GPU memory (GPUDirect RDMA), HCA i with GPU i modulo the GPUs
            "use_cuda": bool(name == "ib_write_bw" and ib_cuda and gpus),
            "floors": {key: float(value) for key, value in sorted(floors.items())
                       if key in _floor_keys(name)},
            "unit": UNITS[name],
            "timeout": max(1, budget * expected[name] // total) if name in SINGLE_NODE else 2 * expected[name],
        })
        if name == "allreduce_multi" and cpus is not None:
            out[-1]["cpus"] = cpus
    return out


def _floor_keys(name: str) -> tuple[str, ...]:
    if name == "nvbandwidth":
        return tuple(dict.fromkeys(floor for floor, _ in NVBANDWIDTH.values()))
    return () if name == "dcgm" else (name,)


def _arguments(name: str, gpus: int, dcgm_level: int, ib_cuda: bool) -> list[str]:
    size = f"{ALLREDUCE_BYTES // 2**30}G"
    if name == "dcgm":
        return ["diag", "-r", str(dcgm_level), "-j"]
    if name == "nvbandwidth":
        return ["-t", *NVBANDWIDTH]
    if name == "allreduce":
        return ["-b", size, "-e", size, "-g", str(gpus)]
    if name == "allreduce_multi":
        return ["-b", size, "-e", size, "-g", "1"]  # one task per GPU across the nodes: MPI ranks
    return ["-s", str(IB_MESSAGE_BYTES), "-F", "--report_gbits"]


# -- the batch script ---------------------------------------------------------------------------------------------


def job_script(test: Mapping[str, Any], nodes: Sequence[str]) -> str:
    """The sbatch script of one test (an admission.json entry) on ``nodes``: one node for a single-node test, two or
    more for allreduce_multi. The caller adds what is its own (--reservation, --job-name, --output)."""
    name = test["name"]
    if name not in TESTS:
        raise ValueError(f"unknown test {name!r}: the tests are {', '.join(TESTS)}")
    if not nodes or (name != "allreduce_multi" and len(nodes) != 1):
        raise ValueError(f"{name} runs on {'one node' if name != 'allreduce_multi' else 'nodes'}, given {len(nodes)}")
    gpus, timeout = int(test["gpus"]), int(test["timeout"])
    lines = ["#!/bin/bash", f"#SBATCH --nodes={len(nodes)}", f"#SBATCH --nodelist={','.join(nodes)}",
             "#SBATCH --exclusive",
             # Slurm's own bound a minute past the script's: timeout(1) ends the tool first, with its status.
             f"#SBATCH --time={math.ceil(timeout / 60) + 1}"]
    if gpus:
        # The job asks for the node's GPUs in so many words: its steps' GPUs do not rest on what --exclusive gives
        # (on 26.05 all of them, tests/realslurm/test_admission_scripts.py; not documented for every release).
        lines.append(f"#SBATCH --gpus-per-node={gpus}")
    lines += [f"# clusterforge admission test {name}, bound {timeout} s", "set -u"]
    srun = ["srun", f"--nodes={len(nodes)}"]
    if test.get("image"):
        srun.append(f"--container-image={test['image']}")
    argv = [str(a) for a in test["argv"]]
    if name == "allreduce_multi":
        lines.append("export NCCL_ALGO=Ring  # tree and NVLS report more than the NICs carry between 2 nodes")
        srun += _rank_per_gpu(gpus, len(nodes), test.get("cpus"))
    else:
        srun.append("--ntasks=1")
        if gpus:
            srun.append(f"--gpus-per-node={gpus}")
    bound = ["timeout", "--kill-after=10", str(timeout)]
    if name != "ib_write_bw":
        lines.append(shlex.join(bound + srun + argv))
        return "\n".join(lines) + "\n"
    # Server and client on the node, per HCA through the switch (Azure's check); the server's table after the
    # client's, so that neither cuts into the other's lines; a marker around each HCA's output for the judge.
    hcas = [str(h) for h in test["hcas"]]
    steps = ["status=0"]
    for index, hca in enumerate(hcas):
        one = argv + ["-d", hca, "-p", str(IB_FIRST_PORT + index)]
        if test.get("use_cuda") and gpus:
            one.append(f"--use_cuda={index % gpus}")
        steps += [f"echo {shlex.quote(f'{MARK} {hca}')}",
                  f"server=$(mktemp); {shlex.join(one)} >\"$server\" 2>&1 & pid=$!; sleep {SERVER_START_S}",
                  f"{shlex.join(one + ['localhost'])} 2>&1; rc=$?",
                  "wait $pid; served=$?; [ $rc -ne 0 ] || rc=$served; cat \"$server\"; rm -f \"$server\"",
                  f"echo \"{MARK} {hca} exit $rc\"; [ $rc -eq 0 ] || status=$rc"]
    steps.append("exit $status")
    body = "\n".join(steps)
    lines.append(shlex.join(bound + srun + ["bash", "-c", body]))
    return "\n".join(lines) + "\n"


def _rank_per_gpu(gpus: int, nodes: int, cpus: Any) -> list[str]:
    """srun's options that start one rank per GPU on each of ``nodes`` nodes, each rank with its GPU."""
    if cpus is None or int(cpus) >= gpus:
        return [f"--ntasks-per-node={gpus}", "--gpus-per-task=1"]
    # A node with fewer CPUs than GPUs (a test machine with stand-in GPUs, never an H100 node): srun refuses
    # --ntasks-per-node above a node's CPUs even with --overcommit, but takes the total overcommitted, which its
    # block distribution lays out evenly, GPUs-per-node ranks on each node (tests/realslurm/test_accept_eight.py
    # shows where each rank ran). Each rank sees its node's GPUs and takes the one of its local rank, as
    # all_reduce_perf does with -g 1.
    return [f"--ntasks={gpus * nodes}", "--overcommit", f"--gpus-per-node={gpus}"]


# -- judging ------------------------------------------------------------------------------------------------------


def judge(test: Mapping[str, Any], node: str, output: str, exit_status: int) -> list[Result]:
    """The results of one run of ``test`` whose job printed ``output`` and ended with ``exit_status``: one per
    number held to a floor (per HCA, per nvbandwidth test), or one for the test where it gives no number.

    The verdict needs both: a job that failed (its exit status, as slurmctld recorded it) passes nothing, whatever
    its output says; output is only ever what the job wrote, but text that reads as a pass is cheap to make."""
    name = test["name"]
    if exit_status == CUT or exit_status == 128 + 9:
        return [Result(node, name, False, detail=f"cut at its bound of {test['timeout']} s (hung or too slow)")]
    try:
        if name == "dcgm":
            return [_dcgm(node, output, exit_status)]
        if name == "nvbandwidth":
            return _nvbandwidth(test, node, output, exit_status)
        if name in ("allreduce", "allreduce_multi"):
            return [_allreduce(test, node, output, exit_status)]
        if name == "ib_write_bw":
            return _failed_job(_ib_write_bw(test, node, output), exit_status)
    except ParseError as error:
        meaning = _exit_meaning(name, exit_status)
        return [Result(node, name, False, detail=f"unreadable output: {error}" + (f"; {meaning}" if meaning else ""))]
    raise ValueError(f"unknown test {name!r}: the tests are {', '.join(TESTS)}")


def _failed_job(results: list[Result], exit_status: int) -> list[Result]:
    """ib_write_bw's script ends with the status of an HCA whose test failed, which its output shows: a job that
    ended failing while its output shows no failure at all is not judged on that output. Each result then fails,
    with the status first and what the output read after."""
    if exit_status == 0 or any(not r.passed for r in results):
        return results
    return [r if not r.passed else
            Result(r.node, r.test, False, detail=f"exit status {exit_status}, though its output reads "
                                                 f"{r.reason.removeprefix(r.test + ' ')}")
            for r in results]


def _exit_meaning(name: str, status: int) -> str:
    if status == 0:
        return ""
    table = DCGM_EXITS if name == "dcgm" else NCCL_EXITS if name.startswith("allreduce") else {}
    return f"exit status {status}" + (f" ({table[status]})" if status in table else "")


def _number_result(node: str, test: str, value: float, floor: float, unit: str, detail: str) -> Result:
    return Result(node, test, value >= floor, value, unit, floor, detail)


def _dcgm(node: str, output: str, exit_status: int) -> Result:
    diag = dcgm.parse(output)
    if diag.runtime_error is not None:
        return Result(node, "dcgm", False, detail=f"could not run: {diag.runtime_error}")
    bad = [t for t in diag.tests if t.status not in (dcgm.PASS, dcgm.SKIP)]
    if bad:
        parts = []
        for t in bad:
            gpus = [f"GPU{i}" for i, status in t.gpus if status not in (dcgm.PASS, dcgm.SKIP)]
            parts.append(f"{t.name} {t.status}" + (f" ({', '.join(gpus)})" if gpus else ""))
        warning = next((w for t in bad for w in t.warnings if w), "")
        return Result(node, "dcgm", False, detail="; ".join(parts) + (f": {warning}" if warning else ""))
    if exit_status != 0:
        # Every result Pass but dcgmi says otherwise: its status decides (a warning counted, a GPU to isolate).
        return Result(node, "dcgm", False, detail=_exit_meaning("dcgm", exit_status))
    skipped = [t.name for t in diag.tests if t.status == dcgm.SKIP]
    return Result(node, "dcgm", True, detail=f"{len(diag.tests)} tests passed" +
                  (f", skipped: {', '.join(skipped)}" if skipped else ""))


def _nvbandwidth(test: Mapping[str, Any], node: str, output: str, exit_status: int) -> list[Result]:
    if exit_status != 0:
        # 1: bad arguments or a CUDA/NVML call failed; whatever was measured before is not a whole run.
        return [Result(node, "nvbandwidth", False, detail=f"exit status {exit_status}")]
    run = nvbandwidth.parse(output)
    floors, unit = test["floors"], test["unit"]
    results = []
    for full, (floor_key, short) in NVBANDWIDTH.items():
        name = f"nvbandwidth:{short}"
        matrix = run.test(full)
        if matrix is None or matrix.status != nvbandwidth.PASSED:
            why = "not run (waived?)" if matrix is None else f"{matrix.status}: {matrix.error}".rstrip(": ")
            results.append(Result(node, name, False, detail=f"{full} {why}"))
            continue
        cells = [(value, row, column) for row, values in enumerate(matrix.cells)
                 for column, value in enumerate(values) if value is not None]
        if not cells:
            results.append(Result(node, name, False, detail=f"{full}: no measured cell"))
            continue
        value, row, column = min(cells)
        source = "GPU" if full.startswith("device_to_device") else "CPU"
        results.append(_number_result(node, name, value, floors[floor_key], unit,
                                      f"{full} lowest {source}{row}->GPU{column}, SUM {figure(matrix.sum or 0)}"))
    return results


def _allreduce(test: Mapping[str, Any], node: str, output: str, exit_status: int) -> Result:
    name = test["name"]
    table = nccl.parse(output)
    if exit_status != 0:
        return Result(node, name, False, detail=_exit_meaning(name, exit_status))
    if table.wrong:
        return Result(node, name, False, detail=f"{table.wrong} wrong values")
    row = table.row(ALLREDUCE_BYTES) if name == "allreduce" else table.row()
    expected = test.get("ranks") or (test["gpus"] if name == "allreduce" else 0)
    if expected and table.ranks != expected:
        return Result(node, name, False, detail=f"ran on {table.ranks} GPUs where {expected} were asked for")
    return _number_result(node, name, row.lowest_busbw, test["floors"][name], test["unit"],
                          f"busbw of {row.size} B, out-of-place {figure(row.busbw[0])}, "
                          f"in-place {figure(row.busbw[1])}; {table.ranks} ranks")


def _ib_write_bw(test: Mapping[str, Any], node: str, output: str) -> list[Result]:
    hcas = [str(h) for h in test["hcas"]]
    parts: dict[str, list[str]] = {}
    statuses: dict[str, int] = {}
    current: str | None = None
    for line in output.splitlines():
        if line.startswith(MARK):
            words = line[len(MARK):].split()
            if len(words) == 3 and words[1] == "exit" and words[2].lstrip("-").isdigit():
                statuses[words[0]] = int(words[2])
                current = None
            elif len(words) == 1:
                current = words[0]
                parts[current] = []
            continue
        if current is not None:
            parts[current].append(line)
    results = []
    floor, unit = test["floors"]["ib_write_bw"], test["unit"]
    for hca in hcas:
        name = f"ib_write_bw:{hca}"
        if hca not in statuses:
            results.append(Result(node, name, False, detail="no result: the run ended before this HCA's test did"))
        elif statuses[hca] != 0:
            last = next((line.strip() for line in reversed(parts.get(hca, [])) if line.strip()), "")
            results.append(Result(node, name, False, detail=f"exit status {statuses[hca]}: {last}".rstrip(": ")))
        else:
            try:
                bandwidth = perftest.parse("\n".join(parts[hca]))
            except ParseError as error:
                results.append(Result(node, name, False, detail=f"unreadable output: {error}"))
                continue
            results.append(_number_result(node, name, bandwidth.gbits(), floor, unit,
                                          f"BW average at {max(r.size for r in bandwidth.rows)} B"))
    return results
