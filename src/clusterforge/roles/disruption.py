"""A deploy takes at most the inventory's budget of compute nodes out of service at once
(``Cluster(disruption_budget=)``, 4 by default): the nodes whose GPU driver moves and the nodes removed from the
inventory, counted before anything changes, less those already out of service (drained, down, rebooting, in
maintenance, whoever's). Beyond it the run stops before it changes anything on any host, with the count and the way
to do it in batches: ``clusterforge roll --apply --reboot`` for a driver move (at most --batch nodes out at a time),
fewer nodes removed per deploy for a removal. `clusterforge plan` says so before."""

from __future__ import annotations

from .. import hostlists
from ..errors import DeployError, for_pyinfra
from .drain_wait import node_states
from .driver_move import driver_moves
from .removal import removed, removed_from
from ..engine.run import DeployRun


def refuse_beyond_budget(run: DeployRun) -> None:
    """Once per run, before the drains; every host of the run stops with the same error."""
    error = run.once("disruption budget", lambda: _beyond(run))
    if error is not None:
        raise for_pyinfra(error)


def _beyond(run: DeployRun) -> DeployError | None:
    valid = run.valid
    controller = run.host_of(valid.controller.name)
    moving = sorted(driver_moves(valid, run.states))
    leaving = removed(valid, removed_from(run))
    wanted = sorted({*moving, *leaving}, key=hostlists.natural_key)
    if controller is None or len(wanted) <= valid.disruption_budget:
        return None
    states = node_states(controller, hostlists.compress(wanted, valid.version))
    new = [n for n in wanted if not (states[n].out_of_service if n in states else False)]
    if len(new) <= valid.disruption_budget:
        return None
    names = hostlists.compress(new, valid.version)
    reasons = [(set(new) & set(moving), "their GPU driver moves",
                f"move the driver in batches: clusterforge roll --apply --reboot --batch {valid.disruption_budget} "
                "(the roll deploys to each batch)"),
               (set(new) & set(leaving), "they left the inventory",
                f"remove at most {valid.disruption_budget} nodes per deploy")]
    why = " and ".join(what for found, what, _ in reasons if found)
    how = [way for found, _, way in reasons if found]
    message = (f"{names}: {len(new)} nodes would go out of service at once ({why}), more than this cluster's "
               f"disruption budget of {valid.disruption_budget} (Cluster(disruption_budget=...)). Nothing was "
               f"changed on any host. {'; or '.join(how).capitalize()}; or raise the budget in the inventory")
    if run.recorder is not None:  # `clusterforge plan`: said first, and the plan goes on
        run.recorder.first.append(f"the deploy would stop before any change: {message}")
        return None
    return DeployError(message)

