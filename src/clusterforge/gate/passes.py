"""One pass of the gate over the nodes it holds: read Slurm (the holds, the gate's jobs, the nodes), then for each
held node take the one step it is ready for: submit its next test, read a test that ended, pass or fail it.

A node's tests run one at a time, in admission.json's order: each is alone on the node (``--exclusive``), and its
output is read back by a short job on the node, which must not queue behind the next test. A node that is drained,
down or failing is never touched: by another, it waits for them; by the gate (a failed test), it waits for an
admin's resume, then runs its tests again. The gate never lifts its own drain.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..admission.tests import SINGLE_NODE
from ..admission.verdict import Result
from ..health import drains, reservations
from ..health.commands import Answer, Run
from ..health.drains import Drain
from ..health.parse import ParseError
from ..health.reservations import Reservation
from . import slurm
from .store import BY_HAND, NO_ADMISSION, PASSED, Round, Store

CAUSE = drains.GATE
SOURCE = "gate"  # a record line's source, beside accept's
COMMAND_TIMEOUT_S = 30.0
READ_TIMEOUT_S = 150.0   # the read job's own bound (slurm.READ_TIME_LIMIT_MIN) and its wait to start
DEFAULT_BUDGET_S = 3600.0
SLURM_MARGIN_S = 60.0

Script = Callable[[dict, list[str]], str]
Judge = Callable[[dict, str, str, int], list]


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def drain_for(test: str, reason: str) -> Drain:
    """The gate's drain for a failed result: ``cf:gate:<test> <number> < <floor>`` from the verdict's reason
    (``allreduce 402 GB/s < 460``), the test's name as the code."""
    head, _, rest = reason.partition(" ")
    return Drain(CAUSE, test, rest if head == test else reason)


@dataclass
class Gate:
    store: Store
    plan: dict            # admission.json: {"nodes": {node: {"tests": [entry, ...]}}}, admission.tests' entries
    run: Run
    script: Script        # admission.tests.job_script
    judge: Judge          # admission.tests.judge
    scripts_dir: str
    log: Callable[[str], None] = print
    now: Callable[[], str] = utc_now
    _said: dict[str, str] = field(default_factory=dict)

    def say(self, node: str, text: str) -> None:
        """Once per change: a node waiting for an admin is said once, not every pass."""
        if self._said.get(node) != text:
            self._said[node] = text
            self.log(f"{node}: {text}")

    def ask(self, argv: list[str], timeout: float = COMMAND_TIMEOUT_S) -> Answer:
        return self.run(argv, timeout)

    def one_pass(self) -> None:
        try:
            holds = self._holds()
            jobs = self._read(slurm.jobs_argv(), slurm.parse_jobs)
            nodes = self._read(slurm.nodes_argv(), slurm.parse_nodes)
        except _Unread as error:
            self.say("*", f"this pass reads nothing: {error}")
            return
        self._said.pop("*", None)
        rounds = self.store.held()
        for node, round_ in rounds.items():
            if node not in holds:
                self._gone(node, round_, jobs)
        for node, held in holds.items():
            round_ = rounds.get(node)
            if round_ is None or round_.reservation not in {r.name for r in held}:
                round_ = Round(held[0].name, held[0].gate[0], after_job=_last_job(jobs, held))
                self.store.save(node, round_)
                self.log(f"{node}: held by {round_.reservation}")
            self._step(node, held, round_, jobs, nodes.get(node))

    # -- reading

    def _read(self, argv: list[str], parse: Callable[[str], object]):
        answer = self.ask(argv)
        if not answer.ok:
            raise _Unread(f"{' '.join(argv[:3])}: {answer.why}")
        try:
            return parse(answer.out)
        except ParseError as error:
            raise _Unread(str(error)) from None

    def _holds(self) -> dict[str, list[Reservation]]:
        """Each held node's gate reservations, new before repaired."""
        found: dict[str, list[Reservation]] = {}
        for reservation in self._read(reservations.show_argv(), reservations.parse_reservations):
            if reservation.gate is not None:
                found.setdefault(reservation.gate[1], []).append(reservation)
        return {node: sorted(held, key=lambda r: reservations.CAUSES.index(r.gate[0]))
                for node, held in sorted(found.items())}

    # -- a hold that is gone

    def _gone(self, node: str, round_: Round, jobs: list[slurm.Job]) -> None:
        """The node's reservation is gone: the gate's own release (killed before it recorded it), or an admin's
        admission by hand. Its tests still queued or running are the gate's to cancel."""
        mine = [j.job_id for j in jobs if j.reservation == round_.reservation and j.active]
        if mine:
            self.ask(slurm.cancel_argv(mine))
        how = PASSED if round_.passed else BY_HAND
        self.store.admit(node, how, self.now(), round_.reservation)
        self.store.forget(node)
        self._said.pop(node, None)
        self.log(f"{node}: {how} ({round_.reservation} is gone)")

    # -- a held node's next step

    def _step(self, node: str, held: list[Reservation], round_: Round, jobs: list[slurm.Job],
              state: slurm.NodeState | None) -> None:
        if round_.passed:
            self._release(node, held, round_)
            return
        if state is None:
            self.say(node, "waits: Slurm does not list it")
            return
        if state.drained:
            drain = drains.parse_reason(state.reason)
            self.say(node, "failed; waits for an admin's resume" if drain is not None and drain.cause == CAUSE
                     else f"waits: drained by another ({state.reason or 'no reason'})")
            return
        if not state.usable:
            self.say(node, f"waits: {state.complete}")
            return
        planned = self.plan.get("nodes") or {}
        plan = planned.get(node)
        if plan is None and planned:
            # A plan read whole that leaves the node out: its profile has no admission any more (a plan that could
            # not be read is empty, and releases no one).
            self._unplanned(node, held, jobs)
            return
        if not plan or not any(t.get("name") in SINGLE_NODE for t in plan.get("tests", ())):
            self.say(node, "waits: admission.json has no tests for it")
            return
        # One node's tests: across nodes (allreduce_multi) is accept's business, with known-good peers.
        todo = [t for t in plan["tests"] if t["name"] in SINGLE_NODE and t["name"] not in round_.results]
        if not todo:
            self._decide(node, held, round_)
            return
        test = todo[0]
        names = {r.name for r in held}
        ours = [j for j in jobs if j.reservation in names and slurm.test_of(j) == test["name"]
                and j.job_id > round_.after_job and j.job_id not in round_.discarded]
        if any(j.active for j in ours):
            self.say(node, f"runs {test['name']}")
            return
        if ours:
            self._ended(node, held[0], round_, test, max(ours, key=lambda j: j.job_id), state)
            return
        # The script cuts its tool at the entry's timeout (exit 124, judged a failure); Slurm's bound comes after it.
        self._submit(node, held[0], test, float(test.get("timeout") or DEFAULT_BUDGET_S) + SLURM_MARGIN_S, state)

    def _unplanned(self, node: str, held: list[Reservation], jobs: list[slurm.Job]) -> None:
        names = {r.name for r in held}
        mine = [j.job_id for j in jobs if j.reservation in names and j.active]
        if mine:
            self.ask(slurm.cancel_argv(mine))
            return  # slurmctld deletes no reservation a job is still in: the next pass does
        for reservation in held:
            answer = self.ask(reservations.delete_argv(reservation.name))
            if not answer.ok:
                self.say(node, f"not in admission.json; {reservation.name} could not be deleted: {answer.why}")
                return
        self.store.admit(node, NO_ADMISSION, self.now(), held[0].name)
        self.store.forget(node)
        self._said.pop(node, None)
        self.log(f"{node}: released from {', '.join(sorted(names))}: admission.json has it no more")

    def _submit(self, node: str, hold: Reservation, test: dict, seconds: float, state: slurm.NodeState) -> None:
        os.makedirs(self.scripts_dir, mode=0o700, exist_ok=True)
        path = os.path.join(self.scripts_dir, f"{node}-{test['name']}.sh")
        with open(path, "w", encoding="utf-8") as file:
            file.write(self.script(test, [node]))
        answer = self.ask(slurm.submit_argv(hold.name, node, state.partitions, test["name"], seconds, path))
        if not answer.ok:
            self.say(node, f"sbatch refused {test['name']}: {answer.why}")
            return
        self.log(f"{node}: {test['name']} submitted as job {answer.out.strip()}")

    def _ended(self, node: str, hold: Reservation, round_: Round, test: dict, job: slurm.Job,
               state: slurm.NodeState) -> None:
        name = test["name"]
        if job.state not in slurm.RAN and job.state != slurm.TIMED_OUT:
            round_.discarded.append(job.job_id)
            self.store.save(node, round_)
            self.log(f"{node}: {name} (job {job.job_id}) ended {job.state}, says nothing of the node: run again")
            return
        answer = self.ask(slurm.read_argv(hold.name, node, state.partitions, job.job_id), READ_TIMEOUT_S)
        if not answer.ok:
            round_.discarded.append(job.job_id)
            self.store.save(node, round_)
            self.log(f"{node}: the output of {name} (job {job.job_id}) could not be read ({answer.why}): run again")
            return
        # A run cut at its bound is judged as timeout(1) says it: its output as far as it got, exit 124.
        status = 124 if job.state == slurm.TIMED_OUT else job.exit_status
        # A verdict with nothing in it passes no one.
        results = self.judge(test, node, answer.out, status) or [Result(node, name, False, detail="gave no result")]
        round_.results[name] = {"job": job.job_id, "results": [
            {"test": r.test, "passed": bool(r.passed), "reason": r.reason, "record": r.record(SOURCE)}
            for r in results]}
        self.store.save(node, round_)
        verdicts = round_.results[name]["results"]
        self.log(f"{node}: {name} (job {job.job_id}) " + ("passed" if all(v["passed"] for v in verdicts) else
                 "failed: " + "; ".join(v["reason"] for v in verdicts if not v["passed"])))

    def _decide(self, node: str, held: list[Reservation], round_: Round) -> None:
        verdicts = [v for test in round_.results.values() for v in test["results"]]
        self.store.append(node, [v["record"] for v in verdicts])
        failed = [v for v in verdicts if not v["passed"]]
        if not failed:
            round_.passed = True
            self.store.save(node, round_)
            self._release(node, held, round_)
            return
        # The round is over before the drain: a gate killed in between tests the node again, rather than drain it
        # again on an old verdict once an admin resumed it.
        self.store.save(node, Round(round_.reservation, round_.cause, after_job=max(
            [round_.after_job, *round_.discarded, *(t["job"] for t in round_.results.values())])))
        drain = drain_for(failed[0]["test"], failed[0]["reason"])
        answer = self.ask(drains.drain_argv(node, drain.reason))
        self.say(node, f"failed, drained: {drain.reason}" if answer.ok else
                 f"failed, but slurmctld refused the drain: {answer.why}")

    def _release(self, node: str, held: list[Reservation], round_: Round) -> None:
        for reservation in held:
            answer = self.ask(reservations.delete_argv(reservation.name))
            if not answer.ok:
                self.say(node, f"passed; {reservation.name} could not be deleted: {answer.why}")
                return
        self.store.admit(node, PASSED, self.now(), round_.reservation)
        self.store.forget(node)
        self._said.pop(node, None)
        self.log(f"{node}: passed, released from {', '.join(r.name for r in held)}")


class _Unread(Exception):
    """A Slurm command of the pass did not answer, or not as it should."""


def _last_job(jobs: list[slurm.Job], held: list[Reservation]) -> int:
    """The newest gate job Slurm lists in these holds now: older ones belong to an earlier round."""
    names = {r.name for r in held}
    return max((j.job_id for j in jobs if j.reservation in names), default=0)


def load_plan(path: str) -> dict:
    """admission.json; a missing or unreadable plan is an empty one (every held node waits, and says so)."""
    try:
        with open(path, encoding="utf-8") as file:
            plan = json.load(file)
    except (OSError, ValueError):
        return {}
    return plan if isinstance(plan, dict) else {}
