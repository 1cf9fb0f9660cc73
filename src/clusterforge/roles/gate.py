"""The admission gate, where a profile of the inventory has admission (model/admission.py): on the controller, the
gate's program (gate/, shipped as one file, render/programs.py), its launcher, unit and plan (admission.json), the
service running them; and the holds of new nodes (docs/development/admission-design.md).

A node of a profile with admission that the controller has no admission record of is new: it is held in
``cf-gate-new-<node>`` after slurmctld knows it and before its slurmd first starts, so it registers into its hold and
takes no user's job until the gate has tested it. The record (``/var/lib/clusterforge/gate/admitted/<node>``) is
written only by the gate's pass, an admin's admission by hand, or here for a node whose slurmd ran before this run
when admission is turned on ("in service before the gate": it is not taken out of service to be tested). A deploy
killed anywhere creates a missing hold on the next run: a node whose hold was never made has no record, and its
slurmd never started, which only a run past its hold starts. The controller makes the holds (its scontrol has
credentials; with auth/slurm a node's own have none before its slurmd runs), at the request of each new node's own
operation, which fails where its hold was not made: pyinfra goes on with the hosts that have not failed, so a node
whose hold failed must fail itself to keep its slurmd from starting unheld. Once made, a hold is noted on the node
(``/var/lib/clusterforge/gate/holds/<node>``), so that later runs do not ask slurmctld again: the gate, or an admin,
owns it from then.

A node the controller has admitted that comes back installed anew (reimaged after an RMA, say: none of the records
an earlier deploy leaves on every host, and no hold note) is not new and not known good either: it is held in
``cf-gate-repaired-<node>``, the same way and at the same point, until the gate has tested it again.

Without admission anywhere, the gate's files go, its service stops, and the holds it would have lifted are deleted:
a hold no gate tests is a node out of service for good. The admitted records stay (a site turning admission on again
has its nodes' history).
"""

from __future__ import annotations

import json
import shlex

from .. import hostlists
from ..engine import ops, remote
from ..engine.change import Change, Command
from ..engine.footprint import Footprint
from ..engine.run import DeployRun, Here, call, step
from ..engine.state import APPLIED_DIR, State
from ..errors import DeployError, for_pyinfra
from ..gate import PLAN, STATE_DIR
from ..gate.slurm import RUNS_DIR
from ..slurm import reservations
from ..model import ValidCluster
from ..render import admission
from ..render import gate as render
from ..render import programs

PACKAGES = ("python3",)
ADMITTED_BEFORE = "in service before the gate"


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """The program, launcher, unit and plan, the gate's directory; what decides a node's hold: the controller's
    records of the nodes, the node's own note of its hold (their directories listed: the controller has a record of
    each node, a node the note of its own hold alone), and whether its slurmd ran; the gate's unit on the controller,
    read with admission or without (it is stopped there once admission is off); python3 there with admission. Listed,
    not each named: every host naming every node's record and note read grew with the nodes, and the run with their
    square."""
    controller = "controller" in groups
    return Footprint(paths=(programs.GATE, render.LAUNCHER, render.UNIT_PATH, PLAN, STATE_DIR, render.ADMITTED_DIR,
                            *((RUNS_DIR,) if "compute" in groups else ()), render.HOLDS_DIR),
                     listed=(*((render.ADMITTED_DIR,) if controller else ()), render.HOLDS_DIR),
                     shown=(PLAN,), units=(*((render.UNIT,) if controller else ()),
                                           *(("slurmd.service",) if "compute" in groups else ())),
                     packages=PACKAGES if valid.admission and controller else (), known=PACKAGES)


def held_command(node: str, hold: str) -> str:
    """The node's note that its hold was made, written after it: a run killed before the note makes it again
    (create_command makes nothing twice), a run after it does not ask slurmctld again."""
    return f"mkdir -p {render.HOLDS_DIR} && printf '%s\\n' {hold} > {render.hold_path(node)}"


def admitted_command(node: str, how: str) -> str:
    record = json.dumps({"how": how, "node": node}, sort_keys=True)
    return f"mkdir -p {render.ADMITTED_DIR} && printf '%s\\n' {shlex.quote(record)} > {render.admitted_path(node)}"


def _nodes_of(run: DeployRun) -> dict[str, State]:
    """Each admission node of this run whose state was read, with that state (a node not in the run is decided by a
    run that has it)."""
    found = {}
    for machine in run.valid.machines:
        if machine.node is not None and machine.node.name in run.valid.admission:
            state = run.states.get(machine.name)
            if state is not None:
                found[machine.node.name] = state
    return found


def undecided(run: DeployRun) -> dict[str, bool]:
    """The admission nodes of this run with neither a record on the controller nor their hold's note, each with
    whether its slurmd ran before this run: in service, or new."""
    controller = run.states.get(run.valid.controller.name)
    return {node: state.unit("slurmd").active for node, state in _nodes_of(run).items()
            if controller is not None and render.admitted_path(node) not in controller.paths
            and render.hold_path(node) not in state.paths}


def new_nodes(run: DeployRun) -> tuple[str, ...]:
    return tuple(sorted((n for n, ran in undecided(run).items() if not ran), key=hostlists.natural_key))


def installed_anew(state: State) -> bool:
    """The host has no record of any deploy before this run: every deploy leaves some (engine/ops.py's records)."""
    return not any(path.startswith(f"{APPLIED_DIR}/") for path in state.texts)


def reimaged_nodes(run: DeployRun) -> tuple[str, ...]:
    """The admission nodes of this run the controller has admitted that come back installed anew, with no hold note:
    held as repaired."""
    controller = run.states.get(run.valid.controller.name)
    if controller is None:
        return ()
    return tuple(sorted((node for node, state in _nodes_of(run).items()
                         if render.admitted_path(node) in controller.paths and render.hold_path(node) not in state.paths
                         and installed_anew(state)), key=hostlists.natural_key))


def holds_of(run: DeployRun) -> dict[str, str]:
    """Each node this run holds, with the hold's cause: new, or repaired (reimaged). Once per run."""
    return run.once("admission holds of the run", lambda: {**{n: reservations.NEW for n in new_nodes(run)},
                                                           **{n: reservations.REPAIRED for n in reimaged_nodes(run)}})


def holds_command(nodes: tuple[str, ...], causes: dict[str, str] | None = None) -> str:
    """The controller's one command that holds every node of the run it holds (one SSH session, however many
    nodes), each for its cause (new where ``causes`` names none), printing ``refused <node>: <why>`` for each hold
    slurmctld did not make."""
    return "; ".join(
        f"out=$({reservations.create_command(reservations.name((causes or {}).get(n, reservations.NEW), n), n)} "
        f"2>&1) || echo \"refused {n}: $out\"" for n in nodes) + "; true"


def _refused(run: DeployRun) -> dict[str, str]:
    """Once per run, on the controller: the holds of the run's nodes made; why each one refused was not."""
    causes = holds_of(run)
    nodes = tuple(sorted(causes, key=hostlists.natural_key))

    def make() -> dict[str, str]:
        controller = run.host_of(run.valid.controller.name)
        if controller is None:
            return {n: f"{run.valid.controller.name} is not in this run" for n in nodes}
        ok, said = remote.run(controller, holds_command(nodes, causes))
        if not ok:
            why = (said.stderr or said.stdout).strip().splitlines()
            return {n: why[-1] if why else "the command failed" for n in nodes}
        refused = {}
        for line in said.stdout.splitlines():
            node, colon, why = line.removeprefix("refused ").partition(": ")
            if line.startswith("refused ") and colon:
                refused[node] = why.strip() or "no reason given"
        return refused

    return run.once(("admission holds", nodes), make)


def hold_made(here: Here, node: str, note: str, hold: str) -> None:
    """Run on a new node before its slurmd first starts: its hold made by the controller (whose scontrol has
    credentials: with auth/slurm a node's own have none before its slurmd runs), then noted here. A hold not made
    fails this node's run here, so that its slurmd is never started unheld, whatever the other hosts go on with."""
    run = here.run
    why = _refused(run).get(node)
    if why is not None:
        raise for_pyinfra(DeployError(f"{node}: its hold {hold} could not be made on {run.valid.controller.name} "
                                      f"({why}); its slurmd is not started unheld: the next run tries again"))
    ok, noted = remote.run(here.host, note)
    if not ok:
        raise for_pyinfra(DeployError(f"{node}: its hold was made, but could not be noted: {noted.stderr.strip()}"))


@step("admission holds", footprint=footprint, on=("slurm",))
def gate_holds(here: Here) -> None:
    """Once slurmctld runs with this run's nodes and before any slurmd starts: each admission node without a record
    or a hold is recorded by the controller where its slurmd ran before this run (in service, not taken out of it to
    be tested), and held where it did not (new, or never started). Every Slurm host gets the operation, so that the
    compute nodes' slurmd operations come after it."""
    found = undecided(here.run)
    commands: list[Command] = []
    said: list[str] = []
    if "controller" in here.groups:
        if here.valid.admission:
            _plan(here)
        for node in sorted((n for n, ran in found.items() if ran), key=hostlists.natural_key):
            commands.append(admitted_command(node, ADMITTED_BEFORE))
            said.append(f"{node}: {ADMITTED_BEFORE}, admitted without its tests")
    node = here.machine.node.name if "compute" in here.groups and here.machine.node is not None else None
    if node is not None and node in here.valid.admission:
        # Root's alone before any job runs here: a person may not list, let alone plant, the gate's outputs (the
        # gate's jobs make and check it too, gate/slurm.py).
        ops.directory(here, name="the admission gate's runs' directory", path=RUNS_DIR, mode="0700")
    cause = holds_of(here.run).get(node) if node is not None else None
    if node is not None and cause is not None:
        hold = reservations.name(cause, node)
        commands.append(call(hold_made, node=node, note=held_command(node, hold), hold=hold))
        what = "new" if cause == reservations.NEW else "admitted before, back installed anew"
        said.append(f"{node}: {what}, held in {hold} until the gate's tests pass")
    here.apply(Change("admission: new nodes held before their slurmd starts", tuple(commands), tuple(said),
                      otherwise="no new node to hold", shared=True))


def _plan(here: Here) -> None:
    """The gate's plan (admission.json), read by the gate at each pass: a new plan needs no restart. Written before
    the run holds any node: a gate already running releases a held node its plan does not list ("admission.json has
    it no more", gate/passes.py), so a node added with its hold made first was released untested by the gate's next
    pass (found by benchmarks/scale.py growing the test cluster)."""
    ops.directory(here, name="the admission gate: /etc/clusterforge", path=PLAN.rsplit("/", 1)[0])
    ops.file(here, name=f"the admission gate: its plan, {PLAN}", path=PLAN, content=admission.render(here.valid),
             atomic=True)


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
    # Passed through by others (the Slurm exporter, as nobody, reads records/ there); its other files are root's.
    ops.directory(here, name=f"the admission gate: {STATE_DIR}", path=STATE_DIR, mode="0711")
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
