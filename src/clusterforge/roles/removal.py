"""Nodes removed from the inventory leave the cluster only once no job runs on them.

Before anything else in the run (before any operation exists), the controller drains every node that its Slurm files
still name and the inventory no longer does, with a reason that says it was clusterforge, and the run waits until no
job runs there: ``--data drain_wait=SECONDS`` (0 by default: look once). If jobs still run, the run stops naming
them, and nothing else is changed on any host; once they end, the next run removes the nodes with the release's
procedure, exactly as it adds them. This happens before the operations because the run must stop entirely while
jobs run, which pyinfra does only for an error raised while the operations are prepared. A node already drained
or down (by an admin, or by Slurm) keeps its state and reason: a deploy never changes or clears them. A removed
node is not in the run, so an unreachable one blocks nothing.

A node put back into the inventory while still drained for its removal (its jobs kept it from leaving) is resumed
by the controller at the end of the next run (``nodes_back``); drains.py decides whose drain it is.
"""

from __future__ import annotations

from .. import hostlists
from ..errors import DeployError, for_pyinfra
from ..slurm import drains
from ..model import ValidCluster
from ..engine import ops
from .drain_wait import drain_and_wait, jobs_on, jobs_still_run
from ..engine.facts import accounting_state
from .slurm_change import applied_copy, slurm_file
from ..engine.run import DeployRun, Here, step
from ..engine.waits import shown


def removed(valid: ValidCluster, slurm_conf: str | None) -> list[str]:
    """The nodes a slurm.conf names that the inventory does not."""
    named: list[str] = []
    for raw in (slurm_conf or "").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.lower().startswith("nodename="):
            expression = line.split()[0].split("=", 1)[1]
            if expression.lower() != "default":
                named += hostlists.expand(expression)
    known = {n.name for n in valid.nodes}
    return sorted(dict.fromkeys(n for n in named if n not in known), key=hostlists.natural_key)


def drain_removed_nodes(run: DeployRun) -> None:
    """Once per run (see the module's docstring); every host of the run stops with the same error."""
    error = run.once("removed nodes drained", lambda: _drain(run, run.drain_wait))
    if error is not None:
        raise for_pyinfra(error)


def removed_from(run: DeployRun) -> str | None:
    """The slurm.conf the controller runs on (its applied copy), or has: what names the nodes removal compares."""
    found = run.states.get(run.valid.controller.name)
    if found is None:
        return None
    return found.texts.get(applied_copy("slurm.conf"), found.texts.get(slurm_file("slurm.conf")))


def _drain(run: DeployRun, wait: int) -> DeployError | None:
    valid = run.valid
    gone = removed(valid, removed_from(run))
    controller = run.host_of(valid.controller.name)
    if not gone or controller is None:
        return None
    names = hostlists.compress(gone, valid.version)
    if run.recorder is not None:  # `clusterforge plan`: which nodes would be drained, and the jobs there now
        run.recorder.drain = gone
        run.recorder.drain_jobs = jobs_on(controller, names)
        return None
    if getattr(run.pyinfra.config, "DRY", False):
        return None
    ok, jobs, stderr = drain_and_wait(controller, [(names, drains.REMOVED)], names, wait)
    if not ok:
        return DeployError(f"{controller.name}: could not drain {names}, removed from the inventory: {stderr}")
    if jobs:
        return DeployError(jobs_still_run(f"{names} left the inventory and {'is' if len(gone) == 1 else 'are'} drained "
                                          f"({drains.REMOVED.reason!r})", jobs, wait))
    return None


@step("nodes back in the inventory", on=("controller",))
def nodes_back(here: Here) -> None:
    """On the controller, once its daemons run: the nodes of the inventory that are still drained for their removal
    are resumed (a removal the deploy refused while jobs ran, then undone in the inventory)."""
    valid = here.valid
    known = {node.name for node in valid.nodes}
    back = [n.name for n in accounting_state(here).drained if n.name in known and n.resumable_for(drains.REMOVED.cause)]
    names = hostlists.compress(back, valid.version) if back else ""
    command = shown(drains.resume_command(back, drains.REMOVED.cause),
                    f"resume {names}: back in the inventory, drained by clusterforge for its removal (not if an "
                    "admin or Slurm has taken the node over since)")
    ops.commands(here, name=f"resume {names}, back in the inventory" if back else "nodes back in the inventory",
                 commands=[command] if back else [], otherwise="no node of the inventory is drained for its removal")
