"""The gate's command line: a pass every ``--interval`` seconds for as long as systemd runs it, or one (``--once``)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Sequence

from ..admission import tests
from ..slurm import commands
from ..slurm.commands import bound_s
from . import PLAN, STATE_DIR
from .passes import PENDING_BOUND_S, Gate, load_plan
from .store import Store

DEFAULT_INTERVAL_S = 5.0  # render/gate.py's INTERVAL_S, which the unit passes


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="clusterforge-gate",
        description="Tests each node held in a cf-gate-* reservation with Slurm jobs inside it; releases it when "
                    "every test passes, drains it with the failing number when one does not.")
    parser.add_argument("--plan", default=PLAN, metavar="FILE",
                        help=f"the tests of each node, rendered by the deploy (default {PLAN})")
    parser.add_argument("--state-dir", default=STATE_DIR, metavar="DIR",
                        help=f"the rounds under way, the admitted nodes and their results (default {STATE_DIR})")
    parser.add_argument("--interval", type=bound_s, default=DEFAULT_INTERVAL_S, metavar="SECONDS",
                        help=f"the time between passes (default {DEFAULT_INTERVAL_S:g})")
    parser.add_argument("--pending-bound", type=bound_s, default=PENDING_BOUND_S, metavar="SECONDS",
                        help="how long a test may wait to start in its hold before the node is drained "
                             f"'cf:gate:cannot run' (default {PENDING_BOUND_S:g})")
    parser.add_argument("--once", action="store_true", help="one pass, then exit")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    signal.signal(signal.SIGTERM, _stop)
    # The plan is read again each pass, once the pass has read the holds: the deploy replaces it.
    gate = Gate(Store(args.state_dir), {}, commands.run, tests.job_script, tests.judge,
                os.path.join(args.state_dir, "scripts"), log=lambda text: print(text, file=sys.stderr, flush=True),
                pending_bound_s=args.pending_bound, reload=lambda: load_plan(args.plan), kill=commands.kill_all)
    try:
        while True:
            gate.one_pass()
            if args.once:
                return 0
            time.sleep(args.interval)
    except (KeyboardInterrupt, SystemExit):
        # A pass stopped mid-way has killed its steps' commands and waited for its steps (Gate._stop); this kills a
        # read of the pass's own, made before the steps.
        commands.kill_all()
        return 0


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)
