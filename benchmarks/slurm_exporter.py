"""The Slurm exporter's scrape time and exposition size; prints figures, asserts nothing.

    .venv/bin/python benchmarks/slurm_exporter.py [--runs 7] [--nodes 10000] [--jobs 50000]

Three clusters: the captured one (tests/exporter/captures/24.11: 8 nodes, 9 jobs), a generated one of 4 nodes and 8
jobs (the test cluster's size), and a generated one of ``--nodes`` nodes and ``--jobs`` jobs, written in the same
text formats as the captures (10 GPU nodes to 1 CPU node, each in its own partition and in "all", mixed states,
one in twenty drained, 40 accounts, most jobs running). sdiag prints the 24.11 capture for the generated ones. For
each:

* the whole program, ``--once``, as the controller runs it (tests/exporter/controller.py: its files alone,
  Debian's python3 -I, stand-ins that print the text): the median wall time of ``--runs`` runs, which includes
  starting python, importing prometheus_client and the stand-ins' ``cat``;
* the part that is the exporter's own work: the commands' text read into families and the exposition generated
  (collector.read and prometheus_client's generate_latest), timed inside the same python on the shipped files,
  the median of ``--runs``;
* the exposition's size, in bytes and series.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from exporter.controller import CAPTURES, PYTHON, Controller  # noqa: E402 - after the path to the tests

# (long state, StateComplete, share): what a busy cluster looks like, roughly.
STATES = [("allocated", "allocated", 60), ("mixed", "mixed", 15), ("idle", "idle", 10),
          ("drained", "idle+drain", 3), ("draining", "mixed+drain", 2), ("down*", "down+not_responding", 2),
          ("idle*", "idle+not_responding", 1), ("completing", "allocated+completing", 4),
          ("reboot^", "down+reboot_issued", 1), ("mixed@", "mixed+reboot_requested", 2)]
REASONS = ["Resources", "Priority", "Dependency", "QOSMaxGRESPerUser", "AssocGrpGRES", "JobHeldUser", "BeginTime"]


def generate(out: Path, nodes: int, jobs: int) -> None:
    rng = random.Random(2026)
    gpu_nodes = nodes * 10 // 11
    states = [s[:2] for s in STATES for _ in range(s[2])]
    lines = []
    for i in range(nodes):
        gpu = i < gpu_nodes
        name = f"gpu-node-{i + 1:05d}" if gpu else f"cpu-node-{i - gpu_nodes + 1:05d}"
        partition = "train" if gpu else "cpu"
        state, complete = rng.choice(states)
        alloc = 0 if not gpu or state.startswith(("idle", "drained", "down", "reboot")) else \
            8 if state.startswith(("allocated", "completing")) else rng.randint(1, 7)
        gres = "gpu:h100:8(S:0-1)" if gpu else "(null)"
        used = (f"gpu:h100:{alloc}(IDX:{'0-' + str(alloc - 1) if alloc > 1 else '0' if alloc else 'N/A'})" if gpu
                else "(null)")
        reason = "none"
        if "drain" in complete:
            reason = rng.choice(["cf:gpu:xid79 gpu3 0000:9b:00.0", "cf:ib:down mlx5_2",
                                 "bad DIMM, ticket OPS-4711", "Kill task failed"])
        elif state.startswith("down"):
            reason = "Not responding"
        for p in ([f"{partition}*" if gpu else partition, "all"]):
            lines.append(f"{name}|{p}|{state}|{complete}|{gres}|{used}|{reason}|")
    (out / "sinfo.txt").write_text("\n".join(lines) + "\n")
    accounts = [f"project{a:02d}" for a in range(40)]
    job_lines = []
    for _ in range(jobs):
        state = rng.choices(["RUNNING", "PENDING", "COMPLETING"], weights=[70, 28, 2])[0]
        partition = rng.choices(["train", "cpu", "train,all"], weights=[80, 15, 5])[0]
        reason = rng.choice(REASONS) if state == "PENDING" else "None"
        job_lines.append(f"{state}|{partition}|{rng.choice(accounts)}|{reason}")
    (out / "squeue.txt").write_text("\n".join(job_lines) + "\n")
    for name in ("sdiag.txt", "sacctmgr.txt", "scontrol.txt"):
        (out / name).write_text((CAPTURES / "24.11" / name).read_text())


def median_ms(seconds: list[float]) -> str:
    return f"{statistics.median(seconds) * 1000:.1f} ms (min {min(seconds) * 1000:.1f}, max {max(seconds) * 1000:.1f})"


def whole_program(captures: Path, runs: int) -> tuple[list[float], str]:
    times, text = [], ""
    with tempfile.TemporaryDirectory() as root:
        shipped = Controller(Path(root), captures)
        for _ in range(runs):
            start = time.perf_counter()
            result = subprocess.run(shipped.argv("--once", "--timeout", "60"), env=shipped.env,
                                    capture_output=True, text=True, check=True)
            times.append(time.perf_counter() - start)
            text = result.stdout
    return times, text


# The exporter's own work, timed inside the same python the controller runs, on the shipped file.
READ_ALONE = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from clusterforge_exporter.exporter.collector import read
from clusterforge_exporter.slurm.commands import Answer
from prometheus_client import CollectorRegistry, generate_latest

class Families:
    def __init__(self, found):
        self.found = found

    def collect(self):
        return self.found

texts = {name: open(f"{sys.argv[2]}/{name}.txt").read()
         for name in ("sinfo", "squeue", "sdiag", "sacctmgr", "scontrol")}
times = []
for _ in range(int(sys.argv[3])):
    start = time.perf_counter()
    found, failed = read({name: Answer(0, text, "", 0.0) for name, text in texts.items()})
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Families(found))
    generate_latest(registry)
    times.append(time.perf_counter() - start)
    assert not failed
print(json.dumps(times))
"""


def read_alone(captures: Path, runs: int) -> list[float]:
    with tempfile.TemporaryDirectory() as root:
        shipped = Controller(Path(root), captures)
        out = subprocess.run([PYTHON, "-I", "-c", READ_ALONE, str(shipped.program), str(shipped.captures), str(runs)],
                             capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def report(what: str, captures: Path, runs: int) -> None:
    lines = sum(1 for _ in (captures / "sinfo.txt").open()), sum(1 for _ in (captures / "squeue.txt").open())
    program, text = whole_program(captures, runs)
    alone = read_alone(captures, runs)
    series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    print(f"{what}: sinfo {lines[0]} lines, squeue {lines[1]} lines")
    print(f"  whole --once run:          {median_ms(program)}")
    print(f"  read + exposition alone:   {median_ms(alone)}")
    print(f"  exposition:                {len(text.encode()):,} bytes, {series:,} series")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=50_000)
    args = parser.parse_args()
    report("captured cluster (24.11)", CAPTURES / "24.11", args.runs)
    for nodes, jobs in ((4, 8), (args.nodes, args.jobs)):
        with tempfile.TemporaryDirectory() as generated:
            generate(Path(generated), nodes, jobs)
            report(f"generated cluster ({nodes:,} nodes, {jobs:,} jobs)", Path(generated), args.runs)


if __name__ == "__main__":
    main()
