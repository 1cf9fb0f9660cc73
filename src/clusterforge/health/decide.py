"""What to do with the node's drain, and doing it: the findings and the hardware faults the node holds in this boot
(faults.py) against what Slurm says of the node, through the gate for node states (drains.py), which never touches a
drain that is not the health check's own. Inside the admission gate's hold (reservations.py) the check drains and lifts
its own as everywhere: the hold keeps users' jobs off the node, not the check's eye on its hardware.

Two drains of another cause are the check's own once, passed as ``owned``: the repair loop's ``cf:repair:reset``
(slurm/repairs.py) whose reset the check has just performed (resets.py), and the loop's ``cf:repair:reboot``, which
Slurm's registration after that reboot keeps, at the first check once the node has registered (program.py's gate).
The check lifts it where the node is healthy, or drains over it with its own reason. Any other ``cf:repair`` reason,
and those at any other time, are another's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from . import faults as held_faults
from . import probes
from ..slurm import reservations
from ..slurm.commands import Answer, Run, said
from ..slurm.drains import drain_argv, parse_reason, undrain_argv
from ..slurm.nodes import HELD_FLAGS, MAINTENANCE, Node, parse_node, show_argv
from ..slurm.repairs import ResetAsked, reboot_asked, reset_asked
from .expect import SCONTROL_TIMEOUT_S
from ..slurm.parse import ParseError
from .probes import Finding, reason_of


@dataclass(frozen=True, slots=True)
class Decision:
    action: str          # "drain", "resume", "keep", "leave", "none", "wait" (a reboot gate)
    reason: str = ""
    why: str = ""
    # Left alone, drained with a reason that asks the check to reset a GPU (the repair loop's): act sets it, the
    # periodic check hands the reset to a process of its own (program.asked_reset).
    asked: ResetAsked | None = None


# Flags that make a node another's though its drain is the check's ``owned`` reason: down, failing, in maintenance
# (but the gate's hold alone), or rebooting (asked or under way, by whoever asked it).
REBOOT_FLAGS = frozenset({"REBOOT_REQUESTED", "REBOOT_ISSUED"})


def owns(state: Node, owned: str | None = None) -> bool:
    """Drained with a reason that is the check's: one of its causes (probes.CAUSES), or ``owned``, exactly."""
    return state.drained_for(probes.CAUSES) or (owned is not None and state.drained and state.reason == owned)


def kept_by_another(state: Node, owned: str | None = None, gate_held: bool = False) -> bool:
    """Node.kept_by_another for the check's causes. A node drained with ``owned`` is the check's only while nothing
    else holds it: not down, failing, rebooting, nor in maintenance (but the admission gate's hold of it alone,
    ``gate_held``)."""
    if owned is not None and state.drained and state.reason == owned:
        held = (HELD_FLAGS - {MAINTENANCE} if gate_held else HELD_FLAGS) | REBOOT_FLAGS
        return bool(held & state.flags)
    return state.kept_by_another(probes.CAUSES, gate_held=gate_held)


def decide(state: Node, findings: Sequence[Finding], whole: bool = True, hold: str | None = None,
           owned: str | None = None) -> Decision:
    """What to do with the node's drain. ``findings`` hold the hardware faults the node keeps until it boots again
    (held_faults), sticky, whether seen now or earlier in this boot. A check that is not ``whole`` (a job
    boundary's) only adds a drain: one of clusterforge's already there keeps its reason (the epilog after a failed
    prolog finds the same process). ``hold``: the admission gate's hold that is the whole of the maintenance the node
    shows (gate_hold), which holds it from users, not from the check; any other maintenance is another's. ``owned``:
    a reason of another cause that is the check's this once (the module's docstring)."""
    draining = [f for f in findings if f.action == "drain" and not f.keeps_only]
    holding = {f.drain.cause: f for f in findings if f.action == "drain" and f.keeps_only}
    faults = [f for f in draining if f.sticky]
    ours = owns(state, owned)
    if kept_by_another(state, owned, gate_held=hold is not None):
        held = f"; held until {held_faults.until(faults)}: {reason_of(faults)}" if faults else ""
        return Decision("leave", why=f"held by another: {state.reason or '+'.join(sorted(state.flags))}{held}")
    if draining:
        if ours and (kept := [f for f in faults if reason_of([f]) == state.reason]):
            return Decision("keep", state.reason, f"drained for a hardware fault until {held_faults.until(kept)}")
        reason = reason_of(draining)
        if ours and (state.reason == reason or not whole):
            return Decision("keep", state.reason, "drained already")
        return Decision("drain", reason)
    if ours:
        drain = parse_reason(state.reason)
        if drain is not None and drain.cause in holding:
            return Decision("keep", state.reason, f"not clear yet: {holding[drain.cause].reason}")
        return Decision("resume", why=f"healthy again, was: {state.reason}")
    return Decision("none")


def draining(findings: Sequence[Finding]) -> bool:
    return any(f.action == "drain" and not f.keeps_only for f in findings)


def scontrol(run: Run, argv: list[str]) -> Answer:
    return run(argv, SCONTROL_TIMEOUT_S)


def gate_hold(run: Run, node: str, state: Node, owned: str | None = None) -> str | None:
    """The admission gate's hold, where that is the whole of the maintenance the node shows (reservations.gate_hold);
    None where it is anyone else's, or cannot be told. Asked of slurmctld (``scontrol show reservation``) only where
    the node shows maintenance, is not drained (a drain of the check's own cause is the check's, whoever's
    maintenance it is in; its ``owned`` reason is not: decide) and nothing else holds it. Not read from ``scontrol
    show node``: 22.05's names no reservation, 24.11's and 26.05's ``ReservationName=`` only one, where the node may
    be in an admin's too."""
    if ((state.drained and (owned is None or state.reason != owned)) or not state.maintenance
            or kept_by_another(state, owned, gate_held=True)):
        return None
    shown = scontrol(run, reservations.show_argv())
    if shown.rc != 0:
        print(f"{said(reservations.show_argv())} {shown.why}: {node}'s maintenance is taken as another's")
        return None
    try:
        listed = reservations.parse_reservations(shown.out)
    except ParseError as error:
        print(f"{error}: {node}'s maintenance is taken as another's")
        return None
    return reservations.gate_hold(listed, node)


def act(findings: Sequence[Finding], run: Run, state_dir: str, node: str, boot: str,
        gate: Callable[[str | None], None] | None = None, whole: bool = True,
        owned: str | None = None) -> tuple[Decision, list[Finding]] | None:
    """The node's drain made to agree with the findings and with the hardware faults held in this boot (decide);
    the decision and the held faults, now including those among ``findings`` (recorded only once the caller has
    acted on what it read: hold). None where the node's state could not be read or changed. A node back from a
    reboot through Slurm, not registered yet, cannot be drained for long (its registration lifts the drain where a
    next state was asked): ``gate`` is called to drain it once registered; so it is for a node the repair loop
    rebooted (drained with its ``cf:repair:reboot`` reason, which the registration keeps), with that reason, which the
    check owns once the node has registered. ``whole``, ``owned``: as decide. A node left alone with a reason that
    asks for a reset says so in the decision (``asked``)."""
    shown = scontrol(run, show_argv(node))
    if shown.rc != 0:
        print(f"{said(show_argv(node))} {shown.why}: nothing decided")
        return None
    state = parse_node(shown.out)
    kept = held_faults.held(state_dir, boot)
    faults = held_faults.not_among(held_faults.legacy(state_dir, state, boot) if kept is None else kept, findings)
    loops = state.reason if state.drained and reboot_asked(state.reason) else None
    if state.rebooting and (draining([*findings, *faults]) or loops is not None) and gate is not None:
        gate(loops)
        if loops is not None:
            print(f"wait {node}: back from the repair loop's reboot, checked once it has registered ({loops})")
        else:
            print(f"wait {node}: back from a reboot through Slurm, it is drained once it has registered")
        return Decision("wait"), faults
    hold = gate_hold(run, node, state, owned)
    decision = decide(state, [*findings, *faults], whole, hold, owned)
    if decision.action == "leave" and state.drained and (asked := reset_asked(state.reason)) is not None:
        # Asked of the check only where nothing else holds the node: its reason the check's then (owned).
        by_gate = gate_hold(run, node, state, owned=state.reason)
        if not kept_by_another(state, owned=state.reason, gate_held=by_gate is not None):
            decision = replace(decision, asked=asked)
    if decision.action == "drain":
        done = scontrol(run, drain_argv(node, decision.reason))
        if done.rc != 0:
            print(f"could not drain {node}: scontrol {done.why}")
            return None
        print(f"drained {node}: {decision.reason}" + (f" (inside the admission gate's hold {hold})" if hold else ""))
    elif decision.action == "resume":
        done = scontrol(run, undrain_argv(node))
        if done.rc != 0:
            print(f"could not lift the drain of {node}: scontrol {done.why}")
            return None
        print(f"resumed {node}: {decision.why}")
    elif decision.action in ("keep", "leave"):
        print(f"{decision.action} {node}: {decision.why}")
    return decision, faults
