"""slurm/jobs.py: the one job spec and its commands, sbatch's job id, `scontrol -o show job`'s lines and the job
states, which the gate (gate/slurm.py) and accept (accept/jobs.py) share. The lines are the real slurmctld 26.05.5's
(tests/realslurm, where tests/realslurm/test_reservations.py and test_accept.py read them live), shortened to the keys
read and a few around."""

from __future__ import annotations

import pytest

from clusterforge.gate import slurm
from clusterforge.slurm import jobs
from clusterforge.slurm.parse import ParseError, seconds

JOBS = (
    "JobId=7 JobName=cf-gate:allreduce UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=1 Nice=0 "
    "Account=(null) QOS=(null) JobState=TIMEOUT Reason=TimeLimit Dependency=(null) Requeue=0 Restarts=0 "
    "BatchFlag=1 Reboot=0 ExitCode=0:15 RunTime=00:01:01 TimeLimit=00:01:00 Partition=all "
    "Reservation=cf-gate-new-gpu01 NodeList=gpu01 BatchHost=gpu01 StdOut=/var/tmp/cf-gate-7.out\n"
    "JobId=12 JobName=cf-accept:allreduce_multi UserId=root(0) JobState=PENDING Reason=Resources ExitCode=0:0 "
    "RunTime=00:00:00 TimeLimit=00:06:00 Reservation=(null) NodeList=(null) NumNodes=2\n"
    "JobId=13 JobName=cf-accept:dcgm UserId=root(0) JobState=FAILED Reason=NonZeroExitCode ExitCode=226:0 "
    "RunTime=1-02:03:04 Reservation=cf-accept NodeList=gpu02 BatchHost=gpu02\n")


def test_every_job_is_read_with_its_state_exit_run_time_reservation_and_batch_host():
    assert jobs.parse_jobs(JOBS) == [
        jobs.Shown(7, "cf-gate:allreduce", "TIMEOUT", 128 + 15, 61, "cf-gate-new-gpu01", "gpu01", "gpu01"),
        jobs.Shown(12, "cf-accept:allreduce_multi", "PENDING", 0, 0, "", "(null)", ""),
        jobs.Shown(13, "cf-accept:dcgm", "FAILED", 226, 93784, "cf-accept", "gpu02", "gpu02")]
    assert jobs.parse_jobs("No jobs in the system\n") == [] == jobs.parse_jobs("")


@pytest.mark.parametrize("text", ["slurm_load_jobs error: Unable to contact slurm controller (connect failure)",
                                  "JobId=x JobName=cf-gate:dcgm ExitCode=0:0", "JobId=3 JobName=cf-gate:a ExitCode=a"])
def test_text_that_is_not_jobs_or_a_job_without_its_id_or_exit_code_is_refused(text):
    with pytest.raises(ParseError):
        jobs.parse_jobs(text)


def test_the_gate_and_accept_each_read_their_own_jobs_from_the_one_reading():
    assert [j.job_id for j in slurm.parse_jobs(JOBS)] == [7]  # the gate's (cf-gate:...) only
    assert [s.ended for s in jobs.parse_jobs(JOBS)] == [True, False, True]


@pytest.mark.parametrize("state", ["PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "REQUEUE_HOLD",
                                   "REQUEUE_FED", "RESIZING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT",
                                   "RESV_DEL_HOLD", "A_STATE_OF_A_LATER_SLURM"])
def test_a_job_waiting_or_running_is_active_and_not_ended(state):
    assert jobs.active(state) and not jobs.ended(state)


@pytest.mark.parametrize("state", ["BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
                                   "OUT_OF_MEMORY", "PREEMPTED", "REVOKED", "TIMEOUT"])
def test_a_job_that_ended_is_ended_and_not_active(state):
    assert jobs.ended(state) and not jobs.active(state)


def test_a_job_requeued_held_after_its_end_has_an_output_to_read_and_is_still_in_the_queue():
    assert jobs.ended("SPECIAL_EXIT") and jobs.active("SPECIAL_EXIT")


def test_sbatch_parsable_answers_the_job_id_on_its_last_line():
    assert jobs.submitted("42\n") == 42 == jobs.submitted("42;cluster\n")
    assert jobs.submitted("sbatch: warning: a warning\n43\n") == 43
    for text in ("sbatch: error: Batch job submission failed", "", "42 43"):
        with pytest.raises(ParseError):
            jobs.submitted(text)


@pytest.mark.parametrize(("run_time", "expected"), [("00:01:01", 61), ("1-02:03:04", 93784), ("05:07", 307),
                                                   ("7", 7), ("INVALID", 0), ("Unknown", 0), ("x-01:00:00", 0)])
def test_run_time_in_seconds(run_time, expected):
    assert seconds(run_time) == expected


def test_one_spec_says_the_same_options_to_sbatch_srun_and_a_scripts_header():
    spec = jobs.Spec(name="cf-accept:dcgm", nodes=1, nodelist=("gpu01",), partitions=("gpu",), reservation="cf-accept",
                     exclusive=True, minutes=jobs.minutes(61), gpus_per_node=8, output="/var/lib/x/%j.out",
                     requeue=False, export=("NCCL_IB_HCA=mlx5_0",))
    options = ["--job-name=cf-accept:dcgm", "--nodes=1", "--nodelist=gpu01", "--partition=gpu",
               "--reservation=cf-accept", "--exclusive", "--time=2", "--gpus-per-node=8", "--output=/var/lib/x/%j.out",
               "--no-requeue", "--export=ALL,NCCL_IB_HCA=mlx5_0"]
    assert jobs.submit_argv(spec, "/s/a.sh") == ["sbatch", "--parsable", *options, "/s/a.sh"]
    assert jobs.step_argv(spec, ["hostname"], quiet=True) == ["srun", "--quiet", *options, "hostname"]
    assert jobs.header(jobs.Spec(nodes=2, exclusive=True)) == ["#SBATCH --nodes=2", "#SBATCH --exclusive"]
    assert jobs.minutes(1) == 1 and jobs.minutes(3600) == 60 and jobs.minutes(3601) == 61


def test_a_script_goes_to_sbatch_whole_on_its_standard_input():
    command = jobs.submit_command(jobs.Spec(name="cf-accept:a"), "#!/bin/sh\necho 'it ends'\n")
    assert command == ("sbatch --parsable --job-name=cf-accept:a <<'CF_SCRIPT_END'\n"
                       "#!/bin/sh\necho 'it ends'\nCF_SCRIPT_END")
    with pytest.raises(ValueError, match="CF_SCRIPT_END"):
        jobs.submit_command(jobs.Spec(name="x"), "echo\nCF_SCRIPT_END\n")


def test_the_commands_on_jobs():
    assert jobs.show_command(["7", 12]) == ("scontrol -o show job 7 2>/dev/null; scontrol -o show job 12 2>/dev/null; "
                                            "true")
    assert jobs.cancel_argv([12, 7]) == ["scancel", "7", "12"] == jobs.cancel_argv(["12", "7"])
    assert jobs.on_nodes_command("gpu[01-02]") == ("squeue --noheader --all --array '--nodelist=gpu[01-02]' "
                                                   "'--format=%i %u %N'")


def test_sbatch_names_a_refusal_of_slurmctlds_and_nothing_else():
    said = "sbatch: error: Batch job submission failed: Requested time limit is invalid (missing or exceeds some limit)"
    assert jobs.refusal(said) == "Requested time limit is invalid (missing or exceeds some limit)"
    assert jobs.refusal("sbatch: error: Batch job submission failed:") == "refused, no reason given"
    assert jobs.refusal("sbatch: error: Unable to contact slurm controller (connect failure)") is None
    # slurmctld not reached, said after the same words (sbatch.c: "Batch job submission failed: %m")
    for unreached in ("Unable to contact slurm controller (connect failure)", "Socket timed out on send/recv operation",
                      "Zero Bytes were transmitted or received", "Slurm backup controller in standby mode"):
        assert jobs.refusal(f"sbatch: error: Batch job submission failed: {unreached}") is None, unreached
