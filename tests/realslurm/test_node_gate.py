"""The gate for node states (slurm/drains.py) against the real slurmctld of both releases: its commands run by a
real shell with Slurm's own sinfo and scontrol, and the state flags parsed as each release prints them.

The nodes here have no slurmd (this machine runs none), so slurmctld lists them as never registered (``unknown``,
``drained``, ``maint``): what a reboot then does at the node's registration is slurmctld's business, read from its
source (proc_req.c, node_mgr.c) and shown on the test cluster (tests/e2e). What is shown here: the states and
reasons after each command, as slurmctld keeps them."""

from __future__ import annotations

import time

import pytest
from realslurm import harness
from realslurm.gate_fixtures import slurm_state as shown

from clusterforge.exporter.nodes import usable
from clusterforge.slurm import nodes as slurm_nodes
from clusterforge.slurm import drains
from clusterforge.slurm.drains import Drain

NODES = ["gpu01", "gpu02", "gpu03", "gpu04"]
ADMIN = "RMA gpu3 (admin)"


def shell(ctld: harness.Slurmctld, command: str) -> str:
    done = ctld.run("sh", "-c", command, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.realslurm
@pytest.mark.parametrize("version", ["22.05", "24.11", "26.05"])
def test_the_gate_never_reboots_nor_relabels_a_node_someone_else_holds(version):
    runtime = harness.require(version)
    with harness.topology_slurmctld(runtime, NODES, "topology/tree", "SwitchName=s1 Nodes=gpu[01-04]\n",
                                    extra="RebootProgram=/bin/true\n") as ctld:
        ctld.scontrol("update", "NodeName=gpu02", "State=DRAIN", f"Reason={ADMIN}")
        ctld.scontrol("create", "reservation", "ReservationName=fw", "Flags=MAINT", "Nodes=gpu03", "StartTime=now",
                      "Duration=60", "Users=root")
        # slurmctld flags the reservation's nodes from its background loop (seen here: 5 s on both releases).
        deadline = time.monotonic() + 30
        while "MAINTENANCE" not in shown(ctld, "gpu03").flags:
            assert time.monotonic() < deadline, "no MAINTENANCE flag on gpu03 within 30 s"
            time.sleep(0.5)
        # The deploy's drain: its own nodes only.
        shell(ctld, drains.drain_command("gpu[01-04]", Drain(drains.STACK, "driver", "moves to 550.172.05")))
        assert shown(ctld, "gpu02").reason == ADMIN
        assert shown(ctld, "gpu03").flags >= {"MAINTENANCE"} and not shown(ctld, "gpu03").drained
        assert shown(ctld, "gpu01").reason == shown(ctld, "gpu04").reason == "cf:stack:driver moves to 550.172.05"
        # The reboot: never for the admin's node nor the one in maintenance, whatever the caller names.
        said = shell(ctld, drains.reboot_command(NODES, (drains.STACK, drains.ROLL),
                                                 Drain(drains.STACK, "driver", "reboot into the new driver")))
        assert f"gpu02 left as it is: held by another (drained|{ADMIN})" in said
        assert "gpu03 left as it is: held by another (maint|" in said
        assert shown(ctld, "gpu02").reason == ADMIN
        for name in ("gpu02", "gpu03"):
            assert not {"REBOOT_REQUESTED", "REBOOT_ISSUED"} & shown(ctld, name).flags, name
        for name in ("gpu01", "gpu04"):  # its own: asked, with its reason (the nodes never boot here)
            assert "REBOOT_REQUESTED" in shown(ctld, name).flags, name
            assert shown(ctld, name).reason == "cf:stack:driver reboot into the new driver"
        # Asked already: not asked again.
        assert "left as it is" not in shell(ctld, drains.reboot_command(["gpu01"], (drains.STACK,), Drain("stack")))
        # As each release prints them: in maintenance is held by another, for the health check and the exporter.
        assert shown(ctld, "gpu03").kept_by_another(("gpu",))
        nodes = {n.name: n for n in slurm_nodes.parse_sinfo(ctld.run(*slurm_nodes.sinfo_argv()).stdout)}
        assert "MAINTENANCE" in nodes["gpu03"].flags and not usable(nodes["gpu03"])
        # The resume: only its own cause's drains, never the admin's.
        shell(ctld, drains.resume_command(NODES, drains.STACK))
        assert shown(ctld, "gpu02").reason == ADMIN and shown(ctld, "gpu02").drained
