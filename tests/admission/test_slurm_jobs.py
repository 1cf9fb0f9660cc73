"""admission/slurm_jobs.py: sbatch's job id, `scontrol -o show job`'s lines and the job states, the one reading the
gate (gate/slurm.py) and accept (reach/controller.py) share. The lines are the real slurmctld 26.05.5's
(tests/realslurm, where tests/realslurm/test_reservations.py and test_accept.py read them live), shortened to the keys
read and a few around."""

from __future__ import annotations

import pytest

from clusterforge.admission import slurm_jobs
from clusterforge.gate import slurm
from clusterforge.reach.controller import Controller
from clusterforge.slurm.commands import Answer
from clusterforge.slurm.parse import ParseError

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
    assert slurm_jobs.parse_jobs(JOBS) == [
        slurm_jobs.Shown(7, "cf-gate:allreduce", "TIMEOUT", 128 + 15, 61, "cf-gate-new-gpu01", "gpu01", "gpu01"),
        slurm_jobs.Shown(12, "cf-accept:allreduce_multi", "PENDING", 0, 0, "", "(null)", ""),
        slurm_jobs.Shown(13, "cf-accept:dcgm", "FAILED", 226, 93784, "cf-accept", "gpu02", "gpu02")]
    assert slurm_jobs.parse_jobs("No jobs in the system\n") == [] == slurm_jobs.parse_jobs("")


@pytest.mark.parametrize("text", ["slurm_load_jobs error: Unable to contact slurm controller (connect failure)",
                                  "JobId=x JobName=cf-gate:dcgm ExitCode=0:0", "JobId=3 JobName=cf-gate:a ExitCode=a"])
def test_text_that_is_not_jobs_or_a_job_without_its_id_or_exit_code_is_refused(text):
    with pytest.raises(ParseError):
        slurm_jobs.parse_jobs(text)


def test_the_gate_and_accept_each_read_their_own_jobs_from_the_one_reading():
    assert [j.job_id for j in slurm.parse_jobs(JOBS)] == [7]  # the gate's (cf-gate:...) only
    shown = Controller("ctl", lambda command: Answer(0, JOBS, "")).jobs(["7", "12", "13"])  # accept's, by its ids
    assert list(shown) == ["7", "12", "13"] and shown["13"] == slurm_jobs.parse_jobs(JOBS)[2]
    assert [s.ended for s in shown.values()] == [True, False, True]


@pytest.mark.parametrize("state", ["PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "REQUEUE_HOLD",
                                   "REQUEUE_FED", "RESIZING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT",
                                   "RESV_DEL_HOLD", "A_STATE_OF_A_LATER_SLURM"])
def test_a_job_waiting_or_running_is_active_and_not_ended(state):
    assert slurm_jobs.active(state) and not slurm_jobs.ended(state)


@pytest.mark.parametrize("state", ["BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
                                   "OUT_OF_MEMORY", "PREEMPTED", "REVOKED", "TIMEOUT"])
def test_a_job_that_ended_is_ended_and_not_active(state):
    assert slurm_jobs.ended(state) and not slurm_jobs.active(state)


def test_a_job_requeued_held_after_its_end_has_an_output_to_read_and_is_still_in_the_queue():
    assert slurm_jobs.ended("SPECIAL_EXIT") and slurm_jobs.active("SPECIAL_EXIT")


def test_sbatch_parsable_answers_the_job_id_on_its_last_line():
    assert slurm_jobs.submitted("42\n") == 42 == slurm_jobs.submitted("42;cluster\n")
    assert slurm_jobs.submitted("sbatch: warning: a warning\n43\n") == 43
    assert Controller("ctl", lambda command: Answer(0, "44;cluster\n", "")).submit("sbatch", "sbatch") == "44"
    for text in ("sbatch: error: Batch job submission failed", "", "42 43"):
        with pytest.raises(ParseError):
            slurm_jobs.submitted(text)


@pytest.mark.parametrize(("run_time", "seconds"), [("00:01:01", 61), ("1-02:03:04", 93784), ("05:07", 307),
                                                   ("7", 7), ("INVALID", 0), ("Unknown", 0), ("x-01:00:00", 0)])
def test_run_time_in_seconds(run_time, seconds):
    assert slurm_jobs.seconds(run_time) == seconds
