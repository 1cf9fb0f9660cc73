"""The health check's repaired hold (health/repaired.py) against the real slurmctld of every release the tier runs:
the hold is created with Slurm's own scontrol, and a second try, as after a check killed between creating the hold
and forgetting the old boot's faults, is read as the hold made, from what the real scontrol says. Inside a hold of
the gate's the check drains and lifts its own as everywhere (health/decide.py), and leaves a node in an admin's
maintenance reservation, and the gate's own drain, as they are."""

from __future__ import annotations

import time

import pytest
from realslurm import gate_fixtures, harness

from clusterforge.health import decide, faults, repaired
from clusterforge.slurm import reservations
from clusterforge.slurm.drains import Drain, parse_reason
from clusterforge.slurm.nodes import Node
from clusterforge.health.expect import Expectations
from clusterforge.health.probes import Finding

NODES = ["gpu01", "gpu02"]
XID79 = Finding(parse_reason("cf:gpu:xid79 gpu3 0000:5d:00 the GPU fell off the bus: reboot"), sticky=True,
                until="reboot", bus="0000:5d:00")


@pytest.mark.realslurm
@pytest.mark.parametrize("version", ["22.05", "24.11", "26.05"])
def test_a_node_back_from_a_hardware_fault_is_held_once_though_the_check_is_killed_before_it_forgets(version,
                                                                                                     tmp_path):
    runtime = harness.require(version)
    with harness.topology_slurmctld(runtime, NODES, "topology/tree", "SwitchName=s1 Nodes=gpu[01-02]\n") as ctld:
        run = gate_fixtures.argv_runner(ctld)

        expect = Expectations(node="gpu02", admission=True)
        state = str(tmp_path)
        faults.save(state, "boot-1", [XID79])
        repaired.hold(expect, run, state, "gpu02", "boot-2")
        assert [r.name for r in gate_fixtures.shown_reservations(ctld)] == ["cf-gate-repaired-gpu02"]
        assert faults.earlier(state, "boot-2") == []
        # Killed after creating the hold, before forgetting: the next check finds the hold there and forgets.
        faults.save(state, "boot-1", [XID79])
        repaired.hold(expect, run, state, "gpu02", "boot-2")
        assert faults.earlier(state, "boot-2") == []
        held = gate_fixtures.shown_reservations(ctld)
        assert reservations.held(held) == {"gpu02": "repaired"}


MISSING = Finding(Drain("gpu", "missing", "gpu3 /dev/nvidia3 not seen by nvidia-smi (7 of 8 GPUs)"))
GATES = "cf:gate:allreduce 402 GB/s < 460"


@pytest.mark.realslurm
@pytest.mark.parametrize("version", ["22.05", "24.11", "26.05"])
def test_the_check_drains_a_node_in_the_gates_hold_and_leaves_an_admins_maintenance_and_the_gates_drain(version,
                                                                                                        tmp_path):
    """gpu01 held by the gate; gpu02 in an admin's MAINT reservation; gpu03 in both; gpu04 held and drained by the
    gate for a failed test. Each shows maintenance alike (22.05 names no reservation in `scontrol show node`, 24.11
    and 26.05 only one): the check tells them apart by `scontrol show reservation`."""
    runtime = harness.require(version)
    nodes = ["gpu01", "gpu02", "gpu03", "gpu04"]
    with harness.topology_slurmctld(runtime, nodes, "topology/tree", "SwitchName=s1 Nodes=gpu[01-04]\n") as ctld:
        run = gate_fixtures.argv_runner(ctld)

        def shown(node: str) -> Node:
            return gate_fixtures.slurm_state(ctld, node)

        def check(node: str, findings: list[Finding]) -> str:
            acted = decide.act(findings, run, str(tmp_path / node), node, "boot-1")
            assert acted is not None, node
            return acted[0].action

        for cause, node in ((reservations.NEW, "gpu01"), (reservations.REPAIRED, "gpu03"), (reservations.NEW, "gpu04")):
            ctld.run(*reservations.create_argv(reservations.name(cause, node), node))
        ctld.scontrol("create", "reservation", "ReservationName=admin_fw", "StartTime=now", "Duration=60",
                      "Users=root", "Flags=MAINT", "Nodes=gpu[02-03]")
        ctld.scontrol("update", "NodeName=gpu04", "State=DRAIN", f"Reason={GATES}")
        deadline = time.monotonic() + 30
        while not all(shown(node).maintenance for node in nodes):
            assert time.monotonic() < deadline, "no MAINTENANCE flag on every node within 30 s"
            time.sleep(0.5)
        assert {node: check(node, [MISSING]) for node in nodes} == {
            "gpu01": "drain", "gpu02": "leave", "gpu03": "leave", "gpu04": "leave"}
        assert shown("gpu01").drained and shown("gpu01").reason == MISSING.reason
        assert not shown("gpu02").drained and not shown("gpu03").drained
        assert shown("gpu04").reason == GATES
        # Healthy again: the check's own drain is lifted inside the hold, the gate's is not. 22.05's and 24.11's
        # slurmctld refuse to UNDRAIN a node that never registered ("Invalid node state specified", hold or none;
        # no slurmd here): there the decision is shown, on 26.05 the lift is done.
        assert check("gpu04", []) == "leave"
        assert shown("gpu04").drained and shown("gpu04").reason == GATES
        if version == "26.05":
            assert check("gpu01", []) == "resume"
            assert not shown("gpu01").drained and shown("gpu01").maintenance
        else:
            assert decide.decide(shown("gpu01"), []).action == "resume"
        assert reservations.held(gate_fixtures.shown_reservations(ctld)) == {
            "gpu01": "new", "gpu03": "repaired", "gpu04": "new"}


@pytest.mark.realslurm
@pytest.mark.parametrize("version", ["22.05", "26.05"])
def test_a_hold_the_real_slurmctld_refuses_is_the_finding_that_keeps_the_node_drained(version, tmp_path):
    # slurmctld answers and refuses (here: a node it does not know): the check's finding drains the node with
    # slurmctld's own words, and the old boot's faults stay for the next check to try again.
    runtime = harness.require(version)
    with harness.topology_slurmctld(runtime, NODES, "topology/tree", "SwitchName=s1 Nodes=gpu[01-02]\n") as ctld:
        run = gate_fixtures.argv_runner(ctld)
        state = str(tmp_path)
        faults.save(state, "boot-1", [XID79])
        found = repaired.hold(Expectations(node="gpu99", admission=True), run, state, "gpu99", "boot-2")
        assert [f.reason for f in found] == [
            "cf:check:hold cf-gate-repaired-gpu99 not made: Invalid node name specified"], found
        assert faults.earlier(state, "boot-2") != []
        assert gate_fixtures.shown_reservations(ctld) == []
