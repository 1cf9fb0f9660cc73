"""A roll through the compute nodes, batch after batch, over the inventory's SSH settings (reach/): on the
controller, drain the batch with clusterforge's reason (drains.py), wait until no job runs there (bounded: a job is
never killed), apply the change (the deploy limited to the batch) where there is one, have Slurm reboot it where
asked (`scontrol reboot ASAP nextstate=resume`, the inventory's RebootProgram) and wait until every
node is back (Slurm saw it boot after the request and resumed it), or else resume it once its health check finds
nothing, run its health check there, and go on only when every node of the batch is healthy and in service. With
service hosts (services.py), the deploy goes to them in Slurm's order around the batches: slurmdbd's host after a
dump of the accounting database, the controller, the batches, the login hosts.

A node someone else took out of service after the roll planned its batches (an admin's drain, Slurm's DOWN, the health
check's drain) is left as it is, named, and not rolled: neither deployed to nor rebooted, since Slurm's registration
after a reboot with ``nextstate=resume`` would lift its holder's drain. Every command on a node's state is built by
slurm/drains.py, which reads the state again just before it acts.

A node that does not come back, or comes back sick (the health check drains it; the reboot gate would too), stops the
roll, named, and stays drained. Interrupted (Ctrl-C, a lost connection, a crash, SIGKILL), the roll leaves its own
drains (``cf:roll``) behind, and the next roll takes those nodes first.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable, Sequence

from .. import hostlists
from ..slurm import drains
from ..slurm.nodes import Node
from ..model import ValidCluster
from ..reach.controller import Controller
from ..reach.ssh import Run
from ..words import counted
from .batches import CAUSE, RollPlan
from .services import ServiceOrder, ServiceStep, dump_command

POLL_S = 2
REBOOTING = frozenset({"REBOOT_ISSUED", "REBOOT_REQUESTED"})


class Stopped(Exception):
    """The roll stops here: the message names the nodes and what is left drained (exit 1). A controller that refuses
    a command stops it too, as reach's ControllerRefused."""


def roll_drain(what: str, index: int, count: int) -> drains.Drain:
    return drains.Drain(CAUSE, what, f"batch {index}/{count}")


class Roll:
    """One roll: ``controller``, the session with the controller; ``node`` runs a command on a compute node."""

    def __init__(self, valid: ValidCluster, controller: Controller, node: Callable[[str], Run],
                 say: Callable[[str], None], job_wait: int, back_wait: int, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, reboot: bool = True,
                 apply: Callable[[Sequence[str]], str | None] | None = None, services: ServiceOrder | None = None,
                 dump_wait: int = 3600) -> None:
        """``apply(hosts)``: the change made on the drained, idle nodes of a batch (the deploy limited to them),
        before the reboot where there is one, and on each service host of ``services``; it returns None, or why it
        failed. ``dump_wait``: how long the accounting database's dump may take."""
        self.valid, self.controller, self.node, self.say = valid, controller, node, say
        self.job_wait, self.back_wait, self.clock, self.sleep = job_wait, back_wait, clock, sleep
        self.reboot, self.apply = reboot, apply
        self.services, self.dump_wait = services or ServiceOrder((), ()), dump_wait
        self.health = valid.slurm_conf.get("HealthCheckProgram")
        self.left: list[str] = []   # nodes someone else holds since the plan: not rolled

    def names(self, nodes: Sequence[str]) -> str:
        return hostlists.compress(nodes, self.valid.version)

    def states(self) -> dict[str, Node]:
        return self.controller.states()

    def show(self, nodes: Sequence[str]) -> list[Node]:
        return self.controller.shown(self.names(nodes))

    def jobs(self, nodes: Sequence[str]) -> list[str]:
        return self.controller.running(self.names(nodes))

    def run(self, plan: RollPlan) -> int:
        """Every batch of ``plan``; the number of nodes rolled. Raises Stopped, or ControllerRefused."""
        done = 0
        count = len(plan.batches)
        for step in self.services.before:
            self.service(step, "before any compute node was drained")
        for index, batch in enumerate(plan.batches, 1):
            self.batch(batch, index, count, done, sum(len(b) for b in plan.batches))
            done += len(batch)
        for step in self.services.after:
            self.service(step, "after every compute node was rolled")
        if self.left:
            self.say(f"{self.names(self.left)}: held by another since the roll planned its batches, left as "
                     f"{'it is' if len(self.left) == 1 else 'they are'} and not rolled: run `clusterforge roll` "
                     "again once let go")
        return done - len(self.left)

    def service(self, step: ServiceStep, when: str) -> None:
        """A service host: the accounting database dumped where slurmdbd keeps it, then the deploy there."""
        if step.dump is not None:
            answer = self.node(step.host)(dump_command(step.dump, self.dump_wait))
            if answer.rc != 0:
                why = (f"did not finish within {self.dump_wait} s (--dump-wait SECONDS waits longer)"
                       if answer.rc in (124, 137) else
                       f"failed (exit {answer.rc}): {(answer.err.strip() or answer.out.strip())[-300:]}")
                raise Stopped(f"{step.head}: the dump of the accounting database {step.dump} {why}. The roll stops "
                              f"{when}, and nothing was deployed there")
            path, size = answer.out.split()[-2:]
            self.say(f"{step.head}: {step.dump} dumped to {path} ({int(size):,} bytes)")
        self.say(f"{step.head}: deploying to it")
        failed = self.apply([step.host]) if self.apply is not None else None
        if failed is not None:
            raise Stopped(f"{step.head}: the deploy failed; the roll stops {when}. The next `clusterforge roll` "
                          f"starts again with it:\n  {failed}")
        self.say(f"{step.head}: deployed")

    def batch(self, batch: Sequence[str], index: int, count: int, done: int, total: int) -> None:
        names = self.names(batch)
        head = f"batch {index}/{count} {names}"
        started = self.clock()
        drain = roll_drain("reboot" if self.reboot else "apply", index, count)
        self.controller.ask(drains.drain_command(names, drain), "draining")
        batch = self.own(batch, head)
        if not batch:
            return
        self.say(f"{head}: drained ({drain.reason!r})")
        self.wait_for_jobs(batch, head)
        if self.apply is not None:
            self.say(f"{head}: deploying to it")
            failed = self.apply(batch)
            if failed is not None:
                raise Stopped(f"{head}: the deploy failed; the nodes stay drained for the roll, and the next "
                              f"`clusterforge roll` continues with them:\n  {failed}")
        if self.reboot:
            requested, asking = self.reboot_time(batch)
            if asking:
                self.controller.ask(drains.reboot_command(asking, (CAUSE,), drain), "asking Slurm for the reboot")
            self.say(f"{head}: rebooting through Slurm")
            self.wait_until_back(batch, set(asking), requested, head, done, total)
        else:
            self.report_health(batch, head, done, total)
            self.controller.ask(drains.resume_command(batch, CAUSE), "resuming")
        self.check_health(batch, head, done, total)
        self.wait_until_responding(batch, head)
        self.say(f"{head}: back in service, healthy ({self.clock() - started:.0f} s)")

    def own(self, batch: Sequence[str], head: str) -> list[str]:
        """The nodes of ``batch`` the roll holds now, read after its drain; any other is left as it is, named."""
        states = self.states()
        held = [n for n in batch if (state := states.get(n)) is None or state.held_by_another((CAUSE,))]
        for name in held:
            state = states.get(name)
            self.say(f"{head}: {name} left as it is: held by another "
                     f"({f'{state.state} {state.reason}'.strip() if state else 'not listed by sinfo'}), not rolled")
        self.left += held
        return [n for n in batch if n not in held]

    def wait_until_responding(self, batch: Sequence[str], head: str) -> None:
        """Until slurmctld has heard from every node of the batch since it returned: slurmctld marks a node it
        returns to service not responding (sinfo's `idle*`) until it registers again, a second or so (node_mgr.c,
        _require_node_reg, on every release; first seen on 24.11), and
        schedules nothing there meanwhile; the next batch goes out only then, so that no more than --batch nodes
        are ever out of service (seen on the test cluster: `update_node: node gpu01 state set to IDLE`, then
        `Node gpu01 now responding` 1 s later)."""
        deadline = self.clock() + self.back_wait
        while waiting := [n for n in batch if (state := self.states().get(n)) and state.state.endswith("*")]:
            if self.clock() >= deadline:
                raise Stopped(f"{head}: {self.names(waiting)} not responding to slurmctld {self.back_wait} s after "
                              "it was returned to service. The roll stops here")
            self.sleep(1)

    def reboot_time(self, batch: Sequence[str]) -> tuple[str, list[str]]:
        """The controller's time for a reboot request, and the nodes of ``batch`` to ask (those not rebooting
        already). Never in the second of such a node's last boot: slurmctld keeps both times in whole seconds and
        counts a boot at the request's second as the one it asked for, returning the node to service with its
        REBOOT_ISSUED flag kept for good (waiting_for_node_boot(), node_mgr.c). A node up for less than a second
        is a container's slurmd -b or a test, never a real reboot; the request then waits for the next second."""
        while True:
            now = self.controller.ask("date +%Y-%m-%dT%H:%M:%S", "reading the controller's clock").strip()
            asking = [s for s in self.show(batch) if not s.flags & REBOOTING]
            if not any(s.boot >= now for s in asking):
                return now, [s.name for s in asking]
            self.sleep(1)

    def wait_for_jobs(self, batch: Sequence[str], head: str) -> None:
        deadline = self.clock() + self.job_wait
        said: list[str] | None = None
        while jobs := self.jobs(batch):
            if self.clock() >= deadline:
                waited = f"after waiting {self.job_wait} s, " if self.job_wait else ""
                raise Stopped(f"{head}: {waited}jobs still run there: {'; '.join(jobs)} (job user nodes). No job was "
                              f"killed; the nodes stay drained for the roll, and the next `clusterforge roll` "
                              "continues with them (--wait SECONDS waits longer)")
            if jobs != said:
                self.say(f"{head}: waiting for {len(jobs)} job{'s' if len(jobs) > 1 else ''} to end: "
                         f"{'; '.join(jobs)}")
                said = jobs
            self.sleep(POLL_S)

    def wait_until_back(self, batch: Sequence[str], asked: set[str], requested: str, head: str, done: int,
                        total: int) -> None:
        """Until Slurm has every node back: its reboot counted (no REBOOT flag; booted after the request where this
        roll asked for it) and resumed; a node that went down, or that someone drained meanwhile, stops the roll."""
        deadline = self.clock() + self.back_wait
        while True:
            waiting = []
            for node in self.show(batch):
                if node.flags & REBOOTING or (node.name in asked and node.boot < requested):
                    if "DOWN" in node.flags and not node.flags & REBOOTING:
                        self.stop(node, head, done, total, "it went down after its reboot")
                    waiting.append(node.name)
                elif "DOWN" in node.flags or "FAIL" in node.flags:
                    self.stop(node, head, done, total, "it is down after its reboot")
                elif "DRAIN" in node.flags:
                    self.stop(node, head, done, total, "it came back drained")
            if not waiting:
                return
            if self.clock() >= deadline:
                raise Stopped(f"{head}: {self.names(waiting)} not back within {self.back_wait} s of the reboot "
                              f"request ({done} of {counted(total, 'node')} rolled before this batch). The "
                              "roll stops; Slurm sets a node DOWN that does not register within ResumeTimeout "
                              "(Health(reboot_timeout=))")
            self.sleep(POLL_S)

    def check_health(self, batch: Sequence[str], head: str, done: int, total: int) -> None:
        """The node's own health check once it is back, which drains it if it is sick: what the reboot gate does in
        the background, here before the next batch goes out."""
        if not self.health:
            return
        for name in batch:
            self.node(name)(f"env -i SLURMD_NODENAME={shlex.quote(name)} {shlex.quote(self.health)} >/dev/null 2>&1; "
                            "true")
        for node in self.show(batch):
            if "DRAIN" in node.flags or "DOWN" in node.flags or "FAIL" in node.flags:
                self.stop(node, head, done, total, "it failed its health check after the reboot")

    def report_health(self, batch: Sequence[str], head: str, done: int, total: int) -> None:
        """Before a node the roll drained is resumed without a reboot: its health check's findings, changing
        nothing (the check leaves a node drained by anyone else alone); one that asks for a drain stops the roll,
        with the node still drained for it."""
        if not self.health:
            return
        for name in batch:
            answer = self.node(name)(f"env -i SLURMD_NODENAME={shlex.quote(name)} {shlex.quote(self.health)} report")
            if answer.rc == 0:
                continue
            try:
                reasons = [f["reason"] for f in json.loads(answer.out)["findings"] if f["action"] == "drain"]
            except (ValueError, KeyError, TypeError):
                reasons = [(answer.err.strip() or answer.out.strip())[-300:] or f"exit {answer.rc}"]
            raise Stopped(f"{head}: {name}: its health check finds {'; '.join(reasons)}. The roll stops here, {done} "
                          f"of {counted(total, 'node')} rolled before this batch; {name} stays drained for "
                          "the roll. Fix it, then run `clusterforge roll` again")

    def stop(self, node: Node, head: str, done: int, total: int, what: str) -> None:
        state = "+".join(sorted(node.flags))
        raise Stopped(f"{head}: {node.name}: {what} ({state}{', ' + repr(node.reason) if node.reason else ''}). The "
                      f"roll stops here, {done} of {counted(total, 'node')} rolled before this batch; "
                      f"{node.name} is left as it is. Bring it back, then run `clusterforge roll` again")
