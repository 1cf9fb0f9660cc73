"""Slurm's answers about a batch job, read once for the admission gate (gate/slurm.py, on the controller) and for
`clusterforge accept` (jobs.py, from the admin's machine): sbatch's job id, ``scontrol -o show job``'s lines, which
job states mean the job has ended or may still run, and its run time. Pure, the standard library only (the gate
ships it in its one file, render/programs.py).

What each caller makes of a job stays its own: the gate keeps its jobs (named ``cf-gate:``) and the reservation each
ran in, accept waits for the ids it submitted and reads the output back from the batch host.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..slurm.parse import ParseError, key_values

# What scontrol -o show job prints, whole, when slurmctld holds no job at all.
NO_JOBS = "No jobs in the system"
# Slurm's states of a job that has ended (squeue(1), JOB STATE CODES): its script ran to an end of its own (COMPLETED,
# FAILED, OUT_OF_MEMORY), Slurm cut it at its --time (TIMEOUT), or something else ended it. Any other state, one a
# later Slurm adds too, is a job that waits or runs: a caller waits for it rather than read an output not yet written.
ENDED = frozenset({"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
                   "PREEMPTED", "REVOKED", "SPECIAL_EXIT", "TIMEOUT"})
RAN = frozenset({"COMPLETED", "FAILED", "OUT_OF_MEMORY"})
TIMED_OUT = "TIMEOUT"
# Ended, yet held in the queue: the script ran to its end and Slurm requeued the job held (an EpilogSlurmctld's or an
# admin's `scontrol requeuehold State=SpecialExit`). Its output is there to read, and a release runs it again, so
# it is ended and still in the queue both: nothing is submitted beside it.
HELD_AFTER_END = "SPECIAL_EXIT"


def ended(state: str) -> bool:
    return state in ENDED


def active(state: str) -> bool:
    """In the queue, waiting or running, or held where a release runs it again."""
    return state not in ENDED or state == HELD_AFTER_END


def submitted(text: str) -> int:
    """``sbatch --parsable``'s answer: ``<job id>`` or ``<job id>;<cluster>`` on its last line (a warning sbatch
    printed first, where stderr joined it, is not the id)."""
    lines = text.strip().splitlines()
    first = lines[-1].split(";", 1)[0].strip() if lines else ""
    if not first.isdigit():
        raise ParseError(f"not sbatch --parsable's job id: {text.strip()[:200]!r}")
    return int(first)


@dataclass(frozen=True, slots=True)
class Shown:
    """One job as ``scontrol -o show job`` gives it."""

    job_id: int
    name: str
    state: str           # PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, CANCELLED, ...
    exit_status: int     # the script's, from ExitCode=<status>:<signal>; 128 + signal where a signal ended it
    run_s: int           # RunTime, in seconds
    reservation: str     # "" for none
    nodes: str           # NodeList: "(null)" while it waits
    batch_host: str      # "" until it runs
    # Who submitted it (UserId=root(0): 0), why it waits (Reason=, while PENDING) and when it was submitted
    # (SubmitTime=, the controller's local time): the gate trusts only root's jobs, bounds how long one waits, and
    # names why. Not compared: a job is its id, state, exit and place.
    user_id: int | None = field(default=None, compare=False)
    reason: str = field(default="", compare=False)
    submit_time: str = field(default="", compare=False)

    @property
    def ended(self) -> bool:
        return ended(self.state)

    @property
    def active(self) -> bool:
        return active(self.state)


def parse_jobs(text: str) -> list[Shown]:
    """``scontrol -o show job``: one job a line, in Slurm's order. Text that is neither jobs nor "no jobs" is refused,
    as is a job without its id or exit code: a caller that read no job where one runs would start its test twice, or
    judge a run whose end it did not read."""
    stripped = text.strip()
    if stripped == NO_JOBS or not stripped:
        return []
    found = []
    for line in stripped.splitlines():
        if not line.startswith("JobId="):
            raise ParseError(f"not the output of scontrol -o show job: {line[:200]!r}")
        values = key_values(line)
        status, _, signal = values.get("ExitCode", "0:0").partition(":")
        try:
            job_id, status_n, signal_n = int(values["JobId"]), int(status), int(signal or 0)
        except (KeyError, ValueError):
            raise ParseError(f"a job without its id or exit code: {line[:200]!r}") from None
        found.append(Shown(job_id, values.get("JobName", ""), values.get("JobState", ""),
                           128 + signal_n if signal_n else status_n, seconds(values.get("RunTime", "0")),
                           "" if values.get("Reservation") == "(null)" else values.get("Reservation", ""),
                           values.get("NodeList", ""), values.get("BatchHost", ""), _uid(values.get("UserId", "")),
                           values.get("Reason", ""), values.get("SubmitTime", "")))
    return found


def _uid(user: str) -> int | None:
    """The uid of ``UserId=name(uid)``; None where it is not there (a line that lacks it is trusted by no one)."""
    found = re.search(r"\((\d+)\)$", user)
    return int(found.group(1)) if found else None


def seconds(run_time: str) -> int:
    """Slurm's [D-]HH:MM:SS (or MM:SS) as seconds; 0 for anything else (INVALID, Unknown)."""
    days, _, clock = run_time.rpartition("-")
    parts = clock.split(":")
    if not all(p.isdigit() for p in parts) or not 1 <= len(parts) <= 3 or (days and not days.isdigit()):
        return 0
    total = 0
    for part in parts:
        total = total * 60 + int(part)
    return total + int(days or 0) * 86400
