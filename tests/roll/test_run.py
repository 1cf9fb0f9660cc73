"""The roll's steps against a simulated controller (roll/run.py): the commands it sends, in order, and where it
stops. The controller here is a stand-in that answers the few commands the roll sends (sinfo, squeue, scontrol
show/update/reboot, date) from a table of nodes, and reboots a node a few polls after it is asked to: real Slurm
runs the same roll in tests/e2e/test_roll.py. The node-state commands of slurm/drains.py (drain, resume, reboot)
run in a real shell, with sinfo and scontrol as functions over the table; what scontrol is asked then does what
slurmctld does (src/slurmctld/node_mgr.c, proc_req.c): ``reboot ASAP`` drains the node with the given reason, and
the registration after the reboot clears the drain and the reason where ``nextstate=resume`` was asked, whoever set
them."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import tempfile
from dataclasses import dataclass, field

import pytest
from clusters import small_cluster

from clusterforge import hostlists
from clusterforge.slurm.commands import Answer
from clusterforge.model import Health, resolve
from clusterforge.roll.batches import plan_roll
from clusterforge.reach.controller import Controller as Session
from clusterforge.roll.run import Roll, Stopped
from clusterforge.roll.services import ServiceOrder, ServiceStep

VALID = resolve(small_cluster(health=Health()))
VERSION = VALID.version


@dataclass
class Node:
    state: str = "IDLE"
    flags: set[str] = field(default_factory=set)
    reason: str = ""
    boot: int = 0
    jobs_until: int = 0   # the tick its job ends
    reboot_at: int = -1   # the tick its reboot completes
    sick_after_boot: str = ""
    next_state: str = ""  # what a reboot asked for once the node is back: "resume", or "" (stays as it is)


class Controller:
    def __init__(self, nodes: dict[str, Node], ping_after_resume: bool = False) -> None:
        self.nodes, self.tick, self.sent, self.out_most = nodes, 0, [], 0
        self.ping_after_resume = ping_after_resume

    def advance(self, _seconds: float) -> None:
        self.tick += 1
        for node in self.nodes.values():
            if node.reboot_at == self.tick and node.flags == {"NOT_RESPONDING"}:  # its ping answered
                node.flags.clear()
            elif node.reboot_at == self.tick:
                node.flags -= {"REBOOT_ISSUED"}
                node.boot = self.tick
                if node.next_state == "resume":  # slurmctld: the drain and the reason go, whoever set them
                    node.flags.discard("DRAIN")
                    node.reason, node.next_state = "", ""
                if node.sick_after_boot:
                    node.flags.add("DRAIN")
                    node.reason = node.sick_after_boot
        self.out_most = max(self.out_most, sum(bool(n.flags) for n in self.nodes.values()))

    def __call__(self, command: str) -> Answer:
        self.sent.append(command)
        words = shlex.split(command)
        if command.startswith("sinfo"):  # slurm/nodes.py's listing
            return Answer(0, "".join(f"{name}|all|infinite|{self.long(n)}|{self.complete(n)}|(null)|(null)|"
                                     f"{n.reason or 'none'}|\n" for name, n in self.nodes.items()), "")
        if command.startswith("rc=0;"):  # drains.py's drain, resume and reboot: run by a shell
            return self.shell(command)
        if words[0] == "squeue":
            names = hostlists.expand(next(w for w in words if w.startswith("--nodelist=")).split("=", 1)[1])
            return Answer(0, "".join(f"{i} alice {name}\n" for i, name in enumerate(names)
                                     if self.nodes[name].jobs_until > self.tick), "")
        if words[0] == "date":
            return Answer(0, f"T{self.tick:05d}\n", "")
        if words[:3] == ["scontrol", "show", "node"]:
            return Answer(0, "".join(
                f"NodeName={name} State={'+'.join([n.state, *sorted(n.flags)])} BootTime=T{n.boot:05d} "
                f"Reason={n.reason}\n" for name in hostlists.expand(words[4]) for n in [self.nodes[name]]), "")
        raise AssertionError(f"unexpected command: {command}")

    def shell(self, command: str) -> Answer:
        """A drains.py command run by sh, sinfo answering from the table and scontrol's requests then done here."""
        lines = {}
        for expression in {*re.findall(r"--nodes=(\S+)", command)} - {'"$n"'}:  # a listing: "%N|%T" a node
            names = hostlists.expand(shlex.split(expression)[0])
            lines[f"L:{shlex.split(expression)[0]}"] = "".join(f"{n}|{self.long(self.nodes[n])}\n" for n in names)
        for name, node in self.nodes.items():  # one node: "%T|%E"
            lines[f"N:{name}"] = f"{self.long(node)}|{node.reason or 'none'}\n"
        table = " ".join(f"{shlex.quote(k)}) printf %s {shlex.quote(v)};;" for k, v in lines.items())
        functions = ("sinfo() { for a; do case $a in --nodes=*) nodes=${a#--nodes=};; "
                     "--format=%N*) kind=L;; --format=*) kind=N;; esac; done; "
                     f"case $kind:$nodes in {table} esac; }}; "
                     "scontrol() { printf '%s\\t' \"$@\" >> \"$LOG\"; echo >> \"$LOG\"; }; ")
        with tempfile.NamedTemporaryFile("r") as log:
            done = subprocess.run(["sh", "-c", functions + command], env={"LOG": log.name, "PATH": "/usr/bin:/bin"},
                                  capture_output=True, text=True, check=False)
            for line in log.read().splitlines():
                self.scontrol(line)
        return Answer(done.returncode, done.stdout, done.stderr)

    def scontrol(self, line: str) -> None:
        """What slurmctld does when asked this."""
        words = line.rstrip("\t").split("\t")
        self.sent.append(f"scontrol {' '.join(words)}")
        values = dict(w.split("=", 1) for w in words if "=" in w)
        if words[0] == "update":
            node = self.nodes[values["NodeName"]]
            if values["State"] == "DRAIN":
                node.flags.add("DRAIN")
                node.reason = values["Reason"]
            elif values["State"] == "UNDRAIN":
                node.flags.discard("DRAIN")
                node.reason = node.reason if node.flags & {"DOWN", "FAIL"} else ""
                if self.ping_after_resume:  # Slurm 24.11: not responding until its next ping answers
                    node.flags.add("NOT_RESPONDING")
                    node.reboot_at = self.tick + 2
        elif words[:2] == ["reboot", "ASAP"]:
            for name in hostlists.expand(words[-1]):
                node = self.nodes[name]
                node.flags |= {"DRAIN", "REBOOT_ISSUED"}
                node.reason = values.get("reason", "Reboot ASAP")
                node.next_state = values.get("nextstate", "").lower()
                node.reboot_at = self.tick + 3
        else:
            raise AssertionError(f"unexpected scontrol {line}")

    @staticmethod
    def complete(node: Node) -> str:
        """sinfo's StateComplete: the base state and the flags, lower case."""
        return "+".join([node.state, *sorted(node.flags)]).lower()

    @staticmethod
    def long(node: Node) -> str:
        if "REBOOT_ISSUED" in node.flags:
            return "reboot^"
        return "drained" if "DRAIN" in node.flags else "idle*" if "NOT_RESPONDING" in node.flags else "idle"


def rolled(nodes: dict[str, Node], budget: int = 1, job_wait: int = 100, apply=None, sick: str = "",
           services: ServiceOrder | None = None, dumped: Answer = Answer(0, "/b/slurm_acct_db-1.sql.gz 2048\n", "")
           ) -> tuple[Controller, list[str], list[str]]:
    """The controller after the roll, what the roll said, and the nodes whose health check it ran, in order. With
    ``apply``, the roll applies it and resumes instead of rebooting; ``sick``: the node whose health report finds a
    GPU missing; ``dumped``: what the database host answers to the dump of ``services``."""
    controller = Controller(nodes)
    said: list[str] = []
    checked: list[str] = []

    def on_node(name: str):
        def run(command: str) -> Answer:
            if "mariadb-dump" in command:
                said.append(f"(dump on {name})")
                return dumped
            checked.append(name)
            if command.endswith(" report") and name == sick:
                return Answer(1, json.dumps({"findings": [{"action": "drain", "reason": "cf:gpu:missing gpu2"}]}),
                              "")
            return Answer(0, "", "")
        return run

    roll = Roll(VALID, Session(VALID.controller.name, controller), on_node, said.append, job_wait=job_wait,
                back_wait=50, clock=lambda: controller.tick, sleep=controller.advance, reboot=apply is None,
                apply=apply, services=services)
    roll.run(plan_roll(list(nodes), roll.states(), budget, count_out=False))
    return controller, said, checked


def four(**special: Node) -> dict[str, Node]:
    return {f"gpu0{i}": special.get(f"gpu0{i}", Node()) for i in range(1, 5)}


def test_each_batch_is_drained_waited_for_rebooted_checked_and_back_before_the_next():
    controller, said, checked = rolled(four(gpu02=Node(jobs_until=4)), budget=2)
    assert said[0] == "batch 1/2 gpu[01-02]: drained ('cf:roll:reboot batch 1/2')"
    assert said[1] == "batch 1/2 gpu[01-02]: waiting for 1 job to end: 1 alice gpu02"
    assert said[-1].startswith("batch 2/2 gpu[03-04]: back in service, healthy")
    reboots = [c for c in controller.sent if c.startswith("scontrol reboot")]
    assert reboots == [f"scontrol reboot ASAP nextstate=resume reason=cf:roll:reboot batch {b}/2 {n}"
                       for b, n in ((1, "gpu01"), (1, "gpu02"), (2, "gpu03"), (2, "gpu04"))]
    assert controller.out_most == 2  # never more than --batch
    assert checked == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert all(n.boot > 0 and not n.flags for n in controller.nodes.values())


def test_jobs_still_running_when_the_wait_ends_stop_the_roll_with_the_nodes_drained_and_no_job_killed():
    with pytest.raises(Stopped, match=r"batch 1/4 gpu01: after waiting 5 s, jobs still run there: 0 alice gpu01 "
                                      r"\(job user nodes\)\. No job was killed"):
        rolled(four(gpu01=Node(jobs_until=99)), job_wait=5)


def test_a_node_back_sick_stops_the_roll_named_and_later_batches_are_not_touched():
    nodes = four(gpu02=Node(sick_after_boot="cf:gpu:missing gpu2"))
    with pytest.raises(Stopped, match=r"batch 2/4 gpu02: gpu02: it came back drained \(DRAIN\+IDLE, "
                                      r"'cf:gpu:missing gpu2'\)\. The roll stops here, 1 of 4 nodes rolled"):
        rolled(nodes)
    assert nodes["gpu03"].flags == set() and nodes["gpu03"].boot == 0


def test_a_node_an_earlier_roll_left_rebooting_is_waited_for_not_asked_again():
    nodes = four(gpu03=Node(flags={"DRAIN", "REBOOT_ISSUED"}, reason="cf:roll:reboot batch 3/4", reboot_at=2,
                            next_state="resume"))
    controller, said, _ = rolled(nodes)
    assert said[0].startswith("batch 1/4 gpu03: drained")
    assert not any(c.startswith("scontrol reboot") and "gpu03" in c for c in controller.sent)
    assert nodes["gpu03"].boot == 2 and len([c for c in controller.sent if c.startswith("scontrol reboot")]) == 3


def test_a_node_someone_drains_after_the_plan_is_left_as_it_is_never_rebooted_and_keeps_its_reason():
    nodes = four()
    controller = Controller(nodes)
    said: list[str] = []
    roll = Roll(VALID, Session(VALID.controller.name, controller), lambda name: lambda command: Answer(0, "", ""),
                said.append, job_wait=100, back_wait=50, clock=lambda: controller.tick, sleep=controller.advance)
    plan = plan_roll(list(nodes), roll.states(), 2, count_out=False)
    # After the plan, before the roll reaches its batch: an admin takes gpu02 out.
    nodes["gpu02"].flags.add("DRAIN")
    nodes["gpu02"].reason = "RMA gpu3 (admin)"
    assert roll.run(plan) == 3
    assert (nodes["gpu02"].flags, nodes["gpu02"].reason, nodes["gpu02"].boot) == ({"DRAIN"}, "RMA gpu3 (admin)", 0)
    assert not any("gpu02" in c for c in controller.sent if c.startswith("scontrol"))
    assert "batch 1/2 gpu[01-02]: gpu02 left as it is: held by another (drained RMA gpu3 (admin)), not rolled" in said
    assert said[-1] == ("gpu02: held by another since the roll planned its batches, left as it is and not rolled: "
                        "run `clusterforge roll` again once let go")
    assert all(nodes[n].boot > 0 and not nodes[n].flags for n in ("gpu01", "gpu03", "gpu04"))


def test_apply_runs_on_the_drained_idle_batch_then_resumes_it_without_a_reboot():
    seen: list[tuple[list[str], set[str]]] = []
    nodes = four(gpu01=Node(jobs_until=3))

    def apply(batch):
        seen.append((list(batch), {n for n in batch if "DRAIN" in nodes[n].flags and nodes[n].jobs_until <= 3}))

    controller, said, checked = rolled(nodes, budget=2, apply=apply)
    assert seen == [(["gpu01", "gpu02"], {"gpu01", "gpu02"}), (["gpu03", "gpu04"], {"gpu03", "gpu04"})]
    assert said[0] == "batch 1/2 gpu[01-02]: drained ('cf:roll:apply batch 1/2')"
    assert not any(c.startswith("scontrol reboot") for c in controller.sent)
    assert all(not n.flags and n.boot == 0 for n in nodes.values())
    assert checked == ["gpu01", "gpu02", "gpu01", "gpu02", "gpu03", "gpu04", "gpu03", "gpu04"]  # report, check


def test_apply_on_a_node_whose_health_report_finds_a_fault_stops_with_it_still_drained_for_the_roll():
    nodes = four()
    with pytest.raises(Stopped, match=r"batch 2/4 gpu02: gpu02: its health check finds cf:gpu:missing gpu2\. The "
                                      r"roll stops here, 1 of 4 nodes rolled"):
        rolled(nodes, apply=lambda batch: None, sick="gpu02")
    assert nodes["gpu02"].reason == "cf:roll:apply batch 2/4" and not nodes["gpu03"].flags


def test_a_reboot_is_never_asked_for_in_the_second_of_the_nodes_last_boot():
    # Slurm would count that boot as the one asked for, and keep the node REBOOT_ISSUED for good. The stand-in's
    # clock moves a tick at each sleep: the node booted at tick 2, so the roll reads the clock at ticks 0, 1, 2 and 3.
    nodes = {"gpu01": Node(boot=2)}
    controller, _, _ = rolled(nodes)
    reboot = next(i for i, c in enumerate(controller.sent) if c.startswith("scontrol reboot"))
    assert len([c for c in controller.sent[:reboot] if c.startswith("date")]) == 4
    assert nodes["gpu01"].boot == 3 + 3 and not nodes["gpu01"].flags   # asked at tick 3, back 3 ticks later


SERVICES = ServiceOrder((ServiceStep("db", ("slurmdbd",), "slurm_acct_db"), ServiceStep("ctl", ("slurmctld",), None)),
                        (ServiceStep("login1", ("login",), None),))


def test_services_are_deployed_in_slurms_order_the_database_dumped_first_the_login_hosts_after_the_batches():
    deployed: list[list[str]] = []
    nodes = {"gpu01": Node(), "gpu02": Node()}
    _, said, _ = rolled(nodes, budget=2, apply=lambda hosts: deployed.append(list(hosts)), services=SERVICES)
    assert deployed == [["db"], ["ctl"], ["gpu01", "gpu02"], ["login1"]]
    assert said[:5] == ["(dump on db)",
                        "db (slurmdbd): slurm_acct_db dumped to /b/slurm_acct_db-1.sql.gz (2,048 bytes)",
                        "db (slurmdbd): deploying to it", "db (slurmdbd): deployed", "ctl (slurmctld): deploying to it"]
    assert said[-2:] == ["login1 (login): deploying to it", "login1 (login): deployed"]


def test_a_dump_that_fails_or_a_service_deploy_that_fails_stops_the_roll_before_any_node_is_drained():
    nodes = {"gpu01": Node()}
    deployed: list[list[str]] = []
    with pytest.raises(Stopped, match=r"db \(slurmdbd\): the dump of the accounting database slurm_acct_db did not "
                                      r"finish within 3600 s \(--dump-wait SECONDS waits longer\)\. The roll stops "
                                      r"before any compute node was drained, and nothing was deployed there"):
        rolled(nodes, apply=lambda hosts: deployed.append(list(hosts)), services=SERVICES, dumped=Answer(124, "", ""))
    with pytest.raises(Stopped, match=r"ctl \(slurmctld\): the deploy failed; the roll stops before any compute "
                                      r"node was drained\. The next `clusterforge roll` starts again with it:\n  "
                                      r"exit 1: ctl: apt failed"):
        rolled(nodes, apply=lambda hosts: "exit 1: ctl: apt failed" if hosts == ["ctl"] else None, services=SERVICES)
    assert deployed == [] and not nodes["gpu01"].flags


def test_the_next_batch_waits_until_slurm_hears_from_the_nodes_it_returned_to_service():
    # Slurm 24.11 marks a node it returns to service not responding until its next ping: for that second the node
    # takes no job, so it still counts as out.
    nodes = four()
    controller = Controller(nodes, ping_after_resume=True)
    said: list[str] = []
    roll = Roll(VALID, Session(VALID.controller.name, controller), lambda name: lambda command: Answer(0, "", ""),
                said.append, job_wait=100, back_wait=50, clock=lambda: controller.tick, sleep=controller.advance,
                reboot=False, apply=lambda hosts: None)
    roll.run(plan_roll(list(nodes), roll.states(), 1, count_out=False))
    assert controller.out_most == 1 and said[-1].startswith("batch 4/4 gpu04: back in service")
    assert all(not n.flags for n in nodes.values())
