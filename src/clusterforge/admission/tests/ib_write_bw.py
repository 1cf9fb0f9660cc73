"""ib_write_bw: perftest's RDMA write bandwidth per HCA, server and client on the node through the switch (Azure's
check), from GPU memory where the admission asks it (GPUDirect RDMA, HCA i with GPU i modulo the GPUs); each HCA's
BW average held to the floor."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from ..parse import ParseError, perftest
from ..verdict import Result
from .base import AcceptanceTest, Entry, Floor, number_result, single_task

MESSAGE_BYTES = 8 * 2**20      # Azure's per-HCA check
FIRST_PORT = 18515             # perftest's default; one port per HCA
MARK = "### clusterforge ib_write_bw"  # a line before each HCA's output, and after it with the HCA's exit status
# Seconds the ib_write_bw server is given to listen before its client connects: perftest's client does not retry,
# and a server with --use_cuda first sets up a CUDA context. (A probe of its port would take its one connection.)
SERVER_START_S = 3
FLOOR = Floor("ib_write_bw", "Gb/s: ib_write_bw's BW average per HCA, server and client on the node (380 for NDR "
              "400G)", {"h100": 380, "h200": 380})


def launch(entry: Entry, nodes: Sequence[str], bound: list[str], srun: list[str], argv: list[str]) -> list[str]:
    """Server and client on the node, per HCA; the server's table after the client's, so that neither cuts into
    the other's lines; a marker around each HCA's output for the judge."""
    gpus = int(entry["gpus"])
    steps = ["status=0"]
    for index, hca in enumerate(str(h) for h in entry["hcas"]):
        one = argv + ["-d", hca, "-p", str(FIRST_PORT + index)]
        if entry.get("use_cuda") and gpus:
            one.append(f"--use_cuda={index % gpus}")
        steps += [f"echo {shlex.quote(f'{MARK} {hca}')}",
                  f"server=$(mktemp); {shlex.join(one)} >\"$server\" 2>&1 & pid=$!; sleep {SERVER_START_S}",
                  f"{shlex.join(one + ['localhost'])} 2>&1; rc=$?",
                  "wait $pid; served=$?; [ $rc -ne 0 ] || rc=$served; cat \"$server\"; rm -f \"$server\"",
                  f"echo \"{MARK} {hca} exit $rc\"; [ $rc -eq 0 ] || status=$rc"]
    steps.append("exit $status")
    return [shlex.join(bound + srun + single_task(entry) + ["bash", "-c", "\n".join(steps)])]


def judge(entry: Entry, node: str, output: str, exit_status: int) -> list[Result]:
    return _failed_job(_per_hca(entry, node, output), exit_status)


def _failed_job(results: list[Result], exit_status: int) -> list[Result]:
    """The script ends with the status of an HCA whose test failed, which its output shows: a job that ended failing
    while its output shows no failure at all is not judged on that output. Each result then fails, with the status
    first and what the output read after."""
    if exit_status == 0 or any(not r.passed for r in results):
        return results
    return [r if not r.passed else
            Result(r.node, r.test, False, detail=f"exit status {exit_status}, though its output reads "
                                                 f"{r.reason.removeprefix(r.test + ' ')}")
            for r in results]


def _per_hca(entry: Entry, node: str, output: str) -> list[Result]:
    hcas = [str(h) for h in entry["hcas"]]
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
    floor, unit = entry["floors"]["ib_write_bw"], entry["unit"]
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
            results.append(number_result(node, name, bandwidth.gbits(), floor, unit,
                                         f"BW average at {max(r.size for r in bandwidth.rows)} B"))
    return results


TEST = AcceptanceTest(name="ib_write_bw", program="ib_write_bw", unit="Gb/s", floors=(FLOOR,),
                      expected_s=lambda setup: 30 * max(setup.hcas, 1),
                      arguments=lambda setup: ["-s", str(MESSAGE_BYTES), "-F", "--report_gbits"],
                      judge=judge, launch=launch, hcas=True)
