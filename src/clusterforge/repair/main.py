"""The loop's command line: a pass every ``--interval`` seconds for as long as systemd runs it, or one (``--once``);
``--status`` prints the repairs under way, the quarantined nodes, the breaker and the last repairs ended (status.py;
``--json`` for `clusterforge check`); ``--close-breaker`` is an admin's close of the breaker; ``--bmcs`` asks each
BMC of the plan its power state, as a power cycle would (``clusterforge repair`` runs them on the controller)."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence
from typing import TextIO

from ..slurm import commands
from ..slurm.commands import bound_s
from . import STATE_DIR, bmc, metrics, status
from .passes import Loop, close_breaker
from .plan import PATH, Plan, load
from .store import Store

DEFAULT_INTERVAL_S = 10.0   # render/repair.py's INTERVAL_S, which the unit passes
TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="clusterforge-repair",
        description="Returns nodes the health check drained for a hardware fault to service: a GPU reset, a reboot "
                    "through Slurm, a power cycle through the BMC, within the inventory's budgets.")
    parser.add_argument("--plan", default=PATH, metavar="FILE", help=f"the inventory's policies (default {PATH})")
    parser.add_argument("--state-dir", default=STATE_DIR, metavar="DIR",
                        help=f"the repairs under way, the attempts, the breaker (default {STATE_DIR})")
    parser.add_argument("--metrics-dir", default=TEXTFILE_DIR, metavar="DIR",
                        help=f"node exporter's textfile directory, where it exists (default {TEXTFILE_DIR})")
    parser.add_argument("--interval", type=bound_s, default=DEFAULT_INTERVAL_S, metavar="SECONDS",
                        help=f"the time between passes (default {DEFAULT_INTERVAL_S:g})")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--once", action="store_true", help="one pass, then exit")
    what.add_argument("--status", action="store_true", help="the repairs under way, quarantines and the breaker")
    what.add_argument("--close-breaker", action="store_true", help="close the breaker: new repairs from now on")
    what.add_argument("--bmcs", action="store_true", help="ask each power cycled node's BMC its power state, as a "
                                                          "power cycle would: its login, its TLS, its answer")
    parser.add_argument("--json", action="store_true",
                        help=f"with --status: as JSON, each node's last {status.PER_NODE} repairs ended, "
                             f"{status.OVERALL} in all")
    args = parser.parse_args(argv)
    if args.json and not args.status:
        parser.error("--json goes with --status")
    return args


def power_cycler(plan: Plan):
    """The plan's BMC of each node, spoken through bmc.py; a node without one is named."""
    def cycle(node: str) -> str | None:
        planned = plan.nodes.get(node)
        if planned is None or planned.bmc is None:
            return f"{node} has no BMC in the inventory"
        outcome = bmc.power_cycle(planned.bmc, cipher_suite=planned.bmc.cipher_suite)
        return None if outcome.ok else outcome.why
    return cycle


BMC_CHECK_TIMEOUT_S = 20.0   # a BMC's answer to --bmcs, each in turn: a dead one costs this, not an action's bound


def check_bmcs(plan: Plan, out: TextIO | None = None) -> int:
    """Each node's BMC of ``plan`` asked its power state, in node order, a line each; a summary last. 0 where every
    one answered, 1 where any did not (each named with why)."""
    out = out or sys.stdout
    planned = {name: node.bmc for name, node in sorted(plan.nodes.items()) if node.bmc is not None}
    failed = 0
    for name, node in planned.items():
        outcome = bmc.status(node, cipher_suite=node.cipher_suite, timeout_s=BMC_CHECK_TIMEOUT_S)
        failed += not outcome.ok
        print(f"{name}: {'ok' if outcome.ok else 'FAILED'}: {outcome.said}", file=out, flush=True)
    print(f"{len(planned) - failed} of {len(planned)} BMCs answered" if planned else
          "no node is power cycled: no BMC in the plan", file=out)
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    if args.bmcs:
        plan = load(args.plan)
        if plan is None:
            print(f"{args.plan} could not be read (run it as root, where the deploy wrote it)", file=sys.stderr)
            return 2
        return check_bmcs(plan)
    store = Store(args.state_dir)
    if args.status:
        try:
            said = status.read(store, time.time())
        except PermissionError as error:
            # The state dir is root's: said plainly, never read as "nothing under way".
            print(f"{error.filename}: permission denied: --status reads root's files (run it as root)",
                  file=sys.stderr)
            return 1
        sys.stdout.write(status.to_json(said) if args.json else status.text(said))
        return 0
    if args.close_breaker:
        was = close_breaker(store, time.time())
        print("breaker closed: new repairs from now on" if was else "the breaker was not open")
        return 0
    signal.signal(signal.SIGTERM, _stop)
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    loop = None
    try:
        while True:
            # Read again each pass: the deploy replaces it.
            plan = load(args.plan)
            if plan is None:
                log(f"{args.plan} could not be read: no node is repaired")
            else:
                if loop is None:
                    loop = Loop(store, plan, commands.run, power_cycler(plan), log=log)
                loop.plan, loop.power_cycle = plan, power_cycler(plan)
                loop.one_pass()
                metrics.write(args.metrics_dir, metrics.text(store.history(), store.nodes(), store.breaker(),
                                                             time.time()))
            if args.once:
                return 0 if plan is not None else 1
            time.sleep(args.interval)
    except (KeyboardInterrupt, SystemExit):
        commands.kill_all()
        return 0


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)
