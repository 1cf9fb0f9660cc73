"""`clusterforge admit`: admit nodes the admission gate holds, by hand, through the controller. Thin: arguments and
printing; the work is accept/admit.py. Imports testinfra (and the inventory's pyinfra groups) only when it runs."""

from __future__ import annotations

import click

from .exits import exit_statuses
from .limits import limited
from .phases import announce


@exit_statuses({0: "each node named is admitted (its hold deleted), or was not held",
                2: "a mistake in the arguments or the inventory, or a controller that could not be reached or "
                   "refused a command (named; what was done before it stays done)"})
@click.command()
@click.argument("inventory", type=click.Path(dir_okay=False))
@click.argument("nodes", metavar="HOSTS")
def admit(inventory: str, nodes: str) -> None:
    """Admit held nodes by hand: users' jobs may run there now.

    HOSTS is a hostlist of nodes the admission gate holds (cf-gate-new-<node>, cf-gate-repaired-<node>): each hold is
    deleted once the gate's tests queued or running in it are cancelled, and the gate's own drain of a failed test
    is lifted. Another drain (an admin's, the health check's) stays, and is named. The gate records the node
    "admitted by hand"."""
    from ..accept.admit import admit as admit_nodes
    from ..reach.controller import Controller
    from ..reach.hosts import load
    from ..reach.ssh import Connections

    valid, targets = load(inventory)
    named = limited(nodes, valid, inventory, among={n.name for n in valid.nodes}, kind="compute nodes",
                    argument="HOSTS") or []
    announce("admit", valid.controller.name, targets, timed=False)
    with Connections([t for t in targets if t.name == valid.controller.name]) as connections:
        # A refusal of the controller's, or the controller not reached, is ControllerRefused: exit 2, named.
        for done in admit_nodes(named, Controller.over(connections, valid.controller.name)):
            click.echo(done.line())
