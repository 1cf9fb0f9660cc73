"""The admission gate, where a profile of the inventory has admission (model/admission.py): on the controller, the
gate's program (gate/, shipped as one file, render/programs.py), its launcher, unit and plan (admission.json), the
service running them; and the holds of new nodes (docs/development/admission-design.md).

A node of a profile with admission that the controller has no admission record of is new: it is held in
``cf-gate-new-<node>`` after slurmctld knows it and before its slurmd first starts, so it registers into its hold and
takes no user's job until the gate has tested it. The record (``/var/lib/clusterforge/gate/admitted/<node>``) is
written only by the gate's pass, an admin's admission by hand, or here for a node whose slurmd ran before this run
when admission is turned on ("in service before the gate": it is not taken out of service to be tested). A deploy
killed anywhere creates a missing hold on the next run: a node whose hold was never made has no record, and its
slurmd never started, which only a run past its hold starts. Once made, a hold is noted on the node
(``/var/lib/clusterforge/gate/holds/<node>``), so that later runs do not ask slurmctld again: the gate, or an admin,
owns it from then.

Without admission anywhere, the gate's files go, its service stops, and the holds it would have lifted are deleted:
a hold no gate tests is a node out of service for good. The admitted records stay (a site turning admission on again
has its nodes' history).
"""

from __future__ import annotations

import json
import shlex

from .. import hostlists
from ..engine import ops
from ..engine.footprint import Footprint
from ..engine.run import Here, step
from ..engine.state import State
from ..engine.waits import shown
from ..gate import PLAN, STATE_DIR
from ..health import reservations
from ..model import ValidCluster
from ..render import admission
from ..render import gate as render
from ..render import programs

PACKAGES = ("python3",)
ADMITTED_BEFORE = "in service before the gate"


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """The program, launcher, unit and plan, the gate's directory, each admission node's record and hold note
    (whether they are there decides its hold), slurmd's unit (whether it ran decides it too); the gate's unit on the
    controller, read with admission or without (it is stopped there once admission is off); python3 there with
    admission."""
    on = bool(valid.admission) and "controller" in groups
    return Footprint(paths=(programs.GATE, render.LAUNCHER, render.UNIT_PATH, PLAN, STATE_DIR, render.ADMITTED_DIR,
                            render.HOLDS_DIR, *(render.admitted_path(n) for n in valid.admission),
                            *(render.hold_path(n) for n in valid.admission)),
                     shown=(PLAN,), units=(*((render.UNIT,) if "controller" in groups else ()),
                                           *(("slurmd.service",) if "compute" in groups else ())),
                     packages=PACKAGES if on else (), known=PACKAGES)


def held_command(node: str, hold: str) -> str:
    """The node's note that it made its hold, written after it: a run killed before the note makes it again
    (create_command makes nothing twice), a run after it does not ask slurmctld again."""
    return f"mkdir -p {render.HOLDS_DIR} && printf '%s\\n' {hold} > {render.hold_path(node)}"


def admitted_command(node: str, how: str) -> str:
    record = json.dumps({"how": how, "node": node}, sort_keys=True)
    return f"mkdir -p {render.ADMITTED_DIR} && printf '%s\\n' {shlex.quote(record)} > {render.admitted_path(node)}"


def _nodes_of(here: Here) -> dict[str, State]:
    """Each admission node of this run whose state was read, with that state (a node not in the run is decided by a
    run that has it)."""
    found = {}
    for machine in here.valid.machines:
        if machine.node is not None and machine.node.name in here.valid.admission:
            state = here.run.states.get(machine.name)
            if state is not None:
                found[machine.node.name] = state
    return found


def undecided(here: Here) -> dict[str, bool]:
    """The admission nodes of this run with neither a record on the controller nor their hold's note, each with
    whether its slurmd ran before this run: in service, or new."""
    controller = here.run.states.get(here.valid.controller.name)
    return {node: state.unit("slurmd").active for node, state in _nodes_of(here).items()
            if controller is not None and render.admitted_path(node) not in controller.paths
            and render.hold_path(node) not in state.paths}


@step("admission holds", footprint=footprint, on=("slurm",))
def gate_holds(here: Here) -> None:
    """Once slurmctld runs with this run's nodes and before any slurmd starts: each admission node without a record
    or a hold is recorded by the controller where its slurmd ran before this run (in service, not taken out of it to
    be tested), and holds itself where it did not (new, or never started). The node makes its own hold (root's
    scontrol, with the cluster's key, as on any Slurm host): where that fails, the node's run stops there, and its
    slurmd is never started unheld, whatever the other hosts go on with. Every Slurm host gets the operation, so that
    the compute nodes' slurmd operations come after it."""
    found = undecided(here)
    commands: list[str] = []
    if "controller" in here.groups:
        for node in sorted((n for n, ran in found.items() if ran), key=hostlists.natural_key):
            commands.append(shown(admitted_command(node, ADMITTED_BEFORE),
                                  f"{node}: {ADMITTED_BEFORE}, admitted without its tests"))
    node = here.machine.node.name if "compute" in here.groups and here.machine.node is not None else None
    if node in found and not found[node]:
        hold = reservations.name(reservations.NEW, node)
        commands += [shown(reservations.create_command(hold, node),
                           f"{node}: new, held in {hold} until the gate's tests pass"),
                     shown(held_command(node, hold), f"{node}: its hold noted")]
    ops.commands(here, name="admission: new nodes held before their slurmd starts", commands=commands,
                 otherwise="no new node to hold", shared=True)


@step("admission gate", footprint=footprint)
def gate(here: Here) -> None:
    if "controller" not in here.groups:
        return
    if not here.valid.admission:
        _gone(here)
        return
    ops.directory(here, name=f"the admission gate: {render.LIB_DIR}", path=render.LIB_DIR)
    program = ops.file(here, name=f"the admission gate: the program, {programs.GATE}", path=programs.GATE,
                       content=programs.gate_program(), atomic=True)
    launcher = ops.file(here, name=f"the admission gate: {render.LAUNCHER}", path=render.LAUNCHER,
                        content=render.launcher(), mode="0755", atomic=True)
    ops.directory(here, name="the admission gate: /etc/clusterforge", path=PLAN.rsplit("/", 1)[0])
    # Read by the gate at each pass: a new plan needs no restart.
    ops.file(here, name=f"the admission gate: its plan, {PLAN}", path=PLAN, content=admission.render(here.valid),
             atomic=True)
    ops.directory(here, name=f"the admission gate: {STATE_DIR}", path=STATE_DIR, mode="0700")
    unit = ops.file(here, name=f"the admission gate's unit {render.UNIT}", path=render.UNIT_PATH,
                    content=render.unit(here.valid))
    ops.systemd_reads(here, "the admission gate's unit", "systemd-clusterforge-gate", [unit])
    ops.service(here, name="the admission gate runs", unit=render.UNIT, inputs=(program, launcher, unit),
                why="its program changed")


def _gone(here: Here) -> None:
    """No admission anywhere: the service stopped, its holds deleted, its files removed."""
    unit = here.state.unit(render.UNIT)
    ops.stopped(here, name="no admission gate: its service stopped", unit=render.UNIT)
    if PLAN in here.state.paths or unit.active or unit.enabled:
        ops.commands(here, name="no admission gate: its holds deleted", otherwise="no hold to delete",
                     commands=[reservations.release_all_command()])
    for path in (render.UNIT_PATH, render.LAUNCHER, programs.GATE, PLAN):
        ops.absent(here, name=f"no admission gate: {path}", path=path)
