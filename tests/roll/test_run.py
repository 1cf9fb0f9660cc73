"""The roll's steps (roll/run.py) against the Slurm stand-in (tests/slurm_standin), reached as the controller
(controller.py): the commands it sends, in order, where it stops, and how many nodes are out at most. Every command
runs in a real shell against the stand-in's sinfo, squeue and scontrol, and what scontrol is asked does what
slurmctld does: ``reboot ASAP`` drains the node with the given reason and reboots it once idle, the registration
after the reboot clears the drain and the reason where ``nextstate=resume`` was asked, whoever set them, and an
undrained node does not respond until it registers again. The roll's sleep moves the stand-in's clock (seconds):
jobs end and reboots complete (Slurm.reboot_s after they are issued) while it waits. Real Slurm runs the same roll in
tests/e2e/test_roll.py."""

from __future__ import annotations

import json

import pytest
from clusters import small_cluster
from roll.controller import Controller
from slurm_standin import Node, Slurm
from slurm_standin.cluster import START

from clusterforge.slurm.commands import Answer
from clusterforge.model import Health, resolve
from clusterforge.roll.batches import plan_roll
from clusterforge.reach.controller import Controller as Session
from clusterforge.roll.run import POLL_S, Roll, Stopped
from clusterforge.roll.services import ServiceOrder, ServiceStep

VALID = resolve(small_cluster(health=Health()))
VERSION = VALID.version
# A reboot, from its issue to the node's registration: three of the roll's polls (each of which runs a command of the
# stand-in's) are as good as the stand-in's default half minute.
REBOOT_S = 3 * POLL_S


def rolled(slurm: Slurm, budget: int = 1, job_wait: int = 100, apply=None, sick: str = "",
           services: ServiceOrder | None = None, dumped: Answer = Answer(0, "/b/slurm_acct_db-1.sql.gz 2048\n", "")
           ) -> tuple[Controller, list[str], list[str]]:
    """The controller after the roll of every node of ``slurm``, what the roll said, and the nodes whose health check
    it ran, in order. With ``apply``, the roll applies it and resumes instead of rebooting; ``sick``: the node whose
    health report finds a GPU missing; ``dumped``: what the database host answers to the dump of ``services``."""
    controller = Controller(slurm)
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
                back_wait=50, clock=controller.clock, sleep=controller.sleep, reboot=apply is None,
                apply=apply, services=services)
    roll.run(plan_roll(list(slurm.nodes), roll.states(), budget, count_out=False))
    return controller, said, checked


def gpus(count: int = 4, **special: Node) -> Slurm:
    """gpu01, gpu02, ... idle and registered, in one partition; ``special``: a node as given instead."""
    slurm = Slurm.of((f"gpu0{i}" for i in range(1, count + 1)), reboot_s=REBOOT_S)
    slurm.nodes.update(special)
    return slurm


def test_each_batch_is_drained_waited_for_rebooted_checked_and_back_before_the_next():
    slurm = gpus()
    job = slurm.place("alice", ["gpu02"], 4)
    controller, said, checked = rolled(slurm, budget=2)
    assert said[0] == "batch 1/2 gpu[01-02]: drained ('cf:roll:reboot batch 1/2')"
    assert said[1] == f"batch 1/2 gpu[01-02]: waiting for 1 job to end: {job.job_id} alice gpu02"
    assert said[-1].startswith("batch 2/2 gpu[03-04]: back in service, healthy")
    reboots = [c for c in controller.sent if c.startswith("scontrol reboot")]
    assert reboots == [f"scontrol reboot ASAP nextstate=resume reason=cf:roll:reboot batch {b}/2 {n}"
                       for b, n in ((1, "gpu01"), (1, "gpu02"), (2, "gpu03"), (2, "gpu04"))]
    assert controller.out_most == 2  # never more than --batch
    assert checked == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert all(n.boot > START and not n.flags for n in slurm.nodes.values())


def test_jobs_still_running_when_the_wait_ends_stop_the_roll_with_the_nodes_drained_and_no_job_killed():
    slurm = gpus()
    job = slurm.place("alice", ["gpu01"], 10**6)
    with pytest.raises(Stopped, match=rf"batch 1/4 gpu01: after waiting 5 s, jobs still run there: {job.job_id} "
                                      r"alice gpu01 \(job user nodes\)\. No job was killed"):
        rolled(slurm, job_wait=5)


def test_a_node_back_sick_stops_the_roll_named_and_later_batches_are_not_touched():
    slurm = gpus(gpu02=Node(sick_after_boot="cf:gpu:missing gpu2"))
    with pytest.raises(Stopped, match=r"batch 2/4 gpu02: gpu02: it came back drained \(DRAIN\+IDLE, "
                                      r"'cf:gpu:missing gpu2'\)\. The roll stops here, 1 of 4 nodes rolled"):
        rolled(slurm)
    assert slurm.nodes["gpu03"].flags == set() and slurm.nodes["gpu03"].boot == START


def test_a_node_an_earlier_roll_left_rebooting_is_waited_for_not_asked_again():
    # Its reboot was issued a poll before the roll starts: the node registers REBOOT_S after, at the roll's second
    # poll.
    slurm = gpus(gpu03=Node(flags={"DRAIN", "REBOOT_ISSUED"}, reason="cf:roll:reboot batch 3/4", next_state="RESUME",
                            issued_at=START + 2 * POLL_S - REBOOT_S))
    controller, said, _ = rolled(slurm)
    assert said[0].startswith("batch 1/4 gpu03: drained")
    assert not any(c.startswith("scontrol reboot") and "gpu03" in c for c in controller.sent)
    assert slurm.nodes["gpu03"].boot == START + 2 * POLL_S
    assert len([c for c in controller.sent if c.startswith("scontrol reboot")]) == 3


def test_a_node_someone_drains_after_the_plan_is_left_as_it_is_never_rebooted_and_keeps_its_reason():
    slurm = gpus()
    controller = Controller(slurm)
    said: list[str] = []
    roll = Roll(VALID, Session(VALID.controller.name, controller), lambda name: lambda command: Answer(0, "", ""),
                said.append, job_wait=100, back_wait=50, clock=controller.clock, sleep=controller.sleep)
    plan = plan_roll(list(slurm.nodes), roll.states(), 2, count_out=False)
    # After the plan, before the roll reaches its batch: an admin takes gpu02 out.
    assert slurm.run(["scontrol", "update", "NodeName=gpu02", "State=DRAIN", "Reason=RMA gpu3 (admin)"]).rc == 0
    assert roll.run(plan) == 3
    gpu02 = slurm.nodes["gpu02"]
    assert (gpu02.flags, gpu02.reason, gpu02.boot) == ({"DRAIN"}, "RMA gpu3 (admin)", START)
    assert not any("gpu02" in c for c in controller.sent if c.startswith("scontrol"))
    assert "batch 1/2 gpu[01-02]: gpu02 left as it is: held by another (drained RMA gpu3 (admin)), not rolled" in said
    assert said[-1] == ("gpu02: held by another since the roll planned its batches, left as it is and not rolled: "
                        "run `clusterforge roll` again once let go")
    assert all(slurm.nodes[n].boot > START and not slurm.nodes[n].flags for n in ("gpu01", "gpu03", "gpu04"))


def test_apply_runs_on_the_drained_idle_batch_then_resumes_it_without_a_reboot():
    seen: list[tuple[list[str], set[str]]] = []
    slurm = gpus()
    slurm.place("alice", ["gpu01"], 3)

    def apply(batch):
        seen.append((list(batch), {n for n in batch if "DRAIN" in slurm.nodes[n].flags and not slurm.running_on(n)}))

    controller, said, checked = rolled(slurm, budget=2, apply=apply)
    assert seen == [(["gpu01", "gpu02"], {"gpu01", "gpu02"}), (["gpu03", "gpu04"], {"gpu03", "gpu04"})]
    assert said[0] == "batch 1/2 gpu[01-02]: drained ('cf:roll:apply batch 1/2')"
    assert not any(c.startswith("scontrol reboot") for c in controller.sent)
    assert all(not n.flags and n.boot == START for n in slurm.nodes.values())
    assert checked == ["gpu01", "gpu02", "gpu01", "gpu02", "gpu03", "gpu04", "gpu03", "gpu04"]  # report, check


def test_apply_on_a_node_whose_health_report_finds_a_fault_stops_with_it_still_drained_for_the_roll():
    slurm = gpus()
    with pytest.raises(Stopped, match=r"batch 2/4 gpu02: gpu02: its health check finds cf:gpu:missing gpu2\. The "
                                      r"roll stops here, 1 of 4 nodes rolled"):
        rolled(slurm, apply=lambda batch: None, sick="gpu02")
    assert slurm.nodes["gpu02"].reason == "cf:roll:apply batch 2/4" and not slurm.nodes["gpu03"].flags


def test_a_reboot_is_never_asked_for_in_the_second_of_the_nodes_last_boot():
    # Slurm would count that boot as the one asked for, and keep the node REBOOT_ISSUED for good. The roll's clock is
    # the stand-in's, one second on at each sleep of this wait: the node booted at START + 2, so the roll reads the
    # clock at START, + 1, + 2 and + 3.
    slurm = gpus(1, gpu01=Node(boot=START + 2))
    controller, _, _ = rolled(slurm)
    reboot = next(i for i, c in enumerate(controller.sent) if c.startswith("scontrol reboot"))
    assert len([c for c in controller.sent[:reboot] if c.startswith("date")]) == 4
    # asked at START + 3, issued at the next poll, registered reboot_s later
    assert slurm.nodes["gpu01"].boot == START + 3 + POLL_S + slurm.reboot_s and not slurm.nodes["gpu01"].flags


SERVICES = ServiceOrder((ServiceStep("db", ("slurmdbd",), "slurm_acct_db"), ServiceStep("ctl", ("slurmctld",), None)),
                        (ServiceStep("login1", ("login",), None),))


def test_services_are_deployed_in_slurms_order_the_database_dumped_first_the_login_hosts_after_the_batches():
    deployed: list[list[str]] = []
    _, said, _ = rolled(gpus(2), budget=2, apply=lambda hosts: deployed.append(list(hosts)), services=SERVICES)
    assert deployed == [["db"], ["ctl"], ["gpu01", "gpu02"], ["login1"]]
    assert said[:5] == ["(dump on db)",
                        "db (slurmdbd): slurm_acct_db dumped to /b/slurm_acct_db-1.sql.gz (2,048 bytes)",
                        "db (slurmdbd): deploying to it", "db (slurmdbd): deployed", "ctl (slurmctld): deploying to it"]
    assert said[-2:] == ["login1 (login): deploying to it", "login1 (login): deployed"]


def test_a_dump_that_fails_or_a_service_deploy_that_fails_stops_the_roll_before_any_node_is_drained():
    slurm = gpus(1)
    deployed: list[list[str]] = []
    with pytest.raises(Stopped, match=r"db \(slurmdbd\): the dump of the accounting database slurm_acct_db did not "
                                      r"finish within 3600 s \(--dump-wait SECONDS waits longer\)\. The roll stops "
                                      r"before any compute node was drained, and nothing was deployed there"):
        rolled(slurm, apply=lambda hosts: deployed.append(list(hosts)), services=SERVICES, dumped=Answer(124, "", ""))
    with pytest.raises(Stopped, match=r"ctl \(slurmctld\): the deploy failed; the roll stops before any compute "
                                      r"node was drained\. The next `clusterforge roll` starts again with it:\n  "
                                      r"exit 1: ctl: apt failed"):
        rolled(slurm, apply=lambda hosts: "exit 1: ctl: apt failed" if hosts == ["ctl"] else None, services=SERVICES)
    assert deployed == [] and not slurm.nodes["gpu01"].flags


def test_the_next_batch_waits_until_slurm_hears_from_the_nodes_it_returned_to_service():
    # slurmctld marks a node it undrains not responding until the node registers again (node_mgr.c,
    # _require_node_reg, every release): for that second the node takes no job, so it still counts as out.
    slurm = gpus()
    controller = Controller(slurm)
    said: list[str] = []
    roll = Roll(VALID, Session(VALID.controller.name, controller), lambda name: lambda command: Answer(0, "", ""),
                said.append, job_wait=100, back_wait=50, clock=controller.clock, sleep=controller.sleep,
                reboot=False, apply=lambda hosts: None)
    roll.run(plan_roll(list(slurm.nodes), roll.states(), 1, count_out=False))
    assert controller.out_most == 1 and said[-1].startswith("batch 4/4 gpu04: back in service")
    assert all(not n.flags for n in slurm.nodes.values())
