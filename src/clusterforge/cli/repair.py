"""`clusterforge repair`: what automatic repair is doing, and an admin's close of its breaker, through the controller.
Thin: arguments and printing; the loop answers for itself (repair/main.py's --status and --close-breaker)."""

from __future__ import annotations

import click

from ..errors import ClusterforgeError
from .exits import exit_statuses


@exit_statuses({0: "said, the breaker closed, or every BMC answered",
                1: "--bmcs: a BMC did not answer, or refused the login or its certificate (each named)",
                2: "a mistake in the arguments or the inventory, an inventory that repairs no profile, or a "
                   "controller that could not be reached or refused the command (named)"})
@click.command()
@click.argument("inventory", type=click.Path(dir_okay=False))
@click.option("--close-breaker", is_flag=True, help="Close the breaker: the loop starts new repairs again, and the "
              "faults before now no longer count toward opening it.")
@click.option("--bmcs", is_flag=True, help="Ask each power cycled node's BMC its power state from the controller, "
              "with the credentials and the TLS a power cycle uses: a line a node.")
def repair(inventory: str, close_breaker: bool, bmcs: bool) -> None:
    """Show what automatic repair is doing, or close its breaker.

    The repairs under way, each with what it waits for next and its deadline (UTC), the quarantined nodes with the
    resume that lifts each, the breaker, and the last repairs ended (docs/operations/repair.md).

    --close-breaker is an admin's close of the breaker, which opens where more nodes fault at once than
    Cluster(repair_breaker=...) allows and stays open until closed.

    --bmcs checks every BMC before a repair needs it (a password changed, a certificate renewed): the loop's own
    code asks each its power state, and nothing is powered."""
    if close_breaker and bmcs:
        raise click.UsageError("--close-breaker and --bmcs are two commands: give one")
    from ..reach.controller import Controller
    from ..reach.hosts import load
    from ..reach.ssh import Connections
    from ..render.repair import LAUNCHER

    valid, targets = load(inventory)
    if valid.repair is None:
        raise ClusterforgeError(f"{inventory}: no profile has Repair(mode='observe' or 'on'): nothing is repaired")
    if bmcs and not valid.repair.cycled:
        raise ClusterforgeError(f"{inventory}: no repaired node has a BMC it is power cycled through (Nodes(bmc=...))")
    with Connections([t for t in targets if t.name == valid.controller.name]) as connections:
        controller = Controller.over(connections, valid.controller.name)
        if bmcs:
            answer = controller.judged(f"{LAUNCHER} --bmcs", "the repair loop's check of the BMCs", (0, 1))
            click.echo(answer.out, nl=False)
            raise SystemExit(answer.rc)
        said = controller.ask(f"{LAUNCHER} {'--close-breaker' if close_breaker else '--status'}",
                              "the repair loop's " + ("close of its breaker" if close_breaker else "status"))
    click.echo(said, nl=False)
