"""Slurm's view and slurmd -C, parsed from output captured on the test cluster (Slurm 22.05, fixtures/testbed-22.05/,
taken with the commands the checks run) and compared with the test inventory; the differences are made in the
inventory or in the records, as an admin's mistake or a broken node would make them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from clusterforge.check import compare, slurm_parse
from clusterforge.slurm.nodes import parse_show
from clusterforge.health import parse
from clusterforge.check.findings import Outcome, exit_status
from clusterforge.check.probes import expected_units
from clusterforge.check.report import table
from clusterforge.loader import load_cluster
from clusterforge.model import resolve

CAPTURED = Path(__file__).parent / "fixtures" / "testbed-22.05"


def testbed_22_05():
    """The test inventory as the Debian 12 test cluster whose captures these are (Slurm 22.05, munge), whatever
    release the shell's CLUSTERFORGE_TESTBED_DIST names, and the variable left as it was."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CLUSTERFORGE_TESTBED_DIST", "bookworm")
        return load_cluster("inventories/vagrant.py")


@pytest.fixture(scope="module")
def valid():
    return resolve(testbed_22_05())


def captured(name: str) -> str:
    return (CAPTURED / name).read_text()


def shown(text: str) -> dict:
    return {n.name: n for n in parse_show(text)}


def test_slurmd_C_of_a_test_node_is_one_socket_of_two_cores_and_the_machines_memory():
    assert parse.slurmd_config(captured("slurmd-C.txt")) == parse.NodeHardware(1, 2, 1, 24105)


def test_memory_above_what_the_node_has_is_an_error_and_far_below_it_a_finding_past_the_tolerance(valid):
    profile = valid.nodes[0].profile
    found = parse.slurmd_config(captured("slurmd-C.txt"))
    assert compare.hardware(profile, found, tolerance=1.0)[1] == []
    _, below = compare.hardware(profile, found, tolerance=0.10)
    assert [p.message for p in below] == ["RealMemory 2048 MiB leaves 92 % of the node's 24105 MiB to no job (more "
                                          "than the 10% tolerance)"]
    more = profile.model_copy(update={"real_memory": 30_000, "sockets": 2, "cores_per_socket": 1})
    assert [p.message for p in compare.hardware(more, found, tolerance=1.0)[1]] == [
        "sockets: the inventory says 2, slurmd -C finds 1",
        "cores per socket: the inventory says 1, slurmd -C finds 2",
        "RealMemory 30000 MiB is above the 24105 MiB the node has: slurmd would refuse to register (the node drains "
        "with Low RealMemory)"]


def test_the_test_clusters_nodes_are_idle_with_eight_gpus_each(valid):
    nodes = shown(captured("scontrol-show-node.txt"))
    assert {n.name: (n.complete, n.gpus, n.reason) for n in nodes.values()} == {
        "gpu01": ("IDLE", 8, ""), "gpu02": ("IDLE", 8, "")}
    assert compare.slurm_nodes(valid, nodes) == ("2 nodes (IDLE), 16/16 GPUs", [])


def test_a_drained_node_a_node_not_responding_and_a_missing_one_are_named_with_the_reason(valid):
    reason = "Reason=fan broken [root@2026-11-22T23:40:00] "
    nodes = shown(captured("scontrol-show-node.txt").replace("State=IDLE", "State=IDLE+DRAIN", 1)
                  .replace("Partitions=gpu ", "Partitions=gpu " + reason, 1))
    assert (nodes["gpu01"].reason, nodes["gpu01"].set_by) == ("fan broken", "root@2026-11-22T23:40:00")
    gone = {"gpu01": nodes["gpu01"]}
    _, problems = compare.slurm_nodes(valid, gone)
    assert [p.message for p in problems] == ["gpu01: IDLE+DRAIN (reason: fan broken [root@2026-11-22T23:40:00]; not "
                                             "clusterforge's, which leaves it alone)",
                                             "gpu02: not a node slurmctld knows"]
    ours = dataclasses.replace(nodes["gpu01"], reason="cf:removed from the inventory")
    _, problems = compare.slurm_nodes(valid, {"gpu01": ours}, only={"gpu01"})
    assert problems[0].message.endswith("; clusterforge's)")
    silent = dataclasses.replace(nodes["gpu02"], complete="DOWN+NOT_RESPONDING", gpus=7)
    _, problems = compare.slurm_nodes(valid, {"gpu01": nodes["gpu01"], "gpu02": silent}, only={"gpu02"})
    assert [p.message for p in problems] == ["gpu02: DOWN+NOT_RESPONDING", "gpu02: slurmctld has 7 GPUs, the "
                                             "inventory 8"]


def test_a_node_in_a_maintenance_reservation_is_named_as_slurm_prints_it(valid):
    nodes = shown(captured("scontrol-show-node.txt"))
    # as slurmctld 22.05 and 24.11 print it
    maint = dataclasses.replace(nodes["gpu02"], complete="IDLE+MAINTENANCE+RESERVED")
    _, problems = compare.slurm_nodes(valid, {"gpu01": nodes["gpu01"], "gpu02": maint}, only={"gpu02"})
    assert [p.message for p in problems] == ["gpu02: IDLE+MAINTENANCE+RESERVED"]


def test_the_partition_is_as_declared_and_each_difference_is_named(valid):
    found = slurm_parse.partitions(captured("scontrol-show-partition.txt"))
    assert found["gpu"] == slurm_parse.SlurmPartition("gpu", ("gpu01", "gpu02"), True, None, ())
    assert compare.slurm_partitions(valid, found, ["normal"]) == ("partitions gpu; QOS normal", [])
    other = {"gpu": dataclasses.replace(found["gpu"], nodes=("gpu01",), default=False, qos="high"),
             "debug": found["gpu"]}
    assert [p.message for p in compare.slurm_partitions(valid, other, [])[1]] == [
        "partition gpu: nodes differ; missing gpu02", "partition gpu: Default=NO, the inventory says YES",
        "partition gpu: QOS high, the inventory says none", "slurmctld has partitions the inventory lacks: debug"]


def test_topology_is_the_inventorys_leaf_and_a_moved_node_is_named(valid):
    found = slurm_parse.topology(captured("scontrol-show-topology.txt"))
    assert compare.slurm_topology(valid, found) == ("1 leaf, 0 spines", [])
    moved = slurm_parse.topology("SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=gpu01\n"
                                 "SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=gpu02\n")
    assert [p.message for p in compare.slurm_topology(valid, moved)[1]] == [
        "switch leaf1: nodes gpu01, the inventory says gpu01,gpu02",
        "slurmctld has switches the inventory lacks: leaf2"]


def test_slurmdbd_lists_the_cluster():
    assert slurm_parse.column(captured("sacctmgr-show-cluster.txt")) == ["vagrant"]


def test_the_daemons_expected_follow_the_hosts_groups_and_the_auth(valid):
    units = {m.name: expected_units(m, valid) for m in valid.machines}
    # The test cluster runs slurmrestd on the controller unless CLUSTERFORGE_TESTBED_MONITORING=off.
    rest = ["slurmrestd"] if valid.rest else []
    assert units == {"ctl": ["munge", "slurmctld", "slurmdbd", *rest], "login1": ["munge"],
                     "gpu01": ["munge", "slurmd"], "gpu02": ["munge", "slurmd"]}


def test_slurmrestd_is_expected_on_its_host():
    from clusterforge.model import Host, Rest

    cluster = testbed_22_05()
    with_rest = resolve(cluster.model_copy(update={"rest": Rest(host=Host("login1"))}))
    units = {m.name: expected_units(m, with_rest) for m in with_rest.machines}
    assert units["login1"] == ["munge", "slurmrestd"] and "slurmrestd" not in units["ctl"]


def test_the_table_lists_each_check_then_each_finding_and_the_exit_status():
    outcomes = [Outcome("gpu01", "hardware", "1 sockets x 2 cores, 24105 MiB"),
                Outcome("ctl", "nodes", "2 nodes (IDLE)", (compare.Finding("gpu02: IDLE+DRAIN (reason: fan)"),))]
    assert table(outcomes).splitlines() == [
        "HOST   CHECK     RESULT   SEEN",
        "gpu01  hardware  ok       1 sockets x 2 cores, 24105 MiB",
        "ctl    nodes     FINDING  2 nodes (IDLE)",
        "",
        "1 finding:",
        "  ctl nodes: gpu02: IDLE+DRAIN (reason: fan)",
        "",
        "findings (exit 1)"]
    assert exit_status(outcomes) == 1


def test_the_hardware_check_takes_the_inventorys_memory_tolerance_unless_one_run_gives_another(valid):
    from clusterforge.check.probes import CHECKS, Context, perform
    from clusterforge.slurm.commands import Answer

    hardware = next(c for c in CHECKS if c.name == "hardware")
    node = next(m for m in valid.machines if m.node is not None)

    def run(command: str) -> Answer:
        assert command.startswith("slurmd -C")
        return Answer(0, captured("slurmd-C.txt"), "")

    # The test cluster's inventory says its containers' memory is not theirs: the bare check says all good.
    assert valid.acceptance.memory_tolerance == 100
    assert perform(hardware, Context(valid, node, run)).findings == ()
    strict = dataclasses.replace(valid, acceptance=valid.acceptance.model_copy(update={"memory_tolerance": 10}))
    assert [f.message for f in perform(hardware, Context(strict, node, run)).findings] == [
        "RealMemory 2048 MiB leaves 92 % of the node's 24105 MiB to no job (more than the 10% tolerance)"]
    assert perform(hardware, Context(strict, node, run, memory_tolerance=1.0)).findings == ()  # --memory-tolerance


def test_the_health_check_reports_the_nodes_own_findings_in_the_words_of_its_drains(valid):
    import json

    from clusterforge.check.probes import CHECKS, Context, perform
    from clusterforge.slurm.commands import Answer
    from clusterforge.model.settings import HEALTH_PROGRAM

    health = next(c for c in CHECKS if c.name == "health")
    node = next(m for m in valid.machines if m.node is not None)
    report = {"node": node.name, "notes": [], "findings": [
        {"action": "drain", "reason": "cf:gpu:missing gpu3 /dev/nvidia3 not seen by nvidia-smi (7 of 8 GPUs)",
         "sticky": False},
        {"action": "record", "reason": "cf:gpu:xid13 gpu0 0000:18:00 the application's fault", "sticky": False}]}
    calls = []

    def run(command: str) -> Answer:
        calls.append(command)
        if command.startswith("command -v"):
            return Answer(0, HEALTH_PROGRAM, "")
        return Answer(1, json.dumps(report), "")  # report exits 1 when it would drain

    outcome = perform(health, Context(valid, node, run))
    assert calls[-1] == f"env -u PATH {HEALTH_PROGRAM} report"  # as slurmd runs it: with root's usual PATH
    assert [f.message for f in outcome.findings] == [
        "cf:gpu:missing gpu3 /dev/nvidia3 not seen by nvidia-smi (7 of 8 GPUs)"]
    assert outcome.detail == "1 finding(s); recorded: cf:gpu:xid13 gpu0 0000:18:00 the application's fault"

    missing = perform(health, Context(valid, node, lambda command: Answer(1, "", "")))
    assert [f.message for f in missing.findings] == [
        f"{HEALTH_PROGRAM} is not installed: the deploy installs it"]
    broken = perform(health, Context(valid, node, lambda command: Answer(0 if "command -v" in command else 1, "",
                                                                         "Traceback: boom")))
    assert [f.message for f in broken.findings] == [f"`{HEALTH_PROGRAM} report` failed: exit 1: Traceback: boom"]
