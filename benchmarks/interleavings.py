"""Many more seeded interleavings than CI runs (tests/health/test_interleavings.py: the health program, in process;
tests/realslurm/test_gate_interleavings.py: the gate's commands against the real slurmctld); prints how many ran,
how long they took and every failing seed. Asserts nothing.

    .venv/bin/python benchmarks/interleavings.py [--seeds 2000] [--steps 120] [--slurm 22.05 --slurm-seeds 20]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests")]


def node_side(seeds: int, steps: int) -> None:
    from health import test_interleavings as t

    from clusterforge.health import program

    program._locked = lambda state_dir: True  # one process runs them all (see the test)
    failed, started = [], time.monotonic()
    for seed in range(seeds):
        with tempfile.TemporaryDirectory() as scratch:
            os.environ.update(CLUSTERFORGE_HEALTH_KMSG=f"{scratch}/kmsg", CLUSTERFORGE_HEALTH_BOOT_ID=f"{scratch}/boot_id",
                              CLUSTERFORGE_HEALTH_SITE_DIR=f"{scratch}/none")
            world = t.World(Path(scratch), random.Random(seed))
            try:
                with contextlib.redirect_stdout(io.StringIO()):  # what the program says of each check
                    for _ in range(steps):
                        world.step()
            except AssertionError as error:
                failed.append(f"seed {seed}: {str(error)[:300]}")
    took = time.monotonic() - started
    print(f"health program: {seeds} sequences x {steps} steps in {took:.1f} s ({seeds * steps / took:.0f} steps/s), "
          f"{len(failed)} failing")
    for line in failed:
        print(f"  {line}")


def controller_side(version: str, seeds: int, steps: int) -> None:
    from realslurm import test_gate_interleavings as t

    failed, started = t.run_seeds(version, range(seeds), steps)
    took = time.monotonic() - started
    print(f"gate on slurmctld {version}: {seeds} sequences x {steps} steps in {took:.1f} s, {len(failed)} failing")
    for line in failed:
        print(f"  {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--slurm", action="append", default=[], help="a Slurm release to run the gate against")
    parser.add_argument("--slurm-seeds", type=int, default=20)
    parser.add_argument("--slurm-steps", type=int, default=60)
    args = parser.parse_args()
    node_side(args.seeds, args.steps)
    for version in args.slurm:
        controller_side(version, args.slurm_seeds, args.slurm_steps)


if __name__ == "__main__":
    main()
