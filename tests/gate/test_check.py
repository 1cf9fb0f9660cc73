"""`clusterforge check` on the nodes the admission gate holds: each named as clusterforge's, with its cause and
reservation, a failed gate drain with its number; the reservations read as the real slurmctld prints them
(tests/health/fixtures), the nodes as the test cluster's 22.05 did (tests/check/fixtures)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from clusterforge.check import compare, probes
from clusterforge.slurm.nodes import parse_show
from clusterforge.reach.controller import ControllerRefused
from clusterforge.slurm.commands import Answer
from clusterforge.loader import load_cluster
from clusterforge.model import resolve

NODES = (Path(__file__).parents[1] / "check" / "fixtures" / "testbed-22.05" / "scontrol-show-node.txt").read_text()
RESERVATIONS = (Path(__file__).parents[1] / "health" / "fixtures" / "scontrol-show-reservation-26.05.txt").read_text()


@pytest.fixture(scope="module")
def valid():
    os.environ.setdefault("CLUSTERFORGE_TESTBED_DIST", "bookworm")
    return resolve(load_cluster("inventories/vagrant.py"))


def test_a_held_node_and_a_node_the_gate_drained_are_named_as_clusterforges(valid):
    nodes = {n.name: n for n in parse_show(NODES)}
    held = dataclasses.replace(nodes["gpu02"], complete="IDLE+MAINTENANCE+RESERVED")
    failed = dataclasses.replace(nodes["gpu01"], complete="IDLE+DRAIN+MAINTENANCE+RESERVED",
                                 reason="cf:gate:allreduce 300 GB/s < 460", set_by="root@2026-11-27T04:20:00")
    detail, problems = compare.slurm_nodes(valid, {"gpu01": failed, "gpu02": held},
                                           held={"gpu01": "new", "gpu02": "repaired"})
    assert detail == "2 nodes (IDLE+DRAIN+MAINTENANCE+RESERVED, IDLE+MAINTENANCE+RESERVED), 16/16 GPUs, 2 held by " \
                     "the admission gate"
    assert [p.message for p in problems] == [
        "gpu01: IDLE+DRAIN+MAINTENANCE+RESERVED (reason: cf:gate:allreduce 300 GB/s < 460 [root@2026-11-27T04:20:00]; "
        "clusterforge's) (held by the admission gate: cf:gate:new, reservation cf-gate-new-gpu01; clusterforge's, "
        "released when its tests pass)",
        "gpu02: IDLE+MAINTENANCE+RESERVED (held by the admission gate: cf:gate:repaired, reservation "
        "cf-gate-repaired-gpu02; clusterforge's, released when its tests pass)"]
    # An admin's maintenance reservation is no hold of the gate's: named as Slurm prints it, nothing more.
    _, problems = compare.slurm_nodes(valid, {"gpu01": nodes["gpu01"], "gpu02": held})
    assert [p.message for p in problems] == ["gpu02: IDLE+MAINTENANCE+RESERVED"]


def test_the_check_reads_the_holds_from_slurmctld_and_refuses_what_it_cannot_read(valid):
    answers = {"scontrol show node -o": NODES,
               "scontrol -o show reservation": RESERVATIONS.replace("gpu-b02", "gpu02")}

    def run(command: str) -> Answer:
        return Answer(0, answers[command], "")

    ctx = probes.Context(valid, next(m for m in valid.machines if m.name == valid.controller.name), run)
    detail, problems = probes.slurm_nodes(ctx)
    assert detail.endswith(", 1 held by the admission gate")
    assert [p.message for p in problems] == [
        "gpu02: IDLE (held by the admission gate: cf:gate:new, reservation cf-gate-new-gpu02; clusterforge's, "
        "released when its tests pass)"]
    # No hold: nothing of the gate said.
    answers["scontrol -o show reservation"] = "No reservations in the system\n"
    assert probes.slurm_nodes(ctx) == ("2 nodes (IDLE), 16/16 GPUs", [])
    # What is not scontrol's listing is refused, never read as "nothing held": the check's finding, naming it.
    answers["scontrol -o show reservation"] = "slurm_load_reservations error: Unable to contact slurm controller"
    with pytest.raises(ControllerRefused, match="reading the reservations: not the output of scontrol show reserv"):
        probes.slurm_nodes(ctx)
    outcome = probes.perform(next(c for c in probes.CHECKS if c.read is probes.slurm_nodes), ctx)
    assert [f.message for f in outcome.findings] == [
        "reading the reservations: not the output of scontrol show reservation: "
        "'slurm_load_reservations error: Unable to contact slurm controller'"]


def test_the_gate_is_an_expected_daemon_of_the_controller_where_a_profile_has_admission(valid, monkeypatch):
    from clusterforge.check.probes import expected_units
    from clusterforge.render.gate import UNIT

    assert "clusterforge-gate" not in expected_units(next(m for m in valid.machines if m.name == "ctl"), valid)
    monkeypatch.setenv("CLUSTERFORGE_TESTBED_ADMISSION", "on")
    admitting = resolve(load_cluster("inventories/vagrant.py"))
    units = {m.name: expected_units(m, admitting) for m in admitting.machines}
    assert units["ctl"][-1] == "clusterforge-gate" == UNIT.removesuffix(".service")
    assert not any("clusterforge-gate" in u for name, each in units.items() if name != "ctl" for u in each)


def test_a_held_node_whose_test_cannot_run_is_named_with_slurms_reason_as_clusterforges(valid):
    """Issue 46: the gate's cannot-run drain (gate/passes.py) is what check shows of such a node, with its hold."""
    from clusterforge.gate.passes import cannot_run

    reason = cannot_run("dcgm: sbatch: Requested time limit is invalid (missing or exceeds some limit)").reason
    stuck = dataclasses.replace(parse_show(NODES)[0], complete="IDLE+DRAIN+MAINTENANCE+RESERVED", reason=reason,
                                set_by="root@2026-12-02T01:00:00")
    _, problems = compare.slurm_nodes(valid, {"gpu01": stuck}, only={"gpu01"}, held={"gpu01": "new"})
    assert [p.message for p in problems] == [
        "gpu01: IDLE+DRAIN+MAINTENANCE+RESERVED (reason: cf:gate:cannot run: dcgm: sbatch: Requested time limit is "
        "invalid (missing or exceeds some limit) [root@2026-12-02T01:00:00]; clusterforge's) (held by the admission "
        "gate: cf:gate:new, reservation cf-gate-new-gpu01; clusterforge's, released when its tests pass)"]
