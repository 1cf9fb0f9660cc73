"""The loop's command line: a pass every ``--interval`` seconds for as long as systemd runs it, or one (``--once``);
``--status`` prints the repairs under way, the quarantined nodes and the breaker; ``--close-breaker`` is an admin's
close of the breaker (``clusterforge repair`` runs both on the controller)."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence

from ..slurm import commands
from ..slurm.commands import bound_s
from . import STATE_DIR, bmc, metrics
from .passes import Loop, close_breaker, utc
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
    return parser.parse_args(argv)


def power_cycler(plan: Plan):
    """The plan's BMC of each node, spoken through bmc.py; a node without one is named."""
    def cycle(node: str) -> str | None:
        planned = plan.nodes.get(node)
        if planned is None or planned.bmc is None:
            return f"{node} has no BMC in the inventory"
        outcome = bmc.power_cycle(planned.bmc, cipher_suite=planned.bmc.cipher_suite)
        return None if outcome.ok else outcome.why
    return cycle


def status(store: Store, now: float) -> str:
    lines = []
    breaker = store.breaker()
    lines.append(f"breaker: open since {utc(breaker.open_since)}: {breaker.why}" if breaker.open else
                 "breaker: closed")
    for name, node in store.nodes().items():
        if node.repair is not None:
            r = node.repair
            left = f", deadline {utc(r.deadline)} (in {int(r.deadline - now)} s)" if r.deadline else ""
            lines.append(f"{name}: {r.step.replace('_', ' ')} (attempt {r.number}) for {r.fault}{left}")
        if node.quarantined:
            lines.append(f"{name}: quarantined ({node.quarantined}); an admin's resume lifts it")
    ended = store.history()[-10:]
    if ended:
        lines.append("last ended:")
        lines += [f"  {utc(h['ended_at'])} {h['node']}: {h['outcome']} ({h['fault']})" for h in ended]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = arguments(argv)
    store = Store(args.state_dir)
    if args.status:
        sys.stdout.write(status(store, time.time()))
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
