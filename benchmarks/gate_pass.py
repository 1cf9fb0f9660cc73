"""What one pass of the admission gate (gate/passes.py) takes with N held nodes when each of Slurm's commands a step
waits on is slow (issue 50): prints figures, asserts nothing.

    .venv/bin/python benchmarks/gate_pass.py [--nodes 1 12 48] [--command-s 1.0]

Slurm is the unit tests' stand-in (tests/slurm_standin), each node held by the gate with one test to run. The
commands a node's step waits on, sbatch (the submission pass) and srun (the pass that reads each output back), each
take ``--command-s`` more, as on a busy slurmctld (benchmarks/scale.py measured ~1 s an srun on the test cluster):
waits that overlap where the commands run at once, as real slurmctld serves requests side by side. The pass's own
reads (scontrol, sinfo) are the stand-in's, instant. For each N: the submission pass and the read pass, with the
steps one node after another (``workers`` 1: the gate before issue 50, which ran the same commands in the same order)
and at once (the gate's WORKERS).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "src")]

from slurm_standin import Runner, Slurm  # noqa: E402 - after the paths

from clusterforge.admission.verdict import Result  # noqa: E402
from clusterforge.gate.passes import WORKERS, Gate  # noqa: E402
from clusterforge.gate.store import Store  # noqa: E402
from clusterforge.slurm import reservations  # noqa: E402

SCRIPT = "#!/bin/sh\necho 'busbw 480'\n"
SLOW = ("sbatch", "srun")


def judge(test: dict, node: str, output: str, exit_status: int) -> list[Result]:
    return [Result(node, test["name"], exit_status == 0, detail=output.strip())]


def passes(nodes: int, workers: int, command_s: float) -> tuple[float, float]:
    """The seconds of the submission pass and of the read pass, ``nodes`` held."""
    names = [f"gpu{i:03d}" for i in range(1, nodes + 1)]
    slurm = Slurm.of(names, runner=Runner())
    for name in names:
        slurm.run(reservations.create_argv(reservations.name("new", name), name))

    def run(argv, timeout: float):
        if argv[0] in SLOW:
            time.sleep(command_s)  # slurmctld's answer: outside the stand-in's lock, as requests are served at once
        return slurm(argv, timeout)

    plan = {"nodes": {name: {"tests": [{"name": "allreduce", "timeout": 60}]} for name in names}}
    with tempfile.TemporaryDirectory(prefix="gate-pass-") as scratch:
        gate = Gate(Store(f"{scratch}/state"), plan, run, lambda test, nodes: SCRIPT, judge, f"{scratch}/scripts",
                    log=lambda text: None, runs_dir=f"{scratch}/runs", workers=workers)
        times = []
        for _ in range(2):
            start = time.monotonic()
            gate.one_pass()
            times.append(time.monotonic() - start)
        store = Store(f"{scratch}/state")  # each read judged: kept in its round, or in the records once decided
        read = {n for n, r in store.held().items() if "allreduce" in r.results}
        read |= {n for n in names if any(record["test"] == "allreduce" for record in store.records(n))}
        if read != set(names):
            raise SystemExit(f"{nodes} nodes, {workers} workers: read {len(read)} of {nodes}")
    return times[0], times[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 12, 48])
    parser.add_argument("--command-s", type=float, default=1.0, help="what each sbatch and srun waits (default 1)")
    args = parser.parse_args()
    print(f"each sbatch and srun {args.command_s:g} s more; seconds of each pass")
    print(f"{'nodes':>5} {'workers':>7} {'submit pass s':>13} {'read pass s':>11}")
    for nodes in args.nodes:
        for workers in (1, WORKERS):
            submit, read = passes(nodes, workers, args.command_s)
            print(f"{nodes:>5} {workers:>7} {submit:>13.1f} {read:>11.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
