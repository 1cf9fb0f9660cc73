"""The gate's Slurm commands other than holds and drains (health/reservations.py, health/drains.py): its jobs, their
output, the nodes' states; and the reading of their text. Pure.

A test runs as a batch job in the node's reservation, alone on the node (``--exclusive``), cut at its bound
(``--time``), its output in a file on the node (no directory is shared with the controller on every cluster). When
it has ended, a one-task job in the same reservation prints that file back to the gate: Slurm's own way to the node,
with the allocation users' jobs would have. The gate finds its jobs again by name and reservation in ``scontrol show
job``, which lists an ended job for MinJobAge (300 s by default) with its state and exit code: read, as sbatch's
answer and the job states, by admission/slurm_jobs.py, accept's reading too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..admission import slurm_jobs

JOB_PREFIX = "cf-gate:"
READ_NAME = f"{JOB_PREFIX}read"
# On the node: /var/tmp exists on every Debian host and outlives a reboot (the output of a test whose node rebooted
# under it is still read, or judged missing).
OUTPUT_DIR = "/var/tmp"
READ_TIME_LIMIT_MIN = 2
# The job states (slurm_jobs.py) in which a job ended having run its script to an end of its own: its output is the
# test's. TIMEOUT is a run cut at its bound (a failure); any other end (CANCELLED, NODE_FAIL, PREEMPTED, BOOT_FAIL,
# DEADLINE, ...) says nothing about the node's fitness: it is run again.
RAN = slurm_jobs.RAN
TIMED_OUT = slurm_jobs.TIMED_OUT

# sinfo -O with "Field:|": neither padded nor cut; the reason last, as it may hold a "|" (as exporter/nodes.py).
NODE_FIELDS = ("NodeList", "Partition", "StateComplete", "Reason")
# A node's base states (StateComplete's first word) in which it takes the gate's jobs, and the flags that say nothing
# against it: in a maintenance reservation (the gate's own hold), reserved, a job of its own ending.
USABLE_BASES = frozenset({"idle", "mixed", "allocated", "completing"})
HARMLESS_FLAGS = frozenset({"maintenance", "reserved", "completing", "planned", "res"})


def job_name(test: str) -> str:
    return f"{JOB_PREFIX}{test}"


def output_path(job_id: int) -> str:
    return f"{OUTPUT_DIR}/cf-gate-{job_id}.out"


def time_limit(seconds: float) -> str:
    """sbatch's --time in whole minutes, never under one."""
    return str(max(1, math.ceil(seconds / 60)))


def submit_argv(reservation: str, node: str, partitions: Iterable[str], test: str, seconds: float,
                script: str) -> list[str]:
    """Submit the script at ``script`` (a file on the controller: sbatch reads it there and sends its text) for
    ``node`` alone, inside its hold. ``--parsable`` prints the job id; stderr joins the output, which the verdict
    reads whole. Every partition the node is in: sbatch runs the job in the first that can."""
    return ["sbatch", "--parsable", f"--reservation={reservation}", f"--nodelist={node}", "--nodes=1",
            *([f"--partition={','.join(partitions)}"] if partitions else []), "--exclusive",
            f"--job-name={job_name(test)}", f"--time={time_limit(seconds)}", f"--output={OUTPUT_DIR}/cf-gate-%j.out",
            "--no-requeue", script]


def read_argv(reservation: str, node: str, partitions: Iterable[str], job_id: int) -> list[str]:
    """Print a test's output back from the node, then remove it there (a gate killed in between runs the test
    again: the output is gone, the verdict was never kept)."""
    path = output_path(job_id)
    return ["srun", "--quiet", f"--reservation={reservation}", f"--nodelist={node}", "--nodes=1", "--ntasks=1",
            *([f"--partition={','.join(partitions)}"] if partitions else []), f"--job-name={READ_NAME}",
            f"--time={READ_TIME_LIMIT_MIN}", "sh", "-c", f'cat "$0" && rm -f "$0"', path]


def cancel_argv(job_ids: Iterable[int]) -> list[str]:
    return ["scancel", *(str(j) for j in sorted(job_ids))]


def jobs_argv() -> list[str]:
    return ["scontrol", "-o", "show", "job"]


def nodes_argv() -> list[str]:
    return ["sinfo", "--noheader", "--all", "--Node", "--Format", ",".join(f"{f}:|" for f in NODE_FIELDS)]


# A gate job: a job line as slurm_jobs reads it (its ``active``: waits or runs, or held where a release runs it again,
# so nothing is submitted beside it).
Job = slurm_jobs.Shown


def test_of(job: Job) -> str:
    """The test a gate job runs, from its name (cf-gate:<test>)."""
    return job.name.removeprefix(JOB_PREFIX)


def parse_jobs(text: str) -> list[Job]:
    """``scontrol -o show job`` (slurm_jobs.parse_jobs, which refuses text it cannot read): the gate's jobs, named
    cf-gate:...; every other job left out."""
    return [j for j in slurm_jobs.parse_jobs(text) if j.name.startswith(JOB_PREFIX)]


@dataclass(frozen=True, slots=True)
class NodeState:
    name: str
    partitions: tuple[str, ...]
    complete: str       # sinfo's StateComplete: idle+maintenance+reserved, idle+drain+maintenance, down+..., ...
    reason: str

    @property
    def base(self) -> str:
        return self.complete.split("+")[0].rstrip("*~#!%$@^-")

    @property
    def flags(self) -> frozenset[str]:
        return frozenset(self.complete.split("+")[1:])

    @property
    def drained(self) -> bool:
        return "drain" in self.flags

    @property
    def usable(self) -> bool:
        """Takes the gate's jobs now: up, not drained, nothing but its hold on it."""
        return self.base in USABLE_BASES and self.flags <= HARMLESS_FLAGS


def parse_nodes(text: str) -> dict[str, NodeState]:
    """The nodes of ``nodes_argv`` (a line per node and partition) by name, each with every partition it is in."""
    found: dict[str, NodeState] = {}
    for line in text.splitlines():
        fields = line.split("|", len(NODE_FIELDS) - 1)
        if len(fields) < len(NODE_FIELDS) or not fields[0]:
            continue
        name, partition, complete, reason = (f.strip() for f in fields)
        reason = re.sub(r"\|$", "", reason).strip()
        partition = partition.rstrip("*")
        known = found.get(name)
        partitions = (*known.partitions, partition) if known else (partition,)
        found[name] = NodeState(name, partitions, complete.lower(), "" if reason == "none" else reason)
    return found
