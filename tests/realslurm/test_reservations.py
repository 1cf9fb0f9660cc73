"""The gate's holds (slurm/reservations.py) against the real slurmctld of every release the tier runs: the
reservation is created, shown, read back, refused twice, deleted, and the held node shows as in maintenance, as
each release prints it. Its jobs running inside the hold are tests/realslurm/test_gate_program.py's (26.05 has
slurmd)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from realslurm import harness
from realslurm.gate_fixtures import shown_reservations, slurm_state

from clusterforge.gate import slurm
from clusterforge.slurm import jobs, nodes, reservations

NODES = ["gpu01", "gpu-b02"]


@pytest.mark.realslurm
@pytest.mark.parametrize("version", ["22.05", "24.11", "26.05"])
def test_a_hold_is_created_read_back_and_released(version):
    runtime = harness.require(version)
    with harness.topology_slurmctld(runtime, NODES, "topology/tree", "SwitchName=s1 Nodes=gpu01,gpu-b02\n") as ctld:
        assert shown_reservations(ctld) == []
        hold = reservations.name(reservations.NEW, "gpu-b02")
        created = ctld.run(*reservations.create_argv(hold, "gpu-b02"))
        assert created.stdout.strip() == f"Reservation created: {hold}"
        # Twice is refused by slurmctld; the deploy's command asks first and creates nothing twice.
        assert ctld.run(*reservations.create_argv(hold, "gpu-b02"), check=False).returncode == 1
        again = ctld.run("sh", "-c", reservations.create_command(hold, "gpu-b02"), check=False)
        assert again.returncode == 0 and again.stdout == "", again.stderr
        ctld.scontrol("create", "reservation", "ReservationName=admin_fw", "StartTime=now", "Duration=60",
                      "Users=root", "Flags=MAINT", "Nodes=gpu01,gpu-b02")
        one_line, multi_line = shown_reservations(ctld), shown_reservations(ctld, "scontrol", "show", "reservation")
        assert one_line == multi_line
        assert [(r.name, r.nodes, r.users, r.state) for r in one_line] == [
            (hold, "gpu-b02", "root", "ACTIVE"), ("admin_fw", "gpu01,gpu-b02", "root", "ACTIVE")]
        assert one_line[0].flags >= {"MAINT", "IGNORE_JOBS"}
        assert reservations.held(one_line) == {"gpu-b02": "new"}  # the admin's reservation is not the gate's
        # The admin's maintenance over the held node makes it theirs to the health check; the hold alone, the gate's.
        assert reservations.gate_hold(one_line, "gpu-b02") is None and reservations.gate_hold(one_line, "gpu01") is None
        assert reservations.gate_hold(one_line[:1], "gpu-b02") == hold
        # The held node, idle and not drained, shows as in maintenance (slurmctld's background loop sets it).
        deadline = time.monotonic() + 30
        while "MAINTENANCE" not in slurm_state(ctld, "gpu-b02").flags:
            assert time.monotonic() < deadline, "no MAINTENANCE flag on gpu-b02 within 30 s"
            time.sleep(0.5)
        sinfo = ctld.run(*nodes.sinfo_argv()).stdout
        assert {n.name: n.state for n in nodes.parse_sinfo(sinfo)}["gpu-b02"] == "maint"
        assert ctld.run(*reservations.delete_argv(hold)).returncode == 0
        assert [r.name for r in shown_reservations(ctld)] == ["admin_fw"]
        assert ctld.run(*reservations.delete_argv(hold), check=False).returncode == 1  # gone already
        ctld.run(*reservations.delete_argv("admin_fw"))
        assert shown_reservations(ctld) == []


@pytest.mark.realslurm
@pytest.mark.parametrize("version", ["22.05", "24.11", "26.05"])
def test_the_gate_reads_its_jobs_and_the_held_nodes_as_each_release_prints_them(version, tmp_path):
    """No slurmd here: the job waits, then is cancelled; what the gate reads of it and of the node (gate/slurm.py)."""
    runtime = harness.require(version)
    with harness.topology_slurmctld(runtime, NODES, "topology/tree", "SwitchName=s1 Nodes=gpu01,gpu-b02\n") as ctld:
        hold = reservations.name(reservations.NEW, "gpu-b02")
        ctld.run(*reservations.create_argv(hold, "gpu-b02"))
        scratch = Path(ctld._binds[0])  # seen at the same path inside a root
        script = scratch / "allreduce.sh"
        script.write_text("#!/bin/sh\necho busbw\n")
        submitted = ctld.run(*slurm.submit_argv(hold, "gpu-b02", ("all",), "allreduce", 90, str(script)))
        job_id = jobs.submitted(submitted.stdout)
        ctld.run("sbatch", "--job-name=someone", "--output=/dev/null", "--wrap=true")
        [found] = slurm.parse_jobs(ctld.run(*jobs.show_argv()).stdout)
        assert (found.job_id, slurm.test_of(found), found.state, found.reservation, found.active) == (
            job_id, "allreduce", "PENDING", hold, True)
        ctld.run(*jobs.cancel_argv([job_id]))
        [found] = slurm.parse_jobs(ctld.run(*jobs.show_argv()).stdout)
        assert (found.state, found.active) == ("CANCELLED", False)
        listed = slurm.parse_nodes(ctld.run(*nodes.sinfo_argv()).stdout)
        assert set(listed) == set(NODES) and listed["gpu-b02"].partitions == ("all",)
        assert not slurm.usable(listed["gpu-b02"])  # never registered: unknown, not responding
        assert listed["gpu-b02"].base == "UNKNOWN", listed["gpu-b02"]


@pytest.mark.realslurm
@pytest.mark.parametrize("version", ["22.05", "24.11", "26.05"])
def test_the_deploys_one_command_holds_every_new_node_and_names_each_refusal(version):
    """roles/gate.py's command on the controller: a hold made already is made again by no one, a node slurmctld does
    not know is refused with slurmctld's words, and the command itself says so on stdout, not by failing."""
    from clusterforge.roles.gate import holds_command

    runtime = harness.require(version)
    with harness.topology_slurmctld(runtime, NODES, "topology/tree", "SwitchName=s1 Nodes=gpu01,gpu-b02\n") as ctld:
        ctld.run(*reservations.create_argv(reservations.name(reservations.NEW, "gpu01"), "gpu01"))
        done = ctld.run("sh", "-c", holds_command(("gpu01", "gpu-b02", "gpu99")))
        assert [line.split(":")[0] for line in done.stdout.splitlines()] == ["refused gpu99"], done.stdout
        assert "refused gpu99: Error creating the reservation" in done.stdout
        assert reservations.held(shown_reservations(ctld)) == {
            "gpu-b02": "new", "gpu01": "new"}


@pytest.mark.realslurm
@pytest.mark.parametrize("version", ["22.05", "24.11", "26.05"])
def test_a_hold_a_job_waits_in_is_deleted_by_hand_only_once_its_jobs_are_cancelled(version):
    """docs/operations/health.md's admitting by hand: `scancel --reservation=<hold>`, then the delete."""
    runtime = harness.require(version)
    with harness.topology_slurmctld(runtime, NODES, "topology/tree", "SwitchName=s1 Nodes=gpu01,gpu-b02\n") as ctld:
        hold = reservations.name(reservations.NEW, "gpu-b02")
        ctld.run(*reservations.create_argv(hold, "gpu-b02"))
        ctld.run("sbatch", f"--reservation={hold}", "--nodelist=gpu-b02", "--output=/dev/null", "--wrap=true")
        refused = ctld.run(*reservations.delete_argv(hold), check=False)
        assert refused.returncode == 1 and "Requested reservation is in use" in refused.stdout + refused.stderr
        ctld.run("scancel", f"--reservation={hold}")
        deleted = ctld.run(*reservations.delete_argv(hold), check=False)
        assert deleted.returncode == 0, deleted.stdout + deleted.stderr
        assert shown_reservations(ctld) == []
