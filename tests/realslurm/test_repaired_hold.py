"""The health check's repaired hold (health/repaired.py) against the real slurmctld of every release the tier runs:
the hold is created with Slurm's own scontrol, and a second try, as after a check killed between creating the hold
and forgetting the old boot's faults, is read as the hold made, from what the real scontrol says."""

from __future__ import annotations

import pytest
from realslurm import harness

from clusterforge.health import faults, repaired, reservations
from clusterforge.health.commands import Answer
from clusterforge.health.drains import parse_reason
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
        def run(argv, timeout):
            done = ctld.run(*argv, check=False, timeout=timeout)
            return Answer(done.returncode, done.stdout, done.stderr)

        expect = Expectations(node="gpu02", admission=True)
        state = str(tmp_path)
        faults.save(state, "boot-1", [XID79])
        repaired.hold(expect, run, state, "gpu02", "boot-2")
        assert [r.name for r in reservations.parse_reservations(ctld.run(*reservations.show_argv()).stdout)] == [
            "cf-gate-repaired-gpu02"]
        assert faults.earlier(state, "boot-2") == []
        # Killed after creating the hold, before forgetting: the next check finds the hold there and forgets.
        faults.save(state, "boot-1", [XID79])
        repaired.hold(expect, run, state, "gpu02", "boot-2")
        assert faults.earlier(state, "boot-2") == []
        held = reservations.parse_reservations(ctld.run(*reservations.show_argv()).stdout)
        assert reservations.held(held) == {"gpu02": "repaired"}
