"""`clusterforge repair`: what automatic repair is doing, and an admin's close of its breaker, through the controller.
Thin: arguments and printing; the loop answers for itself (repair/main.py's --status and --close-breaker)."""

from __future__ import annotations

import click

from ..errors import ClusterforgeError
from .exits import exit_statuses


@exit_statuses({0: "said, or the breaker closed",
                2: "a mistake in the arguments or the inventory, an inventory that repairs no profile, or a "
                   "controller that could not be reached or refused the command (named)"})
@click.command()
@click.argument("inventory", type=click.Path(dir_okay=False))
@click.option("--close-breaker", is_flag=True, help="Close the breaker: the loop starts new repairs again, and the "
              "faults before now no longer count toward opening it.")
def repair(inventory: str, close_breaker: bool) -> None:
    """Show what automatic repair is doing, or close its breaker.

    The repairs under way, each with what it waits for next and its deadline (UTC), the quarantined nodes with the
    resume that lifts each, the breaker, and the last repairs ended (docs/operations/repair.md).

    --close-breaker is an admin's close of the breaker, which opens where more nodes fault at once than
    Cluster(repair_breaker=...) allows and stays open until closed."""
    from ..reach.controller import Controller
    from ..reach.hosts import load
    from ..reach.ssh import Connections
    from ..render.repair import LAUNCHER

    valid, targets = load(inventory)
    if valid.repair is None:
        raise ClusterforgeError(f"{inventory}: no profile has Repair(mode='observe' or 'on'): nothing is repaired")
    with Connections([t for t in targets if t.name == valid.controller.name]) as connections:
        controller = Controller.over(connections, valid.controller.name)
        said = controller.ask(f"{LAUNCHER} {'--close-breaker' if close_breaker else '--status'}",
                              "the repair loop's " + ("close of its breaker" if close_breaker else "status"))
    click.echo(said, nl=False)
