"""A GPU node's driver moves only while the node runs no job, and the node reboots into it before it runs another.

Before anything else in the run (before any operation exists), the controller drains every compute node whose
installed driver or fabric manager is another version than the inventory's, with ``cf:stack:driver``, and the run
waits until no job runs there: ``--data drain_wait=SECONDS`` (0 by default: look once), as for removed nodes. While
jobs run, the run stops naming them and changes nothing on any host; a job is never killed. The stack step then
moves the packages of the drained, idle nodes (roles/stack.py), and at the end of the run the controller has Slurm
reboot each node still drained for ``cf:stack`` (``scontrol reboot ASAP nextstate=resume``): the new kernel module
loads, the node registers, and Slurm resumes it, unless its check at boot finds it sick (the reboot gate,
docs/operations/health.md). A run interrupted between the move and the reboot leaves the node drained for
``cf:stack``: the next run reboots it.

A node held by anyone else (an admin's drain, Slurm's DOWN or ``Kill task failed``, the health check's drain, a
maintenance reservation) is never drained over, moved under its holder nor rebooted: Slurm's registration after a
reboot with ``nextstate=resume`` would lift its holder's drain. While one is among the nodes whose driver moves, the
run stops before it changes anything, naming each and who holds it; ``clusterforge roll --apply --reboot`` moves the
others, batch by batch, and leaves it. A node the roll holds (``cf:roll``) is the roll's run of this deploy: its own.
Every command on a node's state is built by slurm/drains.py, which reads the state again just before it acts.
"""

from __future__ import annotations

from collections.abc import Mapping
from .. import hostlists
from ..errors import DeployError, for_pyinfra
from ..slurm import drains
from ..model import ValidCluster
from ..model.stack import upstream
from ..render.stack import gpu_parts
from ..engine import ops
from .drain_wait import drain_and_wait, jobs_on, jobs_still_run, node_states
from ..engine.facts import accounting_state
from ..engine.run import DeployRun, Here, RemoteHost, step
from ..engine.state import State
from ..engine.waits import shown


CAUSE = drains.STACK
# The drains under which this run moves a node's driver and reboots it: its own, and a roll's (the deploy limited
# to the roll's batch).
OWNERS = (drains.STACK, drains.ROLL)
# The parts whose move loads a new kernel module or needs the fabric set up again: the node is drained and rebooted.
REBOOTING = ("driver", "fabric manager")


def driver_moves(valid: ValidCluster, states: Mapping[str, State]) -> dict[str, str]:
    """Compute node -> the driver version it moves to: those whose installed driver or fabric manager packages are
    another version than the inventory's (a first install is no move: no driver ran there)."""
    out = {}
    for machine in valid.machines:
        found = states.get(machine.name)
        if found is None:
            continue
        parts = {p.name: p for p in gpu_parts(valid, machine)}
        if any(found.packages.get(name, part.version) != part.version
               for key in REBOOTING if (part := parts.get(key)) for name in part.packages):
            out[machine.name] = parts["driver"].version
    return out


def drain(version: str) -> drains.Drain:
    return drains.Drain(CAUSE, "driver", f"moves to {upstream(version)}")


def drain_for_driver_moves(run: DeployRun) -> None:
    """Once per run (see the module's docstring); every host of the run stops with the same error."""
    error = run.once("driver moves drained", lambda: _drain(run, run.drain_wait))
    if error is not None:
        raise for_pyinfra(error)


def _drain(run: DeployRun, wait: int) -> DeployError | None:
    valid = run.valid
    moves = driver_moves(valid, run.states)
    controller = run.host_of(valid.controller.name)
    if not moves or controller is None:
        return None
    names = hostlists.compress(sorted(moves, key=hostlists.natural_key), valid.version)
    if run.recorder is not None:  # `clusterforge plan`: a note with the jobs the deploy would wait for
        jobs = jobs_on(controller, names)
        run.recorder.first.append(
            f"{names}: the GPU driver moves ({', '.join(sorted(set(moves.values())))}); the deploy drains "
            f"{'it' if len(moves) == 1 else 'them'} first ({drain(next(iter(moves.values()))).reason!r}), "
            + (f"and stops while jobs run there: {'; '.join(jobs)} (--data drain_wait=SECONDS waits for them)"
               if jobs else "moves the packages, and has Slurm reboot them into the new driver"))
        return None
    held = held_by_others(controller, names)
    if held:
        return DeployError(
            f"{hostlists.compress(sorted(held, key=hostlists.natural_key), valid.version)}: the GPU driver moves, but "
            f"{'it is' if len(held) == 1 else 'they are'} held by another: "
            + "; ".join(f"{name} {state!r}" for name, state in sorted(held.items()))
            + ". clusterforge neither moves a driver under someone else's hold nor reboots the node (Slurm would lift "
            "the hold when it is back). Nothing was changed on any host. Let it go, or move the others in batches, "
            "leaving it: clusterforge roll --apply --reboot")
    if getattr(run.pyinfra.config, "DRY", False):
        return None
    by_version: dict[str, list[str]] = {}
    for name, version in moves.items():
        by_version.setdefault(version, []).append(name)
    groups = [(hostlists.compress(nodes, valid.version), drain(version)) for version, nodes in by_version.items()]
    ok, jobs, stderr = drain_and_wait(controller, groups, names, wait)
    if not ok:
        return DeployError(f"{controller.name}: could not drain {names}, whose GPU driver moves: {stderr}")
    if jobs:
        they = "it is" if len(moves) == 1 else "they are"
        return DeployError(jobs_still_run(f"{names}: the GPU driver moves, so {they} drained "
                                          f"({groups[0][1].reason!r})", jobs, wait))
    return None


def held_by_others(controller: RemoteHost, names: str) -> dict[str, str]:
    """The nodes of the hostlist ``names`` held by anyone but this run or a roll, with their "state reason"."""
    return {n.name: f"{n.state} {n.reason}".strip() for n in node_states(controller, names).values()
            if n.held_by_another(OWNERS)}


@step("nodes reboot into their new driver", on=("controller",))
def reboot_into_new_driver(here: Here) -> None:
    """On the controller, at the end of the run: Slurm reboots each node this run moved the driver of, or that is
    still drained for it (a run interrupted after the move), once it is idle, and resumes it when it is back."""
    valid = here.valid
    known = {node.name for node in valid.nodes}
    moved = driver_moves(valid, here.run.states)
    waiting = [n.name for n in accounting_state(here).drained if n.name in known and n.resumable_for(CAUSE)]
    names = sorted({*moved, *waiting}, key=hostlists.natural_key)
    if names and "RebootProgram" not in valid.slurm_conf:
        here.warn_once(f"{hostlists.compress(names, valid.version)} run a new GPU driver only after a reboot, and "
                       "this cluster has no RebootProgram (Health(enabled=False)): reboot them, then resume them")
        names = []
    # Only a node this run (or a roll) holds, read again just before; one already rebooting is not asked again.
    command = shown(drains.reboot_command(names, OWNERS, drains.Drain(CAUSE, "driver", "reboot into the new driver")),
                    f"Slurm reboots {hostlists.compress(names, valid.version)} into the new GPU driver once idle, "
                    "and resumes them when they are back (not a node someone else holds)") if names else None
    ops.commands(here, name="nodes reboot into their new GPU driver", commands=[command] if command else [],
                 otherwise="no node waits for a reboot into a new GPU driver")
