"""reach's Controller session against the real slurmctld of every release the tier runs, through a runner that runs the
controller's commands here (as test_admit.py and test_accept.py reach it): the nodes' states, the reservations, a
hostlist's names, the jobs on nodes, a job submitted, read, cancelled and waited for, each read with slurm/'s
readers; and a command slurmctld refuses is one ControllerRefused naming the host, what was asked and what slurmctld
said."""

from __future__ import annotations

import shlex
import time

import pytest
from realslurm import gate_fixtures, harness

from clusterforge.reach.controller import Controller, ControllerRefused
from clusterforge.slurm import reservations

NODES = ["gpu01", "gpu-b02"]


@pytest.mark.realslurm
@pytest.mark.parametrize("version", ["22.05", "24.11", "26.05"])
def test_the_controller_session_reads_slurmctld_and_names_its_refusals(version):
    runtime = harness.require(version)
    with harness.topology_slurmctld(runtime, NODES, "topology/tree", "SwitchName=s1 Nodes=gpu01,gpu-b02\n") as ctld:
        controller = Controller("ctl", gate_fixtures.shell_runner(ctld))
        assert sorted(controller.states()) == sorted(NODES)
        assert controller.reservations() == []
        assert controller.hostnames("gpu01,gpu-b02") == NODES and controller.hostnames("(null)") == []
        assert [node.name for node in controller.shown("gpu01")] == ["gpu01"]
        assert controller.running(",".join(NODES)) == []

        # A job held from the start (no slurmd runs it): submitted, read, and waited for past a bound it has
        # outrun from the start, which cancels it once.
        job = controller.submit("sbatch --parsable --hold --output=/dev/null --wrap=true", "sbatch of a held job")
        assert controller.jobs([job])[job].state == "PENDING"
        shown, cancelled, never_started = controller.wait([job], {job: -1}, sleep=time.sleep, poll=0.5)
        assert shown[job].state == "CANCELLED" and shown[job].ended and cancelled == {job} and never_started == {}

        # One waiting for a node that is not up (no slurmd): given up once seen so for its patience, with Slurm's
        # reason, and cancelled; a bound it never reaches says nothing.
        job = controller.submit("sbatch --parsable --nodelist=gpu01 --output=/dev/null --wrap=true", "sbatch on gpu01")
        shown, cancelled, never_started = controller.wait([job], {job: 3600}, sleep=time.sleep, poll=0.5,
                                                          gives_up=lambda seen: seen.waits_for_nodes, patience_s=1)
        assert shown[job].state == "CANCELLED" and cancelled == set() and list(never_started) == [job]
        assert never_started[job].startswith(("ReqNodeNotAvail", "Nodes required for job are DOWN")), never_started

        with pytest.raises(ControllerRefused, match=r"^ctl: deleting nosuch failed \(exit 1\): .*[Ii]nvalid"):
            controller.ask(shlex.join(reservations.delete_argv("nosuch")), "deleting nosuch")
