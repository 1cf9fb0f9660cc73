"""What admission takes on the real Slurm 26.05 with the test cluster's stand-in tools (testbed/accept), on the
cluster of tests/realslurm/test_accept_eight.py (a slurmctld and nine slurmd on this machine, 2 CPUs and 8 stand-in
GPUs per node); prints figures, asserts nothing.

    .venv/bin/python benchmarks/accept_real.py [--interval 10 ...] [--slow gpu05 ...] [--skip-gate] [--skip-accept]

(a) The admission gate (gate/passes.py, as the gate program runs it: a pass every --interval seconds, the program's
    default 10) admitting one node: the time from the deploy's hold (reservation cf-gate-new-gpu01) to its release,
    the node's single-node tests (dcgm, nvbandwidth, allreduce, ib_write_bw: a profile's default tests) as
    admission.json gives them, each a real job of its own, run one after another.
(b) `clusterforge accept` (accept/run.py) over 8 real nodes, one of them slow (every HCA at 190 Gb/s: its own
    all_reduce fine, every multi-node one slow), for each node named by --slow: the rounds in all and the
    bisection's, the time until the bisection names the node, until its confirming run (bisect.confirm_all) says it
    is slow, and until accept ends (the rail round and the drain included). The stand-ins answer in about a second,
    so the times are Slurm's and accept's own: job start, the 2 s between accept's looks at the jobs, the gate's
    passes. The simulated 64 and 1,024 nodes: accept_bisect.py.

Needs root and the forky root (tests/realslurm/build-debian-root.sh forky).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "src")]

from realslurm import test_accept_eight as eight  # noqa: E402 - after the paths

from clusterforge.admission import tests  # noqa: E402
from clusterforge.accept import bisect
from clusterforge.gate.main import DEFAULT_INTERVAL_S  # noqa: E402
from clusterforge.gate.passes import Gate  # noqa: E402
from clusterforge.gate.store import Store  # noqa: E402
from clusterforge.health import reservations  # noqa: E402
from clusterforge.slurm.commands import Answer  # noqa: E402

NODE = "gpu01"


def gate_admission(interval: float) -> None:
    valid = eight.inventory(tests.DEFAULT_SINGLE_NODE)
    with eight.running_cluster({}, valid) as cluster:
        hold = reservations.name("new", NODE)
        entries = eight.plan(valid, bounds={})[NODE]

        def run(argv, timeout) -> Answer:
            done = cluster.ctld.run(*argv, check=False, timeout=timeout, env=cluster.env)
            return Answer(done.returncode, done.stdout, done.stderr)

        said: list[tuple[float, str]] = []
        started = time.monotonic()
        cluster.ctld.run(*reservations.create_argv(hold, NODE))
        gate = Gate(Store(str(cluster.scratch / "state")), {"nodes": {NODE: {"tests": entries}}}, run,
                    tests.job_script, tests.judge, str(cluster.scratch / "scripts"),
                    log=lambda line: said.append((time.monotonic() - started, line)))
        passes = 0
        while True:
            gate.one_pass()
            passes += 1
            shown = reservations.parse_reservations(run(reservations.show_argv(), 30).out)
            took = time.monotonic() - started
            if hold not in {r.name for r in shown} or took > 900:
                break
            time.sleep(interval)
    for seconds, line in said:
        print(f"    {seconds:6.1f} s  {line}")
    print(f"(a) gate, one node, {len(entries)} tests ({', '.join(e['name'] for e in entries)}), a pass every "
          f"{interval:g} s: held to released in {took:.1f} s, {passes} passes"
          + ("" if took <= 900 else " (not released: given up)"))


def accept_isolation(slow: list[str]) -> None:
    hcas = eight.stand_in_hcas()
    rows = []
    for node in slow:
        with eight.running_cluster({node: {"hca": {h: eight.SLOW_GBITS for h in hcas}}}) as cluster:
            with tempfile.TemporaryDirectory() as records:
                report = cluster.accept(Path(records))
        [found] = report.bisections
        named = next(s for s, line in cluster.timeline if line.startswith("leaf1: found"))
        confirmed = next((s for s, line in cluster.timeline if line.startswith(f"{node} failed beside")
                          and line.endswith(": slow")), float("nan"))
        total = cluster.timeline[-1][0]
        rows.append((node, found.nodes, found.rounds, report.rounds, named, confirmed, total))
    print(f"(b) accept over {len(eight.NODES)} real nodes, one slow; bisection bound ceil(log2 8) + 1 = "
          f"{bisect.bound(len(eight.NODES))}")
    print(f"    {'slow':>6}  {'found':>6}  {'bisection rounds':>16}  {'rounds in all':>13}  {'named after':>11}  "
          f"{'confirmed after':>15}  {'accept ended after':>18}")
    for node, found, rounds, all_rounds, named, confirmed, total in rows:
        print(f"    {node:>6}  {','.join(found):>6}  {rounds:>16}  {all_rounds:>13}  {named:>9.1f} s  "
              f"{confirmed:>13.1f} s  {total:>16.1f} s")
    if len(rows) > 1:
        print(f"    median: named after {statistics.median(r[4] for r in rows):.1f} s, confirmed after "
              f"{statistics.median(r[5] for r in rows):.1f} s, accept ended after "
              f"{statistics.median(r[6] for r in rows):.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, nargs="+", default=[DEFAULT_INTERVAL_S],
                        help="seconds between the gate's passes (one admission per value)")
    parser.add_argument("--slow", nargs="+", default=["gpu05"], choices=eight.NODES, help="the slow node of each run")
    parser.add_argument("--skip-gate", action="store_true")
    parser.add_argument("--skip-accept", action="store_true")
    args = parser.parse_args()
    try:
        for interval in [] if args.skip_gate else args.interval:
            gate_admission(interval)
        if not args.skip_accept:
            accept_isolation(args.slow)
    except BaseException as error:   # pytest's skip where the runtime is missing: said, not a traceback
        if type(error).__name__ != "Skipped":
            raise
        print(f"cannot run here: {error}")


if __name__ == "__main__":
    main()
