"""`clusterforge accept`: the cluster's acceptance on demand, run from the admin's machine through the controller.

In rounds, each a set of Slurm batch jobs submitted at once (jobs.py) and waited for:

1. the single-node tests (dcgm, nvbandwidth, allreduce, ib_write_bw, as each node's profile has them) on every node
   that is idle (or inside the ``cf-accept`` reservation accept makes and deletes, with ``reserve``); a node
   drained, down, busy or held by another reservation is left alone and named. Each test that failed (or was cut at
   its bound) is run once more alone, in one more round, before a drain: failed again, the node is found; passed,
   it is reported flaky with both numbers and not drained. A node that failed once is left out of the rest;
2. ``allreduce_multi`` across each leaf's nodes, all leaves at once, then across the spine (every node that passed);
3. a multi-node run below its floor, or cut at its time budget, is bisected (bisect.py) with the nodes of the runs
   that passed as known good; a node found has its rails run one at a time beside a known-good peer, which names
   a slow HCA.

Every node found is drained at the end through the node-state gate (slurm/drains.py: cause ``accept``, never over
another's drain) with the evidence in the reason: ``cf:accept:allreduce_multi 211 GB/s < 350 (gpu03+gpu05)``. The
``cf-accept`` reservation is deleted before the drains, since a node in a MAINT reservation is one the gate leaves
alone. Every result goes to the records (records.py) as each round ends, so a run cut short keeps what it measured:
here, and appended to the gate's on the controller, which the Slurm exporter reads (its alert on a node falling
behind sees accept's results as the gate's).

A job is bounded by its test's budget: Slurm ends it at ``--time`` (TIMEOUT), and a job still running a grace past
its budget is cancelled (scancel); either is a failure, "did not finish within N s". The test programs' output is
judged by admission.tests (``judge``), which refuses output it cannot read.

The test's entries come from admission.json (render/admission.py): accept reads of one only its ``test`` (the code)
and ``timeout``; the script and the verdict are admission.tests'. Pure orchestration: the controller is the callers'
session (reach's Controller) and the nodes' commands are run by their ``Run`` (SSH with sudo from the CLI, a local
shell in the tests).
"""

from __future__ import annotations

import dataclasses
import math
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import ClusterforgeError
from ..slurm import drains, reservations
from ..slurm import jobs as slurm_jobs
from ..words import counted
from ..admission import records
from ..reach.controller import Controller, ControllerRefused, ControllerUnreachable
from ..reach.ssh import Run
from . import bisect, jobs
from ..admission.verdict import Result, figure

Script = Callable[[Mapping[str, Any], list[str]], str]
Judge = Callable[[Mapping[str, Any], str, str, int], list[Any]]

CAUSE = "accept"
# A run cancelled while it waited in vain (wait_for): no verdict on its nodes, and no record.
NEVER_STARTED = "never started"
# sinfo's long states (%T) of a node that runs nothing and may: idle, or idle inside a reservation (maint for a MAINT
# one, as cf-accept is; reserved for any other); and of one running jobs, which a reservation lets end.
IDLE = ("idle", "maint", "reserved")
BUSY = ("mixed", "allocated", "completing")
MULTI = "allreduce_multi"
POLL_S = 2
DELETE_WAIT_S = 60  # for slurmctld to let the reservation go once its last job has ended
GRACE_S = 60      # past Slurm's time limit before accept cancels a job: Slurm's own end (KillWait 30 s) comes first
SOURCE = "accept"


class Stopped(ClusterforgeError):
    """accept will not go on (another accept's reservation is there): the message names the controller and says what
    to do. A controller that refuses a command stops it too, as reach's ControllerRefused."""


def code(entry: Mapping[str, Any]) -> str:
    return str(entry["name"])


def budget_s(entry: Mapping[str, Any]) -> int:
    """The test's bound: the tool is cut there (timeout(1) in its script)."""
    return int(entry["timeout"])


@dataclass(frozen=True, slots=True)
class Ran:
    """A job's end: its judged results (one per node, or one for the group), or why it did not finish."""

    job: jobs.Job
    results: tuple[Any, ...]
    cut: str = ""       # "did not finish within 300 s": cancelled, or ended by Slurm at its time limit

    @property
    def passed(self) -> bool:
        return not self.cut and bool(self.results) and all(r.passed for r in self.results)

    @property
    def failing(self) -> Any | None:
        return next((r for r in self.results if not r.passed), None)

    @property
    def test(self) -> str:
        """The test that failed, with its part where it has several (ib_write_bw:mlx5_0); else the job's."""
        failing = self.failing
        return failing.test if failing is not None and not self.cut else self.job.test

    @property
    def reason(self) -> str:
        """Why it failed, as verdict.Result says it: ``allreduce 402 GB/s < 460``."""
        if self.cut:
            return f"{self.job.test} {self.cut}"
        failing = self.failing
        return failing.reason if failing is not None else f"{self.job.test} gave no result"

    def records(self, nodes: Sequence[str], when: str) -> list[dict]:
        """One record per node of ``nodes`` per result: a group's result is each member's, the group named."""
        group = {"group": self.job.label} if len(self.job.nodes) > 1 or self.job.hca else {}
        if self.cut.startswith(NEVER_STARTED):
            return []
        if self.cut or not self.results:
            return [{"node": n, "test": self.job.test, "passed": False, "value": None, "unit": "", "floor": None,
                     "detail": self.cut or "gave no result", "reason": self.reason, "source": SOURCE, "time": when,
                     **group} for n in nodes]
        return [{**result.record(SOURCE), "node": node, "time": when, **group}
                for result in self.results for node in nodes]


@dataclass(frozen=True, slots=True)
class RailRan:
    """A rail's run beside a known-good peer, held to the multi-node floor shared among the rails: one HCA carries
    1/n of what n carry together."""

    ran: Ran
    rails: int

    @property
    def job(self) -> jobs.Job:
        return self.ran.job

    @property
    def passed(self) -> bool:
        if self.ran.cut or not self.ran.results:
            return False
        return all(r.value is not None and r.floor is not None and r.value >= r.floor / self.rails
                   for r in self.ran.results)

    @property
    def reason(self) -> str:
        result = self.ran.results[0] if self.ran.results and not self.ran.cut else None
        if result is None or result.value is None or result.floor is None:
            return self.ran.reason
        relation = ">=" if self.passed else "<"
        return (f"{result.test} {figure(result.value)} {result.unit} {relation} {figure(result.floor / self.rails)} "
                f"({figure(result.floor)} / {self.rails} rails)")


@dataclass(frozen=True, slots=True)
class Finding:
    """A node found at fault: the test (with its part: ib_write_bw:mlx5_0), why (the evidence: the number against its
    floor), the group it ran in when found by bisection, the slow rails named, and the drain that says all of it."""

    node: str
    test: str
    reason: str
    group: str = ""
    rail: str = ""

    @property
    def drain(self) -> drains.Drain:
        detail = self.reason.removeprefix(self.test).strip()
        extra = [f"({self.group})" if self.group else "", f"rail {self.rail}" if self.rail else ""]
        return drains.Drain(CAUSE, self.test, " ".join(p for p in [detail, *extra] if p))


@dataclass(frozen=True, slots=True)
class Flaky:
    """A node that passed a run and failed another of the same test (both beside nodes that passed): intermittent.
    Reported with each figure, in the order run; not drained on one of them."""

    node: str
    test: str
    figures: tuple[str, ...]      # "182.4 GB/s < 350 (gpu03+gpu05)", "392.1 GB/s >= 350 (gpu03+gpu07)"

    @property
    def reason(self) -> str:
        return f"{self.test} flaky: " + ", then ".join(self.figures)


def evidence(ran: Ran, test: str = "") -> str:
    """A run's figure against its floor and the group it ran in, passed or not: ``182.4 GB/s < 350 (a+b)``. ``test``:
    the part whose figure it is, where the run gives several (nvbandwidth:h2d), so that two runs compare alike."""
    if ran.cut or not ran.results:
        return f"{ran.reason.removeprefix(ran.job.test).strip()} ({ran.job.label})"
    result = next((r for r in ran.results if r.test == test), None) or ran.failing or ran.results[0]
    return f"{result.reason.removeprefix(result.test).strip()} ({ran.job.label})"


@dataclass(slots=True)
class Report:
    """What one accept found: the nodes tested and left alone, the results per node, the findings."""

    tested: list[str] = field(default_factory=list)
    left_alone: dict[str, str] = field(default_factory=dict)     # node: why (its state, reason, reservation)
    results: list[dict] = field(default_factory=list)            # every record written, in order
    findings: list[Finding] = field(default_factory=list)
    bisections: list[bisect.Bisection] = field(default_factory=list)
    rails: list[bisect.RailFinding] = field(default_factory=list)
    not_found: list[str] = field(default_factory=list)           # failing runs no node could be named for
    confirmations: tuple[bisect.Confirmation, ...] = ()
    flaky: list[Flaky] = field(default_factory=list)            # nodes that passed and failed: reported, not drained
    rounds: int = 0

    @property
    def exit_status(self) -> int:
        """1 for a finding; else 2 where nodes could not be tested (named); else 0. check gives 2 the precedence (its
        answer is incomplete); accept's findings come first, being what it is run for, and a node left alone is
        named either way."""
        if self.findings or self.not_found or self.flaky:
            return 1
        return 2 if self.left_alone else 0


class Accept:
    """One acceptance run. ``tests_of``: each node's test entries (admission.json's); ``leaves``: the fabric's leaves
    (name, nodes) for the multi-node runs; ``hcas``: each node's HCAs for the rail round."""

    def __init__(self, tests_of: Mapping[str, Sequence[Mapping[str, Any]]], leaves: Sequence[tuple[str, Sequence[str]]],
                 hcas: Mapping[str, Sequence[str]], controller: Controller, node: Callable[[str], Run],
                 say: Callable[[str], None], script: Script, judge: Judge, records_dir: Path | None,
                 reserve: bool = False, wait_s: int = 0, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, now: Callable[[], str] | None = None,
                 controller_records: str | None = None, output_base: str = jobs.OUTPUT_BASE,
                 partitions: Sequence[tuple[str, Sequence[str], float, bool]] = ()) -> None:
        self.tests_of, self.leaves, self.hcas = tests_of, leaves, hcas
        self.controller, self.node, self.say = controller, node, say
        self.script, self.judge, self.records_dir = script, judge, records_dir
        # The gate's record directory on the controller (records.ON_CONTROLLER), where each round's records are
        # appended too; None: kept here only.
        self.controller_records = controller_records
        self.reserve, self.wait_s, self.clock, self.sleep = reserve, wait_s, clock, sleep
        self.now = now or (lambda: datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        self.report = Report()
        # The cluster's partitions (name, member nodes, MaxTime in seconds, inf for none, whether the default), in the
        # inventory's order: each job names one its nodes are all in (partition_of).
        self.partitions = [(name, frozenset(members), seconds, default)
                           for name, members, seconds, default in partitions]
        # This run's own output directory on every node it tests (jobs.py): made before the first job, read from
        # only where it is root's alone, removed at the end.
        self.output_dir = jobs.run_directory(output_base)
        self.prepared: list[str] = []
        # How many multi-node runs each node passed in this run: bisection pads with a node that passed one, and a
        # node found is confirmed beside one that passed two (bisect.confirm_all).
        self.passes: dict[str, int] = {}

    # ------------------------------------------------------------------ which nodes

    def eligible(self) -> list[str]:
        """The nodes to test: idle (with ``reserve``, busy too: the reservation keeps new jobs off them while theirs
        end), in no one else's reservation; every other is named in ``left_alone``."""
        states = self.controller.states()
        reserved: dict[str, str] = {}
        for reservation in self.controller.reservations():
            if reservation.name == jobs.RESERVATION and self.reserve:
                raise Stopped(f"{self.controller.name}: the reservation {jobs.RESERVATION} exists already: another "
                              "accept runs, or one was killed; once its jobs (squeue "
                              f"--reservation={jobs.RESERVATION}) have ended, delete it with "
                              f"`{shlex.join(reservations.delete_argv(jobs.RESERVATION))}`")
            for name in self.controller.hostnames(reservation.nodes):
                reserved.setdefault(name, reservation.name)
        usable = IDLE + BUSY if self.reserve else ("idle",)
        found = []
        for name in self.tests_of:
            state = states.get(name)
            if state is None:
                self.report.left_alone[name] = "not listed by sinfo"
            elif name in reserved:
                self.report.left_alone[name] = f"in reservation {reserved[name]}"
            elif state.state not in usable:
                self.report.left_alone[name] = f"{state.state}{', ' + repr(state.reason) if state.reason else ''}"
            else:
                found.append(name)
        return found

    def wait_until_idle(self, nodes: list[str]) -> list[str]:
        """With ``reserve``: until the users' jobs on the reserved nodes end, at most ``wait_s``; the nodes still
        busy then (or taken by another meanwhile) are left alone, named."""
        deadline = self.clock() + self.wait_s
        while True:
            # sinfo marks a node in a MAINT reservation with "$" (allocated$ while a job runs), cf-accept's too.
            states = {n: s.state.rstrip("$") for n, s in self.controller.states().items()}
            busy = [n for n in nodes if states.get(n) in BUSY]
            if not busy or self.clock() >= deadline:
                break
            self.sleep(POLL_S)
        for name in nodes:
            state = states.get(name)
            if state not in IDLE:
                why = (f"still running jobs after {self.wait_s} s" if state in BUSY
                       else state if state is not None else "not listed by sinfo")
                self.report.left_alone[name] = why
                self.say(f"{name} left alone: {why}")
        return [n for n in nodes if n not in self.report.left_alone]

    # ------------------------------------------------------------------ jobs and rounds

    def job(self, entry: Mapping[str, Any], nodes: Sequence[str], hca: str | None = None) -> jobs.Job:
        job = jobs.Job(code(entry), tuple(nodes), budget_s(entry), self.script(entry, list(nodes)), hca,
                       jobs.RESERVATION if self.reserve else None, self.output_dir)
        return dataclasses.replace(job, partition=self.partition_of(nodes, job.limit_s))

    def partition_of(self, nodes: Sequence[str], limit_s: int) -> str | None:
        """The partition a job on ``nodes`` goes to: one they are all in whose MaxTime takes the job's limit, the
        default one first; else one they are all in (sbatch names the limit it refuses); None where no partition
        holds them all (or none is known): Slurm's default."""
        holding = [(name, seconds, default) for name, members, seconds, default in self.partitions
                   if set(nodes) <= members]
        fitting = sorted((p for p in holding if p[1] >= limit_s), key=lambda p: not p[2])
        chosen = fitting or holding
        return chosen[0][0] if chosen else None

    def entry(self, entry: Mapping[str, Any], nodes: Sequence[str]) -> Mapping[str, Any]:
        """The entry as judged for ``nodes``: a multi-node run must have had every GPU of every node as a rank."""
        if code(entry) != MULTI:
            return entry
        return {**entry, "ranks": int(entry.get("gpus") or 0) * len(nodes)}

    def run_jobs(self, batch: Sequence[tuple[jobs.Job, Mapping[str, Any]]]) -> list[Ran]:
        """Submit every job at once, wait for each to end (cancelling one past its budget), judge each. Stopped or
        interrupted meanwhile, the jobs submitted are cancelled: none outlives the run that waits for it."""
        ids: list[str] = []
        try:
            for job, _ in batch:
                ids.append(self.controller.submit(job.submit_command(), f"sbatch of {job.name} on {job.label}"))
            shown, cut = self.wait_for(ids, [job for job, _ in batch])
        except BaseException:
            for job_id in ids:
                try:
                    self.controller.cancel(job_id)
                except ControllerUnreachable:
                    break
                except ControllerRefused:
                    continue
            raise
        done = []
        for job_id, (job, entry) in zip(ids, batch):
            seen = shown[job_id]
            if seen.state == "TIMEOUT":
                cut.setdefault(job_id, f"did not finish within {job.budget_s} s (Slurm's time limit)")
            output, refused = self.read_output(seen)
            if job_id in cut:
                results = []
            elif refused:
                # No verdict from anything but the job's own output: a missing or foreign one fails the test.
                results = [Result(job.nodes[0], job.test, False, detail=f"output refused: {refused}")]
            else:
                results = self.judge(self.entry(entry, job.nodes), job.nodes[0], output, seen.exit_status)
            done.append(Ran(job, tuple(results), cut.get(job_id, "")))
        return done

    def wait_for(self, ids: list[str], batch: list[jobs.Job]) -> tuple[dict[str, slurm_jobs.Shown], dict[str, str]]:
        """Until every job has ended; one still running a grace past its budget is cancelled (``cut``), as is one
        that waits for what no wait cures: a node of its taken by someone meanwhile (drained, down, reserved), or a
        limit it breaks. Such a run never started: it says nothing of its nodes."""
        shown, cancelled, never_started = self.controller.wait(
            ids, {i: job.limit_s + GRACE_S for i, job in zip(ids, batch)}, self.sleep, POLL_S,
            gives_up=lambda job: job.waits_for_nodes or job.reason in slurm_jobs.NEVER_STARTS)
        cut = {i: f"did not finish within {job.budget_s} s (cancelled)" for i, job in zip(ids, batch) if i in cancelled}
        return shown, cut | {i: f"{NEVER_STARTED} (Slurm: {why}; cancelled)" for i, why in never_started.items()}

    def read_output(self, seen: slurm_jobs.Shown) -> tuple[str, str]:
        """The job's output from its batch host, and "" ; or "" and why it was refused (jobs.read_output_command)."""
        if not seen.batch_host:
            return "", "the job ran on no node (Slurm names no batch host)"
        if seen.batch_host not in self.prepared:
            return "", f"{seen.batch_host} is not a node this run made its output directory on"
        answer = self.node(seen.batch_host)(jobs.read_output_command(self.output_dir, seen.job_id))
        if answer.rc != 0:
            return "", jobs.refusal(answer.err) or f"reading it on {seen.batch_host} failed ({answer.why})"
        return answer.out, ""

    def prepare(self, nodes: list[str]) -> list[str]:
        """This run's output directory made on each node (jobs.prepare_command); a node where it cannot be is left
        alone, named. The nodes prepared."""
        for node in nodes:
            answer = self.node(node)(jobs.prepare_command(self.output_dir))
            if answer.rc == 0:
                self.prepared.append(node)
            else:
                why = jobs.refusal(answer.err) or answer.why
                self.report.left_alone[node] = f"no output directory of root's alone could be made: {why}"
                self.say(f"{node} left alone: {self.report.left_alone[node]}")
        return [n for n in nodes if n in self.prepared]

    def clean_up(self) -> None:
        """The run's output directory removed on each node (said where it could not be: it holds root's files only)."""
        for node in self.prepared:
            try:
                answer = self.node(node)(jobs.remove_command(self.output_dir))
            except Exception as error:  # noqa: BLE001 - a node lost at the end: the run's result stands
                answer = None
                why = str(error)
            else:
                why = answer.why
            if answer is None or answer.rc != 0:
                self.say(f"{node}: the run's output directory {self.output_dir} was not removed ({why})")

    def round(self, what: str, batch: Sequence[tuple[jobs.Job, Mapping[str, Any]]],
              rails: Mapping[str, int] | None = None) -> list[Any]:
        """One round: its jobs, judged (with ``rails``, each node's rail count, a rail's run against its share of
        the floor), and a progress line."""
        started = self.clock()
        ran: list[Any] = self.run_jobs(batch)
        for r in ran:
            if r.passed and r.job.test == MULTI and not r.job.hca:
                for node in r.job.nodes:
                    self.passes[node] = self.passes.get(node, 0) + 1
        if rails:
            ran = [RailRan(r, rails[r.job.nodes[0]]) for r in ran]
        self.report.rounds += 1
        failed = [r for r in ran if not r.passed]
        said = f"round {self.report.rounds}: {what}: {counted(len(ran), 'run')}, {len(ran) - len(failed)} passed"
        if failed:
            said += "; failed: " + "; ".join(f"{r.job.label} ({r.reason})" for r in failed)
        self.say(f"{said} ({self.clock() - started:.0f} s)")
        return ran

    def keep(self, ran: Sequence[Ran]) -> None:
        when = self.now()
        kept = [record for r in ran for record in r.records(r.job.nodes, when)]
        self.report.results += kept
        if self.records_dir is not None and kept:
            records.append(self.records_dir, kept)
        if self.controller_records is not None and kept:
            # A copy the monitoring reads: the run goes on without it, said, since the records here are whole.
            for command in records.append_commands(kept, self.controller_records):
                answer = self.controller.answer(command)
                if answer.rc != 0:
                    self.say(f"this round's records could not be added to {self.controller_records} on the "
                             f"controller ({answer.why}): the monitoring does not see them (they are kept here)")
                    return

    # ------------------------------------------------------------------ the run

    def run(self) -> Report:
        nodes = self.eligible()
        for name, why in self.report.left_alone.items():
            self.say(f"{name} left alone: {why}")
        if not nodes:
            self.say("no node to test")
            return self.report
        nodes = self.prepare(nodes)
        if not nodes:
            self.say("no node to test")
            return self.report
        try:
            return self.accept(nodes)
        finally:
            self.clean_up()

    def accept(self, nodes: list[str]) -> Report:
        if self.reserve:
            minutes = math.ceil(self.most_s(nodes) / 60)
            # reservations.create_argv holds for as long as Slurm lets a reservation last (the gate's hold is meant
            # never to end by itself); accept's is bounded by the run, so that a run killed before it could delete it
            # leaves no node held past it.
            argv = [f"Duration={minutes}" if a.startswith("Duration=") else a
                    for a in reservations.create_argv(jobs.RESERVATION, ",".join(nodes))]
            self.controller.ask(shlex.join(argv), f"creating the reservation {jobs.RESERVATION}")
            self.say(f"reservation {jobs.RESERVATION} holds {counted(len(nodes), 'node')}")
            self.say(f"reservation {jobs.RESERVATION} lasts {minutes} min at most (the most this run can take): "
                     "deleted at the end, and should the run be killed, Slurm ends it by itself then")
        try:
            if self.reserve:
                nodes = self.wait_until_idle(nodes)
            self.report.tested = list(nodes)
            self.multi_node(self.single_node(nodes))
        except BaseException:
            if self.reserve:
                self.unreserve(raising=False)
            raise
        if self.reserve:
            self.unreserve(raising=True)
        self.drain()
        return self.report

    def most_s(self, nodes: Sequence[str]) -> int:
        """The most this run can take on ``nodes``, each job at its limit and accept's grace past it: the wait for
        users' jobs, each node's single-node jobs one after another (each asks for the node alone), twice (every one
        failing is run again before its drain), and the multi-node rounds, at most the leaves' and the spine's, each
        bisected within ceil(log2 N) + 1 rounds (the confirming ones counted), and the rail round, one job a rail, one
        after another on the same two nodes."""
        def limit(entry: Mapping[str, Any]) -> int:
            return (math.ceil(budget_s(entry) / 60) + 1) * 60 + GRACE_S

        single = max((sum(limit(e) for e in self.tests_of[n] if code(e) != MULTI) for n in nodes), default=0)
        multi = max((limit(e) for n in nodes for e in self.tests_of[n] if code(e) == MULTI), default=0)
        rails = max((len(self.hcas.get(n) or ()) for n in nodes), default=0)
        rounds = 2 * (1 + bisect.bound(len(nodes))) + rails
        return self.wait_s + 2 * single + rounds * multi + DELETE_WAIT_S

    def unreserve(self, raising: bool) -> None:
        """Delete cf-accept. slurmctld refuses while a job of it has not quite ended ("Requested reservation is in
        use": a job just cancelled is still completing), so the delete is tried again for a while. Where it still
        fails, the admin is told how to delete it; raised only where no other error is on its way already."""
        command = shlex.join(reservations.delete_argv(jobs.RESERVATION))
        deadline = self.clock() + DELETE_WAIT_S
        while (answer := self.controller.answer(command)).rc != 0 and self.clock() < deadline:
            self.sleep(POLL_S)
        if answer.rc == 0:
            self.say(f"reservation {jobs.RESERVATION} deleted")
            return
        why = (f"the reservation {jobs.RESERVATION} could not be deleted ({answer.why}): delete it with `{command}` "
               "once its jobs have ended")
        if raising:
            raise ControllerRefused(self.controller.name, why)
        self.say(why)

    def dry_run(self, offline: bool = False) -> list[tuple[str, list[jobs.Job]]]:
        """The rounds accept would run now, each with its jobs, where every run passes (a failed single-node test is
        run once more alone, in one more round; a failing multi-node run is bisected, in at most ceil(log2 N) + 1 more
        rounds, and a node found has its rails run in one more); changes nothing. ``offline``: the controller is not
        asked, and every node is planned as if it were idle (its state is Slurm's to say); the jobs are otherwise
        the same, their partitions and scripts being the inventory's."""
        nodes = list(self.tests_of) if offline else self.eligible()
        rounds = []
        single = [self.job(e, [n]) for n in nodes for e in self.tests_of[n] if code(e) != MULTI]
        if single:
            rounds.append((f"single-node tests on {counted(len(nodes), 'node')}", single))
        groups, spine = self.multi_groups(nodes)
        if groups:
            rounds.append((f"{MULTI} across {counted(len(groups), 'leaf', 'leaves')}",
                           [self.job(self.multi_entry(m), m) for _, m in groups]))
        if spine:
            rounds.append((f"{MULTI} across the spine ({counted(len(spine), 'node')})",
                           [self.job(self.multi_entry(spine), spine)]))
        return rounds

    def multi_groups(self, nodes: list[str]) -> tuple[list[tuple[str, list[str]]], list[str]]:
        """Each leaf's nodes that run allreduce_multi (two at least), and the spine's (every such node) where the
        nodes span more than one leaf."""
        with_multi = [n for n in nodes if any(code(e) == MULTI for e in self.tests_of[n])]
        groups = []
        for name, members in self.leaves:
            parts = self.split([n for n in members if n in with_multi])
            groups += [(name if len(parts) == 1 else f"{name} ({part})", sub) for part, sub in parts]
        groups = [(name, members) for name, members in groups if len(members) >= 2]
        # The spine: the nodes one partition holds, the most of them (a job runs in one partition).
        spine = max((sub for _, sub in self.split(with_multi)), key=len, default=[])
        return groups, spine if len(groups) > 1 and len(spine) >= 2 else []

    def split(self, nodes: list[str]) -> list[tuple[str | None, list[str]]]:
        """``nodes`` by partition, as a multi-node job can run them (in one partition): those of the partition that
        holds the most of them, then of the rest likewise; one group, no partition named, where none is known."""
        rest, out = list(nodes), []
        while rest and self.partitions:
            name, members, _, _ = max(self.partitions, key=lambda p: len(p[1].intersection(rest)))
            part = [n for n in rest if n in members]
            if not part:
                break
            out.append((name, part))
            rest = [n for n in rest if n not in members]
        return out + ([(None, rest)] if rest else [])

    def single_node(self, nodes: list[str]) -> list[str]:
        """Every node's single-node tests in one round, each that failed run once more before a drain (confirm_alone);
        the nodes that passed them all the first time: one that failed, even once, takes no part in the multi-node
        runs, where an intermittent node would make the nodes beside it look slow."""
        batch = [(self.job(entry, [n]), entry) for n in nodes for entry in self.tests_of[n] if code(entry) != MULTI]
        if not batch:
            return nodes
        ran = self.round(f"single-node tests on {counted(len(nodes), 'node')}", batch)
        self.keep(ran)
        failed = [(r, entry) for r, (_, entry) in zip(ran, batch) if not r.passed]
        self.confirm_alone(failed)
        return [n for n in nodes if n not in {r.job.nodes[0] for r, _ in failed}]

    def confirm_alone(self, failed: Sequence[tuple[Ran, Mapping[str, Any]]]) -> None:
        """Each failed single-node test run once more alone, in one round: failed again, a finding with the
        confirming run's figure (drained); passed, the node reported flaky with both numbers (not drained). A run
        cut at its bound is run again as any failure."""
        nodes = dict.fromkeys(r.job.nodes[0] for r, _ in failed)
        what = ", ".join(f"{n} alone ({', '.join(r.job.test for r, _ in failed if r.job.nodes[0] == n)})"
                         for n in nodes)

        def run_round(trials: Sequence[bisect.Trial]) -> list[Ran]:
            # The trials are the failed runs', in their order: each job made again as it was.
            again = self.round(f"confirming {what}", [(self.job(entry, r.job.nodes), entry) for r, entry in failed])
            self.keep(again)
            return again

        culprits = [(bisect.Culprit(r.job.nodes[0], bisect.Trial(r.job.nodes), r), r.job.test) for r, _ in failed]
        confirmed = bisect.confirm_alone(culprits, run_round)
        self.report.confirmations += confirmed
        for confirmation in confirmed:
            self.say(confirmation.summary())
            first: Ran = confirmation.culprit.outcome  # type: ignore[assignment]
            again: Ran = confirmation.reruns[0].outcome  # type: ignore[assignment]
            if confirmation.verdict == bisect.SLOW:
                self.report.findings.append(Finding(confirmation.node, again.test, again.reason))
            else:
                self.report.flaky.append(Flaky(confirmation.node, first.test,
                                               (evidence(first, first.test), evidence(again, first.test))))

    def multi_entry(self, nodes: Sequence[str]) -> Mapping[str, Any]:
        """The allreduce_multi entry a group runs: its first node's (a group's nodes share a profile as a rule; where
        they do not, the first node's floor and budget hold for all)."""
        return next(e for e in self.tests_of[nodes[0]] if code(e) == MULTI)

    def multi_node(self, nodes: list[str]) -> None:
        """allreduce_multi across each leaf, all at once; the failing leaves bisected together; then across the
        spine, every node not found, where every leaf's failure was explained by the nodes found."""
        groups, spine = self.multi_groups(nodes)
        explained = True
        if groups:
            batch = [(self.job(self.multi_entry(m), m), self.multi_entry(m)) for _, m in groups]
            ran = self.round(f"{MULTI} across {counted(len(batch), 'leaf', 'leaves')}", batch)
            self.keep([r for r in ran if r.passed])
            good = [n for r in ran if r.passed for n in r.job.nodes]
            failing = [(name, r.job.nodes) for (name, _), r in zip(groups, ran) if not r.passed]
            if failing:
                explained = self.bisect(", ".join(where for where, _ in failing), [g for _, g in failing], good)
        found = {f.node for f in self.report.findings} | {f.node for f in self.report.flaky}
        spine = [n for n in spine if n not in found]
        if len(spine) >= 2 and explained:
            entry = self.multi_entry(spine)
            [ran] = self.round(f"{MULTI} across the spine ({counted(len(spine), 'node')})",
                               [(self.job(entry, spine), entry)])
            if ran.passed:
                self.keep([ran])
            else:
                self.bisect("the spine", [tuple(spine)], [])

    def bisect(self, where: str, groups: Sequence[Sequence[str]], good: Sequence[str]) -> bool:
        """The failing groups bisected together; each node found run again before its drain (bisect.confirm_all); the
        nodes confirmed slow have their rails run (one round for all) and are findings, the flaky ones are reported
        with their numbers and not drained. Whether every failure was explained by a node found."""

        def run_round(trials: Sequence[bisect.Trial]) -> list[Ran]:
            batch = [(self.job(entry, t.nodes), entry) for t in trials for entry in [self.multi_entry(t.nodes)]]
            ran = self.round(f"bisecting {where}", batch)
            self.keep([r for r in ran if r.passed])
            return ran

        def confirm_round(trials: Sequence[bisect.Trial]) -> list[Ran]:
            batch = [(self.job(entry, t.nodes), entry) for t in trials for entry in [self.multi_entry(t.nodes)]]
            ran = self.round("confirming " + ", ".join(f"{t.nodes[0]} beside {t.nodes[1]}" for t in trials), batch)
            self.keep([r for r in ran if r.passed])
            return ran

        found = bisect.bisect_all(groups, good, run_round, passes=dict(self.passes))
        self.report.bisections.append(found)
        self.say(f"{where}: {found.summary()} in {counted(found.rounds, 'round')}")
        for culprit in found.culprits:
            self.keep_one(culprit.outcome, culprit.node)  # type: ignore[arg-type]
        confirmed = bisect.confirm_all(found, confirm_round) if found.culprits else ()
        self.report.confirmations += confirmed
        suspects, slow_runs = [], {}
        explained = True
        for confirmation in confirmed:
            self.say(confirmation.summary())
            verdict = confirmation.verdict
            if verdict == bisect.SLOW and confirmation.last is not None:
                last = confirmation.last
                self.keep_one(last.outcome, confirmation.node)  # type: ignore[arg-type]
                slow_runs[confirmation.node] = last
                if self.hcas.get(confirmation.node):
                    suspects.append((confirmation.node, last.confirmer, list(self.hcas[confirmation.node])))
            elif verdict == bisect.FLAKY:
                first: Ran = confirmation.culprit.outcome  # type: ignore[assignment]
                self.report.flaky.append(Flaky(confirmation.node, first.job.test, (
                    evidence(first), *(evidence(r.outcome) for r in confirmation.reruns))))  # type: ignore[arg-type]
            elif verdict == bisect.CLEARED and confirmation.peer_outcome is not None:
                peer_run: Ran = confirmation.peer_outcome  # type: ignore[assignment]
                self.keep_one(peer_run, confirmation.peer)
                earlier = self.passed_before(confirmation.peer)
                self.report.flaky.append(Flaky(confirmation.peer, peer_run.job.test, (
                    *([earlier] if earlier else []), evidence(confirmation.culprit.outcome),  # type: ignore[arg-type]
                    evidence(peer_run))))
            else:
                explained = False
                self.report.not_found.append(f"{where}: {confirmation.summary()}")
        slow = {r.node: r for r in self.rails(suspects)}
        for node, last in slow_runs.items():
            ran: Ran = last.outcome  # type: ignore[assignment]
            rail = slow.get(node)
            named = ",".join(rail.slow) if rail and 0 < len(rail.slow) < len(rail.outcomes) else ""
            self.report.findings.append(Finding(node, ran.test, ran.reason, last.trial.label, named))
        if found.not_reproduced or found.unresolved or found.cleared_suspects:
            self.report.not_found.append(f"{where}: {found.summary()}")
            return False
        return explained

    def keep_one(self, ran: Ran, node: str) -> None:
        """A failing group run kept in one node's record alone: the node it is the evidence against."""
        self.keep([dataclasses.replace(ran, job=dataclasses.replace(ran.job, nodes=(node,)))])

    def passed_before(self, node: str) -> str:
        """The last multi-node run ``node`` passed in this run, as evidence words: ``392.1 GB/s >= 350 (a+b)``."""
        record = next((r for r in reversed(self.report.results)
                       if r["node"] == node and r["test"] == MULTI and r["passed"]), None)
        if record is None:
            return ""
        words = str(record["reason"]).removeprefix(MULTI).strip()
        return f"{words} ({record['group']})" if record.get("group") else words

    def rails(self, suspects: list[tuple[str, str, list[str]]]) -> list[bisect.RailFinding]:
        """Each node found run beside its known-good peer once per HCA, all in one round."""
        if not suspects:
            return []

        def run_round(trials: Sequence[bisect.Trial]) -> list[RailRan]:
            batch = [(self.job(entry, t.nodes, t.hca), entry) for t in trials for entry in [self.multi_entry(t.nodes)]]
            return self.round("the rails of " + ", ".join(f"{n} beside {p}" for n, p, _ in suspects)
                              + ", one HCA each", batch, rails={n: len(h) for n, _, h in suspects})

        found = bisect.rails_all(suspects, run_round)
        self.report.rails += found
        for rail in found:
            self.say(rail.summary())
        return found

    def drain(self) -> None:
        """Each node found, drained through the gate (never over another's drain), with its evidence; then read back:
        a node someone else took meanwhile keeps their state and reason, and is said to."""
        first: dict[str, Finding] = {}
        for finding in self.report.findings:
            first.setdefault(finding.node, finding)
        for node, finding in first.items():
            self.controller.ask(drains.drain_command(node, finding.drain), f"draining {node}")
        states = self.controller.states() if first else {}
        for node, finding in first.items():
            state = states.get(node)
            if state is not None and state.reason == finding.drain.reason:
                self.say(f"{node} drained: {finding.drain.reason!r}")
            else:
                held = f"{state.state}{', ' + repr(state.reason) if state.reason else ''}" if state else "not listed"
                self.say(f"{node} left as it is, held by another ({held}): not drained for {finding.drain.reason!r}")
