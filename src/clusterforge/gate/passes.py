"""One pass of the gate over the nodes it holds: read Slurm (the holds, the gate's jobs, the nodes), then for each
held node take the one step it is ready for: submit its next test, read a test that ended, pass or fail it.

The nodes' steps run at once (at most WORKERS), each node's own one after another: a step waits on Slurm (sbatch; the
read job, an allocation and a step, a second or more), and one node after another those waits added up over the
nodes (48 new nodes took 203 s to admit on the test cluster, issue 50). A step reads only what the pass read before
the steps, and writes only its own node's files (store.py); what the steps share (the log, what was said) is behind
one lock.

A node's tests run one at a time, in admission.json's order: each is alone on the node (``--exclusive``), and its
output is read back by a short job on the node, which must not queue behind the next test. A node that is drained,
down or failing is never touched: by another, it waits for them; by the gate (a failed test), it waits for an
admin's resume, then runs its tests again. The gate never lifts its own drain.

Nothing is held silently (issue 46): a test goes only to the node's partitions whose TimeLimit lets it run, and a
test that no partition lets run, that slurmctld refuses, or that waits past PENDING_BOUND_S (or for a reason no wait
cures) drains the node ``cf:gate:cannot run: <why>``, which `check` and the alert GateCannotRun show. A verdict comes
from the test job alone: its output as the read job gives it back (gate/slurm.py: a missing or foreign output fails
the test, named) and its exit status as slurmctld recorded it. Every drain reads the node and its reservations again
just before it is set, and sets none over anyone else's state.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from ..admission import tests
from ..admission.tests import SINGLE_NODE
from ..admission.verdict import Result
from ..slurm import drains, reservations
from ..slurm.commands import Answer, Run
from ..slurm import jobs as slurm_jobs
from ..slurm import nodes as slurm_nodes
from ..slurm.drains import Drain
from ..slurm.jobs import Shown
from ..slurm.nodes import Node
from ..slurm.parse import ParseError
from ..slurm.reservations import Reservation
from . import slurm
from .store import BY_HAND, NO_ADMISSION, PASSED, Round, Store

CAUSE = drains.GATE
SOURCE = "gate"  # a record line's source, beside accept's
COMMAND_TIMEOUT_S = 30.0
READ_TIMEOUT_S = 150.0   # the read job's own bound (slurm.READ_TIME_LIMIT_MIN) and its wait to start
DEFAULT_BUDGET_S = 3600.0
SLURM_MARGIN_S = float(tests.SLURM_MARGIN_S)  # as validation counts it (model/rules/admission.py)
# How long a test may wait to start in its hold, where the node is idle and its only: a job that waits longer waits
# for something no pass of the gate changes (a partition down, a limit, a job started before the hold).
PENDING_BOUND_S = 900.0
CANNOT_RUN = "cannot"     # the drain's code: cf:gate:cannot run: <why>
REASON_WHY = 100          # the most of Slurm's words a cannot-run reason keeps (sinfo -R shows one line)
# How many nodes' steps run at once. A step is a request or two to slurmctld (a submission; a read job's allocation
# and its step), then a wait on it; slurmctld serves requests from a bounded pool of threads, which users' commands
# and its scheduling need too. The gate runs as root, whom slurmctld's per-user RPC rate limit
# (SlurmctldParameters=rl_enable, rate_limit.c) exempts, so the bound is the gate's own: 16 steps in flight at most,
# never a burst of one per held node; 48 new nodes take 3 rounds of a command's time rather than 48.
WORKERS = 16
STOP_POLL_S = 0.5  # a pass told to stop kills its steps' commands again this often, until every step has returned

Script = Callable[[dict, list[str]], str]
Judge = Callable[[dict, str, str, int], list]


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def cannot_run(why: str) -> Drain:
    """``cf:gate:cannot run: <why>``: the node's test cannot run where the gate sends it (an admin's to fix)."""
    why = " ".join(why.split())
    return Drain(CAUSE, CANNOT_RUN, "run: " + (why if len(why) <= REASON_WHY else why[:REASON_WHY - 3] + "..."))


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
    runs_dir: str = slurm.RUNS_DIR           # on the node: where a test's output is kept (slurm.confined)
    pending_bound_s: float = PENDING_BOUND_S
    clock: Callable[[], float] = time.time
    # admission.json read again each pass, after the holds: the deploy writes the plan before it holds a node
    # (roles/gate.py), so a pass that sees the hold reads a plan that lists the node. Read before the holds, a plan
    # older than a hold made meanwhile left the new node out, and the pass released it untested.
    reload: Callable[[], dict] | None = None
    # commands.kill_all: the commands the steps run, killed when the pass is told to stop (main.py's SIGTERM).
    kill: Callable[[], None] = lambda: None
    workers: int = WORKERS
    _said: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _stopping: threading.Event = field(default_factory=threading.Event, init=False, repr=False)

    def say(self, node: str, text: str) -> None:
        """Once per change: a node waiting for an admin is said once, not every pass."""
        with self._lock:
            if self._said.get(node) != text:
                self._said[node] = text
                self.log(f"{node}: {text}")

    def _line(self, text: str) -> None:
        """One line of the log, whole: the steps of several nodes write at once."""
        with self._lock:
            self.log(text)

    def _unsaid(self, node: str) -> None:
        with self._lock:
            self._said.pop(node, None)

    def ask(self, argv: list[str], timeout: float = COMMAND_TIMEOUT_S) -> Answer:
        # A pass told to stop starts no command more, and acts on no answer: it may be from a command it killed.
        if self._stopping.is_set():
            raise _Stopped
        answer = self.run(argv, timeout)
        if self._stopping.is_set():
            raise _Stopped
        return answer

    def one_pass(self) -> None:
        self._stopping.clear()
        try:
            holds = self._holds()
            if self.reload is not None:
                self.plan = self.reload()
            jobs = self._read(slurm_jobs.show_argv(), slurm.parse_jobs)
            nodes = self._read(slurm_nodes.sinfo_argv(), slurm.parse_nodes)
        except _Unread as error:
            self.say("*", f"this pass reads nothing: {error}")
            return
        self._unsaid("*")
        rounds = self.store.held()
        work = [(node, partial(self._gone, node, round_, jobs)) for node, round_ in rounds.items() if node not in holds]
        work += [(node, partial(self._held, node, held, rounds.get(node), jobs, nodes.get(node)))
                 for node, held in holds.items()]
        self._each(work)

    # -- the nodes at once

    def _each(self, work: list[tuple[str, Callable[[], None]]]) -> None:
        """Each node's work of the pass, nodes at once (``workers`` threads at most, each taking the next node's when
        done with one). A node's step that raises ends its node's work alone: the others' run to their end, then the
        first raise ends the pass as before (the program exits; systemd starts it again). One node after another, a
        raise ended the pass for every node after it."""
        todo = deque(enumerate(work))
        raised: list[tuple[int, str, Exception]] = []
        # Each thread's own "returned", set as its last act: a join that a signal's exception interrupts can leave
        # is_alive() false while the thread still runs (CPython's _wait_for_tstate_lock), and the pass would return
        # with a step's command still running.
        returned = [threading.Event() for _ in range(min(self.workers, len(work)))]
        threads = [threading.Thread(target=self._steps, args=(todo, raised, done), name=f"gate-step-{i}")
                   for i, done in enumerate(returned)]
        try:
            for thread in threads:
                thread.start()
            for done in returned:
                done.wait()
        except BaseException:  # SIGTERM's SystemExit or a Ctrl-C, raised in this thread alone
            self._stop(returned)
            raise
        finally:
            for thread in threads:  # each past its last act, or never started: a moment at most
                if thread.ident is not None:
                    thread.join(STOP_POLL_S)
        raised.sort(key=lambda r: r[0])
        for _, node, error in raised:
            self._line(f"{node}: this pass's step failed: {type(error).__name__}: {error}")
        if raised:
            raise raised[0][2]

    def _steps(self, todo: deque, raised: list[tuple[int, str, Exception]], returned: threading.Event) -> None:
        """One thread's part of the pass: the next node's work, until none is left or the pass is told to stop."""
        try:
            while not self._stopping.is_set():
                try:
                    index, (node, step) = todo.popleft()  # deque's popleft: atomic, for every thread at once
                except IndexError:
                    return
                try:
                    step()
                except _Stopped:
                    return
                except Exception as error:  # noqa: BLE001 - the node's alone; the pass raises it once all are done
                    raised.append((index, node, error))
        finally:
            returned.set()

    def _stop(self, returned: list[threading.Event]) -> None:
        """The pass told to stop: no step starts a command or acts on an answer any more (ask), no node's work starts,
        and the commands running are killed, again until every thread has returned (a step may start its command
        just after a kill). None is left running once the caller exits."""
        self._stopping.set()
        while True:
            self.kill()
            waiting = [done for done in returned if not done.is_set()]
            if not waiting:
                return
            waiting[0].wait(STOP_POLL_S)

    def _held(self, node: str, held: list[Reservation], round_: Round | None, jobs: list[Shown],
              state: Node | None) -> None:
        if round_ is None or round_.reservation not in {r.name for r in held}:
            round_ = Round(held[0].name, held[0].gate[0], after_job=_last_job(jobs, held))
            self.store.save(node, round_)
            self._line(f"{node}: held by {round_.reservation}")
        self._step(node, held, round_, jobs, state)

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

    def _gone(self, node: str, round_: Round, jobs: list[Shown]) -> None:
        """The node's reservation is gone: the gate's own release (killed before it recorded it), or an admin's
        admission by hand. Its tests still queued or running are the gate's to cancel."""
        mine = [j.job_id for j in jobs if j.reservation == round_.reservation and j.active]
        if mine:
            self.ask(slurm_jobs.cancel_argv(mine))
        how = PASSED if round_.passed else BY_HAND
        self.store.admit(node, how, self.now(), round_.reservation)
        self.store.forget(node)
        self._unsaid(node)
        self._line(f"{node}: {how} ({round_.reservation} is gone)")

    # -- a held node's next step

    def _step(self, node: str, held: list[Reservation], round_: Round, jobs: list[Shown],
              state: Node | None) -> None:
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
        if not slurm.usable(state):
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
        active = [j for j in ours if j.active]
        if active:
            waiting = next((j for j in active if j.state == "PENDING"), None)
            if waiting is not None and self._waits_for_good(node, round_, test["name"], waiting):
                return
            self.say(node, f"runs {test['name']}")
            return
        if ours:
            self._ended(node, held[0], round_, test, max(ours, key=lambda j: j.job_id), state)
            if test["name"] in round_.results:
                # Judged: its next test (or the decision) now, not a pass later. Each pass a test waited for cost a
                # pass's time a test, and a pass over 61 held nodes takes seconds of reads (issue 50).
                self._step(node, held, round_, jobs, state)
            return
        # The script cuts its tool at the entry's timeout (exit 124, judged a failure); Slurm's bound comes after it.
        self._submit(node, held[0], test, float(test.get("timeout") or DEFAULT_BUDGET_S) + SLURM_MARGIN_S, state)

    def _waits_for_good(self, node: str, round_: Round, name: str, job: Shown) -> bool:
        """A test that waits past the bound, or for a reason no wait cures: cancelled, and the node drained
        cannot run. True where it was."""
        since = job.submitted_at
        waited = self.clock() - since if since is not None else 0.0
        if job.reason not in slurm_jobs.NEVER_STARTS and waited <= self.pending_bound_s:
            return False
        self.ask(slurm_jobs.cancel_argv([job.job_id]))
        round_.discarded.append(job.job_id)
        self.store.save(node, round_)
        self._drain(node, cannot_run(f"{name} (job {job.job_id}) pending {job.reason or 'no reason'} "
                                     f"for {int(waited)} s"))
        return True

    def _unplanned(self, node: str, held: list[Reservation], jobs: list[Shown]) -> None:
        names = {r.name for r in held}
        mine = [j.job_id for j in jobs if j.reservation in names and j.active]
        if mine:
            self.ask(slurm_jobs.cancel_argv(mine))
            return  # slurmctld deletes no reservation a job is still in: the next pass does
        for reservation in held:
            answer = self.ask(reservations.delete_argv(reservation.name))
            if not answer.ok:
                self.say(node, f"not in admission.json; {reservation.name} could not be deleted: {answer.why}")
                return
        self.store.admit(node, NO_ADMISSION, self.now(), held[0].name)
        self.store.forget(node)
        self._unsaid(node)
        self._line(f"{node}: released from {', '.join(sorted(names))}: admission.json has it no more")

    def _submit(self, node: str, hold: Reservation, test: dict, seconds: float, state: Node) -> None:
        name = test["name"]
        # Only the partitions whose TimeLimit lets the job run: with EnforcePartLimits=ALL one that does not makes
        # sbatch refuse the job in all of them.
        minutes = slurm_jobs.minutes(seconds)
        partitions = state.fitting(minutes * 60)
        if state.partitions and not partitions:
            self._drain(node, cannot_run(f"{name} needs {minutes} min, TimeLimit {state.limits_said()}"))
            return
        os.makedirs(self.scripts_dir, mode=0o700, exist_ok=True)
        # The node's own file (a test's name has no '-'): nodes' steps write theirs at once, sbatch reads it after.
        path = os.path.join(self.scripts_dir, f"{node}-{name}.sh")
        with open(path, "w", encoding="utf-8") as file:
            file.write(slurm.confined(self.script(test, [node]), self.runs_dir, node))
        answer = self.ask(slurm.submit_argv(hold.name, node, partitions, name, seconds, path))
        if not answer.ok:
            refusal = slurm_jobs.refusal(answer.err)
            if refusal is None:  # slurmctld not reached: the next pass tries again
                self.say(node, f"sbatch could not submit {name}: {answer.why}")
                return
            self._drain(node, cannot_run(f"{name}: sbatch: {refusal}"))
            return
        self._line(f"{node}: {name} submitted as job {answer.out.strip()}")

    def _ended(self, node: str, hold: Reservation, round_: Round, test: dict, job: Shown,
               state: Node) -> None:
        name = test["name"]
        if job.state not in slurm_jobs.RAN and job.state != slurm_jobs.TIMED_OUT:
            round_.discarded.append(job.job_id)
            self.store.save(node, round_)
            self._line(f"{node}: {name} (job {job.job_id}) ended {job.state}, says nothing of the node: run again")
            return
        answer = self.ask(slurm.read_argv(hold.name, node, state.fitting(slurm.READ_TIME_LIMIT_MIN * 60),
                                          job.job_id, self.runs_dir), READ_TIMEOUT_S)
        # A run cut at its bound is judged as timeout(1) says it: its output as far as it got, exit 124.
        status = 124 if job.state == slurm_jobs.TIMED_OUT else job.exit_status
        if answer.rc == slurm.READ_REFUSED:
            # Missing, foreign or unreadable: the test fails, named; it is never judged on what someone left there.
            why = slurm.refused(answer.out) + (f" (job exit status {status})" if status else "")
            results = [Result(node, name, False, detail=why)]
        elif not answer.ok:
            round_.discarded.append(job.job_id)
            self.store.save(node, round_)
            self._line(f"{node}: the output of {name} (job {job.job_id}) could not be read ({answer.why}): run again")
            return
        else:
            # A verdict with nothing in it passes no one.
            results = (self.judge(test, node, answer.out, status)
                       or [Result(node, name, False, detail="gave no result")])
        round_.results[name] = {"job": job.job_id, "results": [
            {"test": r.test, "passed": bool(r.passed), "reason": r.reason, "record": r.record(SOURCE)}
            for r in results]}
        self.store.save(node, round_)
        verdicts = round_.results[name]["results"]
        self._line(f"{node}: {name} (job {job.job_id}) " + ("passed" if all(v["passed"] for v in verdicts) else
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
        self._drain(node, drain_for(failed[0]["test"], failed[0]["reason"]))

    def _drain(self, node: str, drain: Drain) -> None:
        """Drain ``node`` for the gate, with the node's state and reservations read again just before (the pass's
        are seconds old, or minutes where a read waited): only where the gate's hold is the whole of its maintenance
        and nothing else holds it (drained by anyone, the gate too: its first reason stays; down; failing)."""
        try:
            state = slurm_nodes.parse_node(self._read_text(slurm_nodes.show_argv(node)))
            holds = self._read(reservations.show_argv(), reservations.parse_reservations)
        except (_Unread, ParseError) as error:
            self.say(node, f"not drained ({drain.reason}): its state could not be read again: {error}")
            return
        gate_held = reservations.gate_hold(holds, node) is not None
        if state.drained or state.kept_by_another((CAUSE,), gate_held=gate_held):
            self.say(node, f"not drained ({drain.reason}): held meanwhile ({'+'.join(sorted(state.flags))}"
                     f"{', ' + state.reason if state.reason else ''})")
            return
        answer = self.ask(drains.drain_argv(node, drain.reason))
        self.say(node, f"drained: {drain.reason}" if answer.ok else
                 f"not drained ({drain.reason}): slurmctld refused: {answer.why}")

    def _read_text(self, argv: list[str]) -> str:
        answer = self.ask(argv)
        if not answer.ok:
            raise _Unread(f"{' '.join(argv[:3])}: {answer.why}")
        return answer.out

    def _release(self, node: str, held: list[Reservation], round_: Round) -> None:
        for reservation in held:
            answer = self.ask(reservations.delete_argv(reservation.name))
            if not answer.ok:
                self.say(node, f"passed; {reservation.name} could not be deleted: {answer.why}")
                return
        self.store.admit(node, PASSED, self.now(), round_.reservation)
        self.store.forget(node)
        self._unsaid(node)
        self._line(f"{node}: passed, released from {', '.join(r.name for r in held)}")


class _Unread(Exception):
    """A Slurm command of the pass did not answer, or not as it should."""


class _Stopped(BaseException):
    """The pass was told to stop: a step asks nothing more. Not an Exception: no step's handling may catch it."""


def _last_job(jobs: list[Shown], held: list[Reservation]) -> int:
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
