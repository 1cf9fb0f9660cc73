"""gate/slurm.py: the gate's job and node commands, and the reading of `scontrol -o show job` and `sinfo` as the real
26.05 prints them (the lines below are its; the commands run against it in tests/realslurm/test_gate_program.py). The
reading of a job line itself, and what it refuses, is slurm/jobs.py's (tests/slurm/test_jobs.py)."""

from __future__ import annotations

from clusterforge.gate import slurm

# scontrol -o show job of the real slurmctld 26.05.5 (tests/realslurm), shortened to the keys read and a few around.
JOBS = (
    "JobId=1 JobName=wrap UserId=root(0) GroupId=root(0) JobState=COMPLETED Reason=None ExitCode=0:0 "
    "NodeList=gpu01 StdOut=/var/tmp/cf-1.out\n"
    "JobId=7 JobName=cf-gate:allreduce UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=1 Nice=0 "
    "Account=(null) QOS=(null) JobState=TIMEOUT Reason=TimeLimit Dependency=(null) Requeue=0 Restarts=0 "
    "BatchFlag=1 Reboot=0 ExitCode=0:15 RunTime=00:01:01 TimeLimit=00:01:00 Partition=all "
    "Reservation=cf-gate-new-gpu01 NodeList=gpu01 BatchHost=gpu01 StdOut=/var/tmp/cf-gate-7.out\n"
    "JobId=8 JobName=cf-gate:dcgm UserId=root(0) JobState=FAILED Reason=NonZeroExitCode ExitCode=226:0 "
    "Reservation=cf-gate-new-gpu01 NodeList=gpu01\n"
    "JobId=9 JobName=cf-gate:nvbandwidth UserId=root(0) JobState=PENDING Reason=Resources ExitCode=0:0 "
    "Reservation=cf-gate-new-gpu01 NodeList=(null)\n")


def test_the_gates_jobs_are_read_with_their_state_exit_and_reservation_and_no_one_elses():
    assert [(j.job_id, slurm.test_of(j), j.state, j.exit_status, j.reservation, j.active)
            for j in slurm.parse_jobs(JOBS)] == [(7, "allreduce", "TIMEOUT", 128 + 15, "cf-gate-new-gpu01", False),
                                                 (8, "dcgm", "FAILED", 226, "cf-gate-new-gpu01", False),
                                                 (9, "nvbandwidth", "PENDING", 0, "cf-gate-new-gpu01", True)]
    assert slurm.parse_jobs("No jobs in the system\n") == []


def test_the_nodes_with_every_partition_and_whether_the_gate_can_run_there():
    nodes = slurm.parse_nodes("gpu01|all*|infinite|maint|idle+maintenance+reserved|(null)|(null)|none|\n"
                              "gpu01|gpu|30:00|maint|idle+maintenance+reserved|(null)|(null)|none|\n"
                              "gpu02|all*|1-00:00:00|drained$|idle+drain+maintenance+reserved|(null)|(null)|"
                              "cf:gate:allreduce 300 GB/s < 460|\n"
                              "gpu03|all*|infinite|down*|down+maintenance+not_responding|(null)|(null)|"
                              "Not responding|\n"
                              "gpu04|all*|infinite|allocated$|allocated+maintenance+reserved|(null)|(null)|none|\n")
    assert nodes["gpu01"].partitions == ("all", "gpu")
    assert nodes["gpu01"].limits == (None, 1800) and nodes["gpu02"].limits == (86400,)
    assert nodes["gpu01"].fitting(1800) == ("all", "gpu") and nodes["gpu01"].fitting(1860) == ("all",)
    assert [slurm.usable(n) for n in nodes.values()] == [True, False, False, True]
    assert nodes["gpu02"].drained and nodes["gpu02"].reason == "cf:gate:allreduce 300 GB/s < 460"


def test_a_test_is_submitted_alone_on_its_node_in_its_hold_and_bounded():
    argv = slurm.submit_argv("cf-gate-new-gpu01", "gpu01", ("all", "gpu"), "allreduce", 61, "/s/gpu01-allreduce.sh")
    assert argv == ["sbatch", "--parsable", "--job-name=cf-gate:allreduce", "--nodes=1", "--nodelist=gpu01",
                    "--partition=all,gpu", "--reservation=cf-gate-new-gpu01", "--exclusive", "--time=2",
                    "--output=/dev/null", "--no-requeue", "/s/gpu01-allreduce.sh"]
    # The output is the job's own directory's, under /var/lib on the node (tests/gate/test_boundary.py runs both).
    assert slurm.read_argv("cf-gate-new-gpu01", "gpu01", (), 42)[-3:] == [
        "-c", slurm.READ_SCRIPT, "/var/lib/clusterforge/gate-runs/gpu01/42"]
    confined = slurm.confined("#!/bin/bash\n#SBATCH --nodes=1\n# a comment\nset -u\nrun\n", slurm.RUNS_DIR, "gpu01")
    lines = confined.splitlines()
    assert lines[:3] == ["#!/bin/bash", "#SBATCH --nodes=1", "# a comment"] and lines[-2:] == ["set -u", "run"]
    assert 'exec >"$mine/$SLURM_JOB_ID/output" 2>&1' in lines
