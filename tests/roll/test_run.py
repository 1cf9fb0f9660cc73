"""The roll's steps against a simulated controller (roll/run.py): the commands it sends, in order, and where it
stops. The controller here is a stand-in that answers the few commands the roll sends (sinfo, squeue, scontrol
show/update/reboot, date) from a table of nodes, and reboots a node a few polls after it is asked to: real Slurm
runs the same roll in tests/e2e/test_roll.py."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field

import pytest
from clusters import small_cluster

from clusterforge import hostlists
from clusterforge.check.probes import Answer
from clusterforge.model import Health, resolve
from clusterforge.roll.batches import plan_roll
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
                node.flags -= {"REBOOT_ISSUED", "DRAIN"}
                node.boot, node.reason = self.tick, ""
                if node.sick_after_boot:
                    node.flags.add("DRAIN")
                    node.reason = node.sick_after_boot
        self.out_most = max(self.out_most, sum(bool(n.flags) for n in self.nodes.values()))

    def __call__(self, command: str) -> Answer:
        self.sent.append(command)
        words = shlex.split(command)
        if command.startswith("sinfo"):
            return Answer(0, "".join(f"{name}|{self.long(n)}|{n.reason or 'none'}\n"
                                     for name, n in self.nodes.items()), "")
        if command.startswith("rc=0; s=$(sinfo"):  # drains.drain_command
            names = hostlists.expand(command.split("--nodes=")[1].split()[0].strip("'"))
            reason = shlex.split(command.split("Reason=")[1].split(";")[0])[0]
            for name in names:
                if not self.nodes[name].flags:
                    self.nodes[name].flags.add("DRAIN")
                    self.nodes[name].reason = reason
            return Answer(0, "", "")
        if command.startswith("rc=0; for n in "):  # drains.resume_command: lifts the roll's own drains
            for name in shlex.split(command.split("for n in ", 1)[1].split("; do", 1)[0]):
                if self.nodes[name].reason.startswith("cf:roll"):
                    self.nodes[name].flags.discard("DRAIN")
                    self.nodes[name].reason = ""
                    if self.ping_after_resume:  # Slurm 24.11: not responding until its next ping answers
                        self.nodes[name].flags.add("NOT_RESPONDING")
                        self.nodes[name].reboot_at = self.tick + 2
            return Answer(0, "", "")
        if words[0] == "squeue":
            names = hostlists.expand(words[2].split("=", 1)[1])
            return Answer(0, "".join(f"{i} alice {name}\n" for i, name in enumerate(names)
                                     if self.nodes[name].jobs_until > self.tick), "")
        if words[0] == "date":
            return Answer(0, f"T{self.tick:05d}\n", "")
        if words[:3] == ["scontrol", "show", "node"]:
            return Answer(0, "".join(
                f"NodeName={name} State={'+'.join([n.state, *sorted(n.flags)])} BootTime=T{n.boot:05d} "
                f"Reason={n.reason}\n" for name in hostlists.expand(words[4]) for n in [self.nodes[name]]), "")
        if words[:2] == ["scontrol", "reboot"]:
            for name in hostlists.expand(words[-1]):
                self.nodes[name].flags.add("REBOOT_ISSUED")
                self.nodes[name].reboot_at = self.tick + 3
            return Answer(0, "", "")
        raise AssertionError(f"unexpected command: {command}")

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

    roll = Roll(VALID, controller, on_node, said.append, job_wait=job_wait, back_wait=50,
                clock=lambda: controller.tick, sleep=controller.advance, reboot=apply is None, apply=apply,
                services=services)
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
    assert reboots == ["scontrol reboot ASAP nextstate=resume reason='cf:roll:reboot batch 1/2' 'gpu[01-02]'",
                       "scontrol reboot ASAP nextstate=resume reason='cf:roll:reboot batch 2/2' 'gpu[03-04]'"]
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
    nodes = four(gpu03=Node(flags={"DRAIN", "REBOOT_ISSUED"}, reason="cf:roll:reboot batch 3/4", reboot_at=2))
    controller, said, _ = rolled(nodes)
    assert said[0].startswith("batch 1/4 gpu03: drained")
    assert not any(c.startswith("scontrol reboot") and "gpu03" in c for c in controller.sent)
    assert nodes["gpu03"].boot == 2 and len([c for c in controller.sent if c.startswith("scontrol reboot")]) == 3


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
    roll = Roll(VALID, controller, lambda name: lambda command: Answer(0, "", ""), said.append, job_wait=100,
                back_wait=50, clock=lambda: controller.tick, sleep=controller.advance, reboot=False,
                apply=lambda hosts: None)
    roll.run(plan_roll(list(nodes), roll.states(), 1, count_out=False))
    assert controller.out_most == 1 and said[-1].startswith("batch 4/4 gpu04: back in service")
    assert all(not n.flags for n in nodes.values())
