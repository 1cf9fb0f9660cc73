"""One pass of the repair loop: read Slurm (the one node listing, the reservations), then for each node of the plan
take the one step it is ready for.

A node's life in repair (docs/operations/repair.md has the table):

- **a fault**: the node is drained by the health check for a fault the loop may repair (faults.py), and held by no
  one else. Counted for the breaker; past the node's attempts it is quarantined; past the fleet budget, or with the
  breaker open, it waits; in observe mode the loop says once what it would do. Otherwise its first action:
- **reset** (a reset-class fault naming its GPU): once Slurm shows no job on that GPU (sinfo's GresUsed), the drain's
  reason becomes ``cf:repair:reset gpuN BUS ...``, which the node's health check performs at its next run
  (slurm/repairs.py);
- **reboot**: ``scontrol reboot`` with ``cf:repair:reboot ...``, neither ASAP nor a next state, of the node drained
  already; Slurm waits for the node's jobs (never killed) and reboots it; its registration keeps the drain, which
  the node's health check owns once the node has registered: it lifts it where the node is healthy, or drains over
  it with its finding. Until then the node is not back (the step's bound runs);
- **power cycle**: a node not back within its reboot's bound, or back and still faulty, is power cycled through its
  BMC (bmc.py);
- **back**: the node registered, or its reset was done: where its profile has admission, the health check's first
  run holds it in ``cf-gate-repaired-<node>`` and the gate tests it; in service, the repair has ended.

A failed action (refused, not done within its bound, the fault still there) counts as an attempt and is named; the
next action follows where the attempts allow, else the node is quarantined: ``cf:repair:quarantined <fault> <n>``,
which nothing automatic lifts. Every action reads the node again just before it acts (the node-state gate): a drain,
DOWN or reservation of anyone else's stops the repair and leaves the node as it is. A reboot asked and not issued is
withdrawn where an admin drains the node meanwhile; one already issued cannot be, and Slurm's registration after it
keeps the admin's drain and reason (no next state was asked), whenever they were set.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..slurm import drains, repairs, reservations
from ..slurm import nodes as slurm_nodes
from ..slurm.commands import Answer, Run
from ..slurm.nodes import Node
from ..slurm.parse import ParseError
from ..slurm.reservations import Reservation
from . import faults as repair_faults
from .faults import Fault
from .plan import POWER_CYCLE, REBOOT, RESET, ON, Plan, Policy
from .store import Action, NodeFile, Repair, Store

COMMAND_TIMEOUT_S = 30.0
WAIT_GPU = "wait-gpu"
BACK = "back"
# How long a node back from its action may take to return to service (the gate's tests, its pending bound) before
# the repair ends without it: the node is then the gate's, or its check's, and no longer the loop's.
BACK_BOUND_S = 4 * 3600
# The drains the loop reads as its own while a repair is under way: the health check's (the fault, or one found after
# an action) and its own.
HEALTH_CAUSES = ("gpu", "check")
# What Slurm itself sets a node it reboots to where it does not come back (node_mgr.c, ResumeTimeout).
REBOOT_TIMED_OUT = "reboot timed out"

PowerCycle = Callable[[str], str | None]   # node -> None where done, else why not


def utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


@dataclass
class Loop:
    store: Store
    plan: Plan
    run: Run
    power_cycle: PowerCycle
    log: Callable[[str], None] = print
    clock: Callable[[], float] = time.time
    _said: dict[str, str] = field(default_factory=dict)

    def say(self, node: str, text: str) -> None:
        """Once per change: a node that waits says so once, not every pass."""
        if self._said.get(node) != text:
            self._said[node] = text
            self.log(f"{node}: {text}")

    def ask(self, argv: list[str]) -> Answer:
        return self.run(argv, COMMAND_TIMEOUT_S)

    # -- the pass

    def one_pass(self) -> None:
        try:
            listing = {n.name: n for n in slurm_nodes.parse_sinfo(self._text(slurm_nodes.sinfo_argv()))}
            holds = reservations.parse_reservations(self._text(reservations.show_argv()))
        except (_Unread, ParseError) as error:
            self.say("*", f"this pass reads nothing: {error}")
            return
        self._said.pop("*", None)
        now = self.clock()
        stored = self.store.nodes()   # the nodes with a file: most have none
        kept = {name: stored.get(name) or NodeFile() for name in self.plan.nodes}
        for name in sorted(self.plan.nodes):
            policy = self.plan.policy(name)
            state = listing.get(name)
            if policy is None:
                continue
            if state is None:
                self.say(name, "not repaired: Slurm does not list it")
                continue
            self._step(name, policy, state, holds, kept, now)

    def _text(self, argv: list[str]) -> str:
        answer = self.ask(argv)
        if not answer.ok:
            raise _Unread(f"{' '.join(argv[:3])}: {answer.why}")
        return answer.out

    # -- a node's step

    def _step(self, name: str, policy: Policy, state: Node, holds: list[Reservation], kept: dict[str, NodeFile],
              now: float) -> None:
        node = kept[name]
        if node.quarantined:
            self._quarantine_kept(name, node, state, holds)
            return
        if node.repair is not None:
            self._follow(name, policy, node, state, holds, now)
            return
        fault = repair_faults.fault_of(state.reason, self.plan.xid) if state.drained else None
        first = _first_action(fault, policy) if fault is not None else None
        if fault is None or first is None:
            if (node.observed or node.counted) and state.reason not in (node.observed, node.counted):
                node.observed, node.counted, node.counted_at = "", "", 0.0
                self.store.save(name, node)
            return
        if _held_by_another(state, holds, name):
            self.say(name, f"not repaired: held by another ({state.complete}, {state.reason})")
            return
        if node.counted != fault.reason:
            node.counted, node.counted_at = fault.reason, now
            self.store.save(name, node)
            self._fault_seen(name, now)
        breaker = self.store.breaker()
        if breaker.open:
            self.say(name, f"not repaired: the breaker is open since {utc(breaker.open_since)} ({breaker.why})")
            return
        used = _attempts(node, fault.klass, now, policy.window_s)
        if used >= policy.attempts:
            self._quarantine(name, node, fault.code, used, state.reason, now, fault.reason)
            return
        busy = sum(1 for other, kept_node in kept.items() if other != name and kept_node.repair is not None)
        if busy >= self.plan.budget:
            self.say(name, f"waits: {busy} node(s) in repair, the fleet's budget is {self.plan.budget}")
            return
        if policy.mode != ON:
            if node.observed != fault.reason:
                node.observed = fault.reason
                self.store.save(name, node)
                self.store.ended({"node": name, "fault": fault.reason, "class": fault.klass, "outcome": "observed",
                                  "action": first, "seen_at": now, "ended_at": now})
                self.log(f"{name}: would {first.replace('_', ' ')} (observe mode): {fault.reason}")
            return
        node.observed = ""
        node.repair = Repair(fault.reason, fault.code, fault.klass, fault.gpu, fault.bus, node.counted_at or now,
                             first, number=used + 1)
        self._act(name, policy, node, state, now)

    def _act(self, name: str, policy: Policy, node: NodeFile, state: Node, now: float) -> None:
        """Take the repair's step: recorded before it is taken (a loop killed in between finds the step and the
        node's state, and asks again where Slurm shows it was not taken)."""
        repair = node.repair
        assert repair is not None
        if repair.step == RESET and _gpu_index(repair.gpu) in state.gpus_busy:
            repair.step = WAIT_GPU
        if repair.step == WAIT_GPU:
            if _gpu_index(repair.gpu) in state.gpus_busy:
                self.store.save(name, node)
                self.say(name, f"waits for the jobs on {repair.gpu} to end before its reset")
                return
            repair.step = RESET
        repair.acted_at, repair.asked = now, False
        repair.deadline = now + policy.bounds_s[repair.step]
        node.attempts.append(Action(repair.klass, repair.step, now))
        self.store.save(name, node)
        of = policy.attempts
        if repair.step == RESET:
            drain = repairs.reset_drain(repair.gpu, repair.bus, repair.code, repair.number, of)
            done = self._relabel(name, (repair.fault,), drain) is not None
        elif repair.step == REBOOT:
            done = self._reboot(name, repairs.reboot_drain(repair.code, repair.number, of), repair)
        else:
            done = self._power_cycle(name, policy, node, state, now)
        if done:
            self._asked(name, node)
            self.log(f"{name}: {repair.step.replace('_', ' ')} (attempt {repair.number} of {of}) for {repair.fault}")

    def _asked(self, name: str, node: NodeFile) -> None:
        assert node.repair is not None
        node.repair.asked = True
        self.store.save(name, node)

    # -- a repair under way

    def _follow(self, name: str, policy: Policy, node: NodeFile, state: Node, holds: list[Reservation],
                now: float) -> None:
        repair = node.repair
        assert repair is not None
        drain = drains.parse_reason(state.reason) if state.drained else None
        ours = drain is not None and drain.cause == repairs.REPAIR
        health = drain is not None and drain.cause in HEALTH_CAUSES
        rebooting = _reboot_asked(state)
        if repair.admin:
            self._admin_kept(name, node, state, holds)
            return
        if repair.step != BACK and state.drained and not ours and not health:
            self._another(name, node, state, rebooting)
            return
        if _held_by_another(state, holds, name, during_reboot=repair.step in (REBOOT, POWER_CYCLE)):
            self._stop(name, node, f"held by another ({state.complete}{', ' + state.reason if state.reason else ''})",
                       now)
            return
        if repair.step == WAIT_GPU:
            if state.reason != repair.fault:
                self._stop(name, node, f"its drain changed while it waited: {state.reason or 'none'}", now)
                return
            self._act(name, policy, node, state, now)
        elif repair.step == RESET:
            self._follow_reset(name, policy, node, state, drain, now)
        elif repair.step in (REBOOT, POWER_CYCLE):
            self._follow_reboot(name, policy, node, state, rebooting, ours, now)
        else:
            self._follow_back(name, policy, node, state, holds, now)

    def _follow_reset(self, name: str, policy: Policy, node: NodeFile, state: Node, drain: drains.Drain | None,
                      now: float) -> None:
        repair = node.repair
        assert repair is not None
        if state.reason == repair.fault and not repair.asked:
            # recorded, and not asked of slurmctld (a loop killed in between): asked now
            if self._relabel(name, (repair.fault,), repairs.reset_drain(repair.gpu, repair.bus, repair.code,
                                                                        repair.number, policy.attempts)) is not None:
                self._asked(name, node)
        elif drain is not None and drain.code == repairs.RESET_FAILED:
            self._failed(name, policy, node, state, f"reset refused: {drain.detail}", now)
        elif drain is not None and drain.code == repairs.RESET:
            if now > repair.deadline:
                self._failed(name, policy, node, state, f"reset not done within {policy.bounds_s[RESET]} s", now)
        elif state.drained:
            self._failed(name, policy, node, state, f"still faulty after the reset: {state.reason}", now)
        else:
            self._back(name, node, now)

    def _follow_reboot(self, name: str, policy: Policy, node: NodeFile, state: Node, rebooting: bool, ours: bool,
                       now: float) -> None:
        repair = node.repair
        assert repair is not None
        if repair.step == REBOOT and not rebooting and state.reason == repair.fault and not repair.asked:
            # recorded, and not asked of slurmctld (a loop killed in between): asked now
            if self._reboot(name, repairs.reboot_drain(repair.code, repair.number, policy.attempts), repair):
                self._asked(name, node)
            return
        if "REBOOT_REQUESTED" in state.flags and "REBOOT_ISSUED" not in state.flags and \
                state.base in ("ALLOCATED", "MIXED", "COMPLETING"):
            # Slurm waits for the node's jobs, which clusterforge never kills: the bound runs from their end.
            repair.deadline = now + policy.bounds_s[repair.step]
            self.store.save(name, node)
            self.say(name, f"reboot asked: waits for the node's jobs to end ({state.complete})")
            return
        not_back = rebooting or state.base == "DOWN" or "NOT_RESPONDING" in state.flags
        if repair.step == POWER_CYCLE and not not_back:
            # Slurm may not have seen the node go yet: back once it shows another boot
            again = self._reread(name)
            not_back = again is None or again.boot == repair.boot
        if not_back:
            if now > repair.deadline:
                self._failed(name, policy, node, state,
                             f"not back within {policy.bounds_s[repair.step]} s of its {repair.step.replace('_', ' ')}",
                             now)
            return
        if state.drained and repairs.reboot_asked(state.reason):
            # Registered, its drain kept: the node's check owns the loop's reason now, and lifts it or drains over it.
            if now > repair.deadline:
                self._failed(name, policy, node, state, f"its check did not answer within "
                             f"{policy.bounds_s[repair.step]} s of its {repair.step.replace('_', ' ')}", now)
            else:
                self.say(name, f"registered after its {repair.step.replace('_', ' ')}: waits for its check")
            return
        if state.drained and not ours:
            self._failed(name, policy, node, state, f"still faulty after the {repair.step.replace('_', ' ')}: "
                         f"{state.reason}", now)
            return
        self._back(name, node, now)

    def _follow_back(self, name: str, policy: Policy, node: NodeFile, state: Node, holds: list[Reservation],
                     now: float) -> None:
        repair = node.repair
        assert repair is not None
        gate = reservations.gate_hold(holds, name)
        if state.drained:
            drain = drains.parse_reason(state.reason)
            if drain is not None and drain.cause == drains.GATE:
                self._end(name, node, f"failed the gate: {state.reason}", now, failed=True)
            elif drain is not None and drain.cause in HEALTH_CAUSES:
                self._end(name, node, f"faulted again: {state.reason}", now, failed=True)
            else:
                self._stop(name, node, f"drained by another: {state.reason}", now)
            return
        if gate is not None:
            self.say(name, f"back; tested by the admission gate in {gate}")
        elif state.out_of_service:
            self.say(name, f"back; not in service yet ({state.state})")
        else:
            self._end(name, node, "back in service", now)
            return
        if now > repair.deadline:
            self._end(name, node, f"not in service within {BACK_BOUND_S} s of its repair", now, failed=True)

    # -- outcomes

    def _back(self, name: str, node: NodeFile, now: float) -> None:
        repair = node.repair
        assert repair is not None
        self._outcome(node, "done")
        repair.step, repair.deadline = BACK, now + BACK_BOUND_S
        self.store.save(name, node)
        self.log(f"{name}: back from its {node.attempts[-1].action.replace('_', ' ')}")

    def _failed(self, name: str, policy: Policy, node: NodeFile, state: Node, why: str, now: float) -> None:
        """The action failed, named: the next one where the attempts allow, else quarantine."""
        repair = node.repair
        assert repair is not None
        self._outcome(node, f"failed: {why}")
        self.log(f"{name}: {repair.step.replace('_', ' ')} failed: {why}")
        used = _attempts(node, repair.klass, now, policy.window_s)
        following = _escalation(repair.step, policy, self.plan.nodes[name].bmc is not None)
        if following is None or used >= policy.attempts:
            self._quarantine(name, node, repair.code, used, state.reason, now, repair.fault)
            return
        repair.step, repair.number = following, used + 1
        self._act(name, policy, node, state, now)

    def _outcome(self, node: NodeFile, outcome: str) -> None:
        if node.attempts and not node.attempts[-1].outcome:
            node.attempts[-1].outcome = outcome

    def _end(self, name: str, node: NodeFile, outcome: str, now: float, failed: bool = False) -> None:
        repair = node.repair
        assert repair is not None
        self.store.ended({"node": name, "fault": repair.fault, "class": repair.klass, "outcome": outcome,
                          "actions": [a.action for a in node.attempts if a.at >= repair.seen_at],
                          "acted": [{"action": a.action, "at": a.at, "outcome": a.outcome} for a in node.attempts
                                    if a.at >= repair.seen_at],
                          "seen_at": repair.seen_at, "ended_at": now, "automatic": True,
                          "in_service": not failed})
        node.repair = None
        node.counted, node.counted_at = "", 0.0   # a fault seen after this is a new one, though worded the same
        self.store.save(name, node)
        self._said.pop(name, None)
        self.log(f"{name}: {outcome}" + ("" if failed else f", {int(now - repair.seen_at)} s after its fault"))

    def _stop(self, name: str, node: NodeFile, why: str, now: float) -> None:
        self._outcome(node, f"stopped: {why}")
        self._end(name, node, f"stopped, the node left as it is: {why}", now, failed=True)

    def _another(self, name: str, node: NodeFile, state: Node, rebooting: bool) -> None:
        """Someone else drained the node during its repair: the repair stops and their drain stays. A reboot not
        issued yet is withdrawn (_withdraw). One issued cannot be, and needs not: Slurm's registration after it keeps
        their drain and reason (the loop's reboot asks no next state)."""
        if rebooting and "REBOOT_ISSUED" not in state.flags:
            self._withdraw(name, node, state.reason)
        self._stop(name, node, f"drained by another during its repair: {state.reason}", self.clock())

    def _withdraw(self, name: str, node: NodeFile, reason: str) -> None:
        """The loop's reboot withdrawn from a node someone else drained with ``reason``: Slurm's withdrawal lifts every
        drain (cancel_reboot_argv), and theirs is set again at once. Between the two, the node is held in the loop's
        guard (reservations.guard_argv), so that no job slurmctld's scheduler, queued by the withdrawal, starts there
        meanwhile; the guard deleted after. Their reason recorded first: a loop killed before it drains the node again
        does so at its next pass (_admin_kept), and the guard ends on its own."""
        repair = node.repair
        assert repair is not None
        repair.admin = reason
        self.store.save(name, node)
        created = self.ask(reservations.guard_argv(name))
        # One there already is a killed loop's, which held the node since.
        guarded = created.ok or reservations.DUPLICATE in created.why
        if not guarded:
            self.log(f"{name}: no guard against jobs while its reboot is withdrawn ({created.why}): a job may start "
                     "there before the drain is set again")
        answer = self.ask(drains.cancel_reboot_argv(name))
        if not answer.ok:
            self.log(f"{name}: its reboot could not be withdrawn ({answer.why}); its registration keeps {reason!r}")
        else:
            self._drain_again(name, reason)
        if guarded:
            self._unguard(name)

    def _unguard(self, name: str) -> None:
        guard = reservations.guard_name(name)
        deleted = self.ask(reservations.delete_argv(guard))
        if not deleted.ok:
            self.log(f"{name}: its guard {guard} could not be deleted ({deleted.why}); it ends within "
                     f"{reservations.GUARD_MINUTES} min")

    def _drain_again(self, name: str, reason: str) -> None:
        """The drain and reason another set, which the loop's withdrawal of its reboot lifted, set again: only where
        the node is left undrained with no reason (anything else is a newer decision, not the loop's to touch)."""
        after = self._reread(name)
        if after is None or after.drained or after.reason:
            return
        answer = self.ask(drains.drain_argv(name, reason))
        if not answer.ok:
            self.log(f"{name}: withdrawing its reboot lifted the drain {reason!r}, which could not be set again "
                     f"({answer.why}): drain it again")

    def _admin_kept(self, name: str, node: NodeFile, state: Node, holds: list[Reservation]) -> None:
        """Someone else's drain the loop recorded to keep it (repair.admin): by a loop killed while it withdrew its
        reboot (_withdraw), or, before the loop's reboot asked no next state, while Slurm rebooted the node with
        ``nextstate=resume``. A reboot still asked and not issued is withdrawn again; one issued is waited for; the
        drain, where lifted, set again, and a guard the killed loop left deleted; then the repair stops."""
        repair = node.repair
        assert repair is not None
        if _reboot_asked(state):
            if "REBOOT_ISSUED" in state.flags:
                return
            self._withdraw(name, node, repair.admin)
        else:
            if not state.drained:
                answer = self.ask(drains.drain_argv(name, repair.admin))
                if not answer.ok:
                    self.say(name, f"could not drain it again for {repair.admin!r}: {answer.why}")
                    return
                self.log(f"{name}: drained again for {repair.admin!r}, which a withdrawn reboot or a registration "
                         "lifted")
            if any(r.name == reservations.guard_name(name) for r in holds):
                self._unguard(name)
        self._stop(name, node, f"drained by another during its repair: {repair.admin}", self.clock())

    # -- quarantine

    def _quarantine(self, name: str, node: NodeFile, code: str, used: int, reason: str, now: float,
                    fault: str) -> None:
        """Drained ``cf:repair:quarantined``. A node DOWN for the loop's own reboot or power cycle (not back, its
        reboot still issued) is quarantined as it is: Slurm keeps it DOWN, and its registration after that reboot
        keeps the drain (an earlier loop's reboot, with ``nextstate=resume``, lifted it: undone, _quarantine_kept)."""
        drain = repairs.quarantine_drain(code, used)
        own_down = node.repair is not None and node.repair.step in (REBOOT, POWER_CYCLE)
        state = self._relabel(name, (reason, fault), drain, any_repair=True, own_down=own_down)
        if state is None:
            return
        node.quarantined_boot = state.boot if _reboot_asked(state) or "DOWN" in state.flags else ""
        if node.repair is not None:
            self._end(name, node, f"quarantined after {used} attempt(s)", now, failed=True)
        else:
            self.store.ended({"node": name, "fault": fault, "class": "", "outcome": f"quarantined after {used} "
                              "attempt(s)", "actions": [], "seen_at": now, "ended_at": now, "automatic": True,
                              "in_service": False})
        node.quarantined = drain.reason
        self.store.save(name, node)
        self.log(f"{name}: quarantined ({drain.reason}): nothing automatic touches it until an admin lifts it")

    def _quarantine_kept(self, name: str, node: NodeFile, state: Node, holds: list[Reservation]) -> None:
        """A quarantined node is the admins': once they lift its quarantine drain, its attempts start again. Where
        Slurm lifted it, the drain is set again: its own timeout of the loop's reboot (the quarantine's words kept,
        the drain gone), or the node's registration after the boot an earlier loop asked for with nextstate=resume
        (another BootTime: no admin's command changes that). A registration that kept the drain ends that watch."""
        drain = drains.parse_reason(state.reason) if state.reason else None
        words_kept = drain is not None and drain.cause == repairs.REPAIR and drain.code == repairs.QUARANTINED
        if words_kept and state.drained:
            if node.quarantined_boot and not {"REBOOT_ISSUED", "REBOOT_REQUESTED"} & state.flags:
                # Registered after the loop's reboot, its quarantine kept (no next state asked): a lift from now on
                # is an admin's.
                again = self._reread(name)
                if again is not None and again.boot and again.boot != node.quarantined_boot:
                    node.quarantined_boot = ""
                    self.store.save(name, node)
            self.say(name, f"quarantined: {state.reason}")
            return
        rebooted = False
        if node.quarantined_boot and not state.drained and not _reboot_asked(state):
            again = self._reread(name)   # the listing has no BootTime
            if again is None:
                return
            rebooted = bool(again.boot) and again.boot != node.quarantined_boot
        if (words_kept or rebooted) and not state.drained and not _held_by_another(state, holds, name,
                                                                                    during_reboot=True):
            # the node-state gate: read again just before, still lifted and held by no one else
            now = self._reread(name)
            if now is None or now.drained or "FAIL" in now.flags:
                return
            answer = self.ask(drains.drain_argv(name, node.quarantined))
            if answer.ok:
                node.quarantined_boot = "" if rebooted else node.quarantined_boot
                self.store.save(name, node)
                self.log(f"{name}: its quarantine drained again ({node.quarantined}): Slurm lifted it "
                         f"({'its registration after the reboot' if rebooted else 'its reboot timed out'})")
            else:
                self.say(name, f"could not drain it again for its quarantine: {answer.why}")
            return
        if words_kept or _reboot_asked(state):
            self.say(name, f"quarantined: {state.complete}, {state.reason}")
            return
        node.quarantined, node.quarantined_boot, node.attempts = "", "", []
        self.store.save(name, node)
        self.log(f"{name}: its quarantine was lifted ({state.state or state.complete}); its attempts start again")

    # -- the node-state gate, for the loop

    def _reread(self, name: str) -> Node | None:
        answer = self.ask(slurm_nodes.show_argv(name))
        if not answer.ok:
            self.say(name, f"nothing done: its state could not be read again: {answer.why}")
            return None
        try:
            return slurm_nodes.parse_node(answer.out)
        except ParseError as error:
            self.say(name, f"nothing done: {error}")
            return None

    def _relabel(self, name: str, reasons: tuple[str, ...], drain: drains.Drain, any_repair: bool = False,
                 own_down: bool = False) -> Node | None:
        """The node's drain given ``drain``'s reason, only where, read again just before, it is still drained for one
        of ``reasons`` (or, ``any_repair``, for one of the loop's own) and nothing else holds it; ``own_down``: or
        DOWN for the loop's own reboot (its reason the loop's or the health check's, Slurm's not responding or
        timeout at most added). The node as read, where done."""
        state = self._reread(name)
        if state is None:
            return None
        now = drains.parse_reason(state.reason) if state.reason else None
        ours = state.reason in reasons or (any_repair and now is not None and now.cause == repairs.REPAIR)
        mine = state.drained and ours and not state.flags & {"DOWN", "FAIL"}
        down_for_us = own_down and "FAIL" not in state.flags and bool({"DOWN", "REBOOT_ISSUED"} & state.flags) and \
            (not state.reason or state.reason.startswith(("Not responding", REBOOT_TIMED_OUT)) or ours or
             (now is not None and now.cause in (repairs.REPAIR, *HEALTH_CAUSES)))
        if not (mine or down_for_us):
            self.say(name, f"left as it is: {state.complete}, {state.reason or 'no reason'}")
            return None
        answer = self.ask(drains.drain_argv(name, drain.reason))
        if not answer.ok:
            self.say(name, f"slurmctld refused {drain.reason!r}: {answer.why}")
            return None
        return state

    def _power_cycle(self, name: str, policy: Policy, node: NodeFile, state: Node, now: float) -> bool:
        """Through the node's BMC, where, read again just before, it is still the repair's: rebooting for it, DOWN
        or not responding after it (Slurm's own), or drained by the health check. Its boot time is kept: the node is
        back once Slurm shows another."""
        repair = node.repair
        assert repair is not None
        again = self._reread(name)
        if again is None:
            return False
        drain = drains.parse_reason(again.reason) if again.reason else None
        theirs = again.reason and (drain is None or drain.cause not in (repairs.REPAIR, *HEALTH_CAUSES)) and \
            again.reason != REBOOT_TIMED_OUT and "NOT_RESPONDING" not in again.flags
        if theirs or "FAIL" in again.flags:
            self._stop(name, node, f"held by another before its power cycle ({again.complete}, {again.reason})", now)
            return False
        repair.boot = again.boot
        self.store.save(name, node)
        why = self.power_cycle(name)
        if why is not None:
            self._failed(name, policy, node, state, f"power cycle: {why}", now)
            return False
        return True

    def _reboot(self, name: str, drain: drains.Drain, repair: Repair) -> bool:
        state = self._reread(name)
        if state is None:
            return False
        now = drains.parse_reason(state.reason) if state.drained else None
        ours = state.reason == repair.fault or (now is not None and now.cause == repairs.REPAIR
                                                 and now.code != repairs.QUARANTINED)
        if not ours or state.flags & {"DOWN", "FAIL"}:
            self.say(name, f"not rebooted: {state.complete}, {state.reason or 'no reason'}")
            return False
        answer = self.ask(drains.reboot_argv(name, drain))
        if not answer.ok:
            self.say(name, f"slurmctld refused its reboot: {answer.why}")
            return False
        return True

    # -- the breaker

    def _fault_seen(self, name: str, now: float) -> None:
        """A new fault counted for the breaker, which opens where more nodes than the plan allows faulted within its
        window (since an admin last closed it): most likely one cause (the fabric, power, a driver), not N bad nodes.
        Counted in observe mode too, so the breaker says what it would have done."""
        breaker = self.store.breaker()
        breaker.faults = [f for f in breaker.faults if f[1] >= now - self.plan.breaker_window_s] + [[name, now]]
        window = [f for f in breaker.faults if f[1] >= max(now - self.plan.breaker_window_s, breaker.closed_at)]
        nodes = sorted({f[0] for f in window})
        if not breaker.open and len(nodes) > self.plan.breaker_faults:
            breaker.open_since = now
            breaker.why = (f"{len(nodes)} nodes faulted within {self.plan.breaker_window_s} s, more than "
                           f"{self.plan.breaker_faults}: {', '.join(nodes)}")
            self.log(f"breaker open: {breaker.why}; no new repair until an admin closes it")
        self.store.save_breaker(breaker)


def close_breaker(store: Store, now: float) -> bool:
    """An admin's close: new repairs from now on, the faults before it forgotten. False where it was not open."""
    breaker = store.breaker()
    was = breaker.open
    breaker.open_since, breaker.why, breaker.closed_at = 0.0, "", now
    store.save_breaker(breaker)
    return was


class _Unread(Exception):
    """A Slurm command of the pass did not answer, or not as it should."""


def _gpu_index(gpu: str) -> int:
    return int(gpu[3:]) if gpu.startswith("gpu") and gpu[3:].isdigit() else -1


def _attempts(node: NodeFile, klass: str, now: float, window_s: int) -> int:
    return sum(1 for a in node.attempts if a.klass == klass and a.at > now - window_s)


def _first_action(fault: Fault, policy: Policy) -> str | None:
    """A reset where the fault's class is reset and the GPU is named; a reboot for the rest (a reboot cures what a
    reset cures), where the policy repairs the class."""
    if fault.klass not in policy.classes:
        return None
    if fault.resettable:
        return RESET
    return REBOOT if REBOOT in policy.classes or fault.klass == REBOOT else None


def _escalation(step: str, policy: Policy, has_bmc: bool) -> str | None:
    """The action after a failed one: a reboot after a reset, a power cycle after a reboot (or another one)."""
    if step in (RESET, WAIT_GPU):
        return REBOOT if REBOOT in policy.classes else None
    if step in (REBOOT, POWER_CYCLE) and policy.power_cycle and has_bmc:
        return POWER_CYCLE
    return None


def _reboot_asked(state: Node) -> bool:
    """A reboot through Slurm asked (its jobs still run) or issued, and the node not registered since."""
    return bool({"REBOOT_REQUESTED", "REBOOT_ISSUED"} & state.flags)


def _held_by_another(state: Node, holds: list[Reservation], name: str, during_reboot: bool = False) -> bool:
    """Down, failing, or in a maintenance reservation other than the admission gate's hold of the node alone. During
    the loop's own reboot or power cycle Slurm's DOWN (not responding, reboot timed out) is the action's, not
    another's."""
    if state.maintenance and reservations.gate_hold(holds, name) is None:
        return True
    if during_reboot:
        return "FAIL" in state.flags
    return bool(state.flags & {"DOWN", "FAIL"})
