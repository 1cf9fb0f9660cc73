"""How many rounds, and how long, `clusterforge accept`'s bisection takes to isolate one bad node among 8, 64 and 1,024
simulated nodes, and to confirm it before its drain; prints figures, asserts nothing.

    python benchmarks/accept_bisect.py [--sizes 8 64 1024] [--round-s 300] [--repeat 5]

No cluster: the runner is simulated (a group is slow when it holds the bad node), so what is measured is the
bisection itself (accept/bisect.py), run once with the bad node at every position up to 64 nodes and at 64 spread
positions beyond. Printed per size: the rounds (worst and median over the positions) against the bound ceil(log2 N) + 1,
the jobs submitted (the groups of all rounds), the CPU time of one bisection (the median over --repeat runs of every
position, divided by the positions), and the wall time a cluster would take: the rounds times --round-s, the time
one allreduce_multi job takes (admission/tests.py's expected 300 s for 8 x H100 nodes, dominated by NCCL's start
and the 16 GiB all_reduce), since every group of a round runs at once as its own Slurm job. Two known-good nodes are
given, as accept gives the nodes of the leaves that passed; the rail round (one more round) is not counted.

The confirmation (bisect.confirm_all: the node found run again beside a node that passed two runs, and the node that
padded its failing run beside another) is counted apart and together: "with confirming" is the rounds of both, held
to the same bound ceil(log2 N) + 1, and "confirmer passed" the fewest runs a final confirmer had passed.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from clusterforge.accept.bisect import SLOW, bisect, bound, confirm_all  # noqa: E402 - after the path to the sources
from clusterforge.admission.tests import expected_seconds  # noqa: E402


@dataclass(frozen=True)
class Ran:
    passed: bool


def positions(count: int) -> list[int]:
    if count <= 64:
        return list(range(count))
    return sorted({round(i * (count - 1) / 63) for i in range(64)})


def measure(count: int, repeat: int) -> dict[str, float]:
    nodes = [f"gpu{i:04d}" for i in range(count)]
    places = positions(count)
    rounds, jobs, cpu, confirmed, confirm_jobs, confirmer = [], [], [], [], [], []
    for attempt in range(repeat):
        started = time.process_time()
        for at in places:
            bad = nodes[at]
            submitted = []

            def run_round(trials, bad=bad, submitted=submitted):
                submitted.append(len(trials))
                return [Ran(bad not in t.nodes) for t in trials]

            found = bisect(nodes, ["ok01", "ok02"], run_round)
            assert found.nodes == [bad]
            halving = sum(submitted)
            [confirmation] = confirm_all(found, run_round)
            assert confirmation.verdict == SLOW
            if attempt == 0:
                rounds.append(found.rounds)
                jobs.append(halving)
                confirmed.append(found.rounds + len(confirmation.reruns))
                confirm_jobs.append(sum(submitted) - halving)
                confirmer.append(confirmation.last.passes)
        cpu.append((time.process_time() - started) / len(places))
    return {"worst": max(rounds), "median": statistics.median(rounds), "jobs": statistics.median(jobs),
            "cpu_ms": statistics.median(cpu) * 1000, "positions": len(places), "confirmed_worst": max(confirmed),
            "confirmed_median": statistics.median(confirmed), "confirm_jobs": max(confirm_jobs),
            "confirmer_min": min(confirmer)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 64, 1024])
    parser.add_argument("--round-s", type=float, default=expected_seconds("allreduce_multi", dcgm_level=2))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"one bad node, two known-good nodes; a round taken as {args.round_s:g} s (one allreduce_multi job)")
    print(f"{'nodes':>6}  {'positions':>9}  {'rounds worst':>12}  {'median':>6}  {'with confirming':>15}  "
          f"{'median':>6}  {'bound':>5}  {'log2 N':>6}  {'jobs':>5}  {'+confirm':>8}  {'confirmer passed':>16}  "
          f"{'CPU per bisection':>17}  {'wall on a cluster':>17}")
    for count in args.sizes:
        found = measure(count, args.repeat)
        wall = found["confirmed_worst"] * args.round_s
        print(f"{count:>6}  {found['positions']:>9}  {found['worst']:>12}  {found['median']:>6g}  "
              f"{found['confirmed_worst']:>15}  {found['confirmed_median']:>6g}  {bound(count):>5}  "
              f"{math.log2(count):>6.2f}  {found['jobs']:>5g}  {found['confirm_jobs']:>8}  "
              f"{'>= ' + str(found['confirmer_min']):>16}  {found['cpu_ms']:>14.3f} ms  {wall / 60:>13.0f} min")


if __name__ == "__main__":
    main()
