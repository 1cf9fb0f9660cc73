"""Slurm's jobs, one way: what clusterforge asks of a job (``Spec``: the one set of options sbatch and srun take from
it, and the #SBATCH lines of a script), the commands that submit, list, show and cancel jobs, and the reading of
their answers: sbatch's job id and refusal, ``scontrol -o show job``'s lines, which states mean a job has ended.
Pure, the standard library only (the gate and the exporter ship it).

Each caller chooses only its transport and where a job's output goes: the gate runs the argv on the controller
(commands.run) with its script in a file of its own and reads the output back through a job step on the node
(gate/slurm.py); `clusterforge accept` runs the shell text over SSH, its script on sbatch's standard input, and
reads the output back from the node over SSH (accept/jobs.py); the admission tests' scripts start their tools as
job steps (admission/tests); `clusterforge check --smoke` runs steps from the controller.
"""

from __future__ import annotations

import math
import re
import shlex
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .commands import refused_after
from .parse import ParseError, key_values, seconds

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
# sbatch's words where slurmctld refused the job itself (its limits, the partition's, the account's), as opposed to
# sbatch not reaching slurmctld at all.
REFUSED_BY_SLURMCTLD = "Batch job submission failed:"
# Why a job waits that no wait cures: a limit of its partition, account or QOS it breaks (squeue(1), JOB REASON
# CODES). slurmctld keeps such a job pending where EnforcePartLimits is not ALL.
NEVER_STARTS = frozenset({"PartitionTimeLimit", "PartitionNodeLimit", "PartitionConfig", "AccountNotAllowed",
                          "QOSNotAllowed", "InvalidAccount", "InvalidQOS", "BadConstraints",
                          "QOSMaxWallDurationPerJobLimit"})
# How a job waits for nodes it named that someone made unusable (drained, down, another's reservation), as scontrol
# prints the reason (its spaces as "_"): node_scheduler.c's "ReqNodeNotAvail, ..." and job_scheduler.c's "Nodes
# required for job are DOWN, DRAINED ... or reserved for jobs in higher priority partitions". Only another's action
# ends that wait (tests/realslurm/test_standin.py saw both on 26.05).
WAITS_FOR_NODES = ("ReqNodeNotAvail", "Nodes_required_for_job_are_DOWN")
# What `squeue` prints per job for ON_NODES: the "job user nodes" that a run waiting for drained nodes names.
ON_NODES = "%i %u %N"
# The end of a here-document carrying a script to sbatch: a word no script writes on a line of its own.
_END = "CF_SCRIPT_END"


@dataclass(frozen=True, slots=True)
class Spec:
    """A job, or a job step, as clusterforge asks for it: each field one option of sbatch's and srun's (the same
    words in a script's #SBATCH lines); what is left unset is not said, and Slurm's default (or the script's) holds."""

    name: str = ""                       # --job-name
    nodes: int | None = None             # --nodes
    nodelist: tuple[str, ...] = ()       # --nodelist
    tasks: int | None = None             # --ntasks
    partitions: tuple[str, ...] = ()     # --partition: the first that can run it
    reservation: str = ""                # --reservation
    exclusive: bool = False              # --exclusive: alone on its nodes
    minutes: int | None = None           # --time
    gpus_per_node: int = 0               # --gpus-per-node
    gres: str = ""                       # --gres
    image: str = ""                      # --container-image (Pyxis)
    output: str = ""                     # --output (slurmstepd opens it as the job's user, following links)
    requeue: bool = True                 # False: --no-requeue
    export: tuple[str, ...] = ()         # --export=ALL,<each>
    immediate: int | None = None         # --immediate: give up where it has not started within so many seconds

    def options(self) -> list[str]:
        return [*([f"--job-name={self.name}"] if self.name else []),
                *([f"--nodes={self.nodes}"] if self.nodes is not None else []),
                *([f"--nodelist={','.join(self.nodelist)}"] if self.nodelist else []),
                *([f"--ntasks={self.tasks}"] if self.tasks is not None else []),
                *([f"--partition={','.join(self.partitions)}"] if self.partitions else []),
                *([f"--reservation={self.reservation}"] if self.reservation else []),
                *(["--exclusive"] if self.exclusive else []),
                *([f"--time={self.minutes}"] if self.minutes is not None else []),
                *([f"--gpus-per-node={self.gpus_per_node}"] if self.gpus_per_node else []),
                *([f"--gres={self.gres}"] if self.gres else []),
                *([f"--container-image={self.image}"] if self.image else []),
                *([f"--output={self.output}"] if self.output else []),
                *([] if self.requeue else ["--no-requeue"]),
                *([f"--export={','.join(('ALL', *self.export))}"] if self.export else []),
                *([f"--immediate={self.immediate}"] if self.immediate is not None else [])]


def minutes(seconds: float) -> int:
    """A bound in seconds as Slurm's --time takes it: whole minutes, never under one."""
    return max(1, math.ceil(seconds / 60))


def header(spec: Spec) -> list[str]:
    """A batch script's #SBATCH lines of ``spec``."""
    return [f"#SBATCH {option}" for option in spec.options()]


def submit_argv(spec: Spec, script: str = "") -> list[str]:
    """Submit the script at the path ``script`` (on the machine sbatch runs on: sbatch reads it and sends its text),
    or the one on sbatch's standard input. ``--parsable`` prints the job id (submitted reads it)."""
    return ["sbatch", "--parsable", *spec.options(), *([script] if script else [])]


def submit_command(spec: Spec, script: str) -> str:
    """The controller's shell text that submits ``script`` (its text) with ``spec``: sbatch reads it from its
    standard input, a here-document, so nothing is written on the controller."""
    if any(line.strip() == _END for line in script.splitlines()):
        raise ValueError(f"the job script of {spec.name} contains the line {_END}")
    return f"{shlex.join(submit_argv(spec))} <<'{_END}'\n{script.rstrip()}\n{_END}"


def step_argv(spec: Spec, command: Sequence[str] = (), quiet: bool = False) -> list[str]:
    """A job step running ``command`` (srun): inside a job's allocation (a batch script's tool), or one of its own."""
    return ["srun", *(["--quiet"] if quiet else []), *spec.options(), *command]


def show_argv(job_id: int | str | None = None) -> list[str]:
    """``scontrol -o show job``: every job slurmctld holds (an ended one for MinJobAge), or one."""
    return ["scontrol", "-o", "show", "job", *([str(job_id)] if job_id is not None else [])]


def show_command(job_ids: Iterable[int | str]) -> str:
    """Every job of ``job_ids`` one line each, as the controller's shell text; a job Slurm forgot (past MinJobAge)
    prints nothing."""
    return "; ".join(f"{shlex.join(show_argv(j))} 2>/dev/null" for j in job_ids) + "; true"


def cancel_argv(job_ids: Iterable[int | str]) -> list[str]:
    return ["scancel", *(str(j) for j in sorted(job_ids, key=int))]


def queue_argv(format: str, nodes: str = "") -> list[str]:
    """squeue's jobs, one ``format`` line each: every partition's (hidden ones too), each array task on a line of its
    own; those running on the hostlist ``nodes`` where given."""
    return ["squeue", "--noheader", "--all", "--array", *([f"--nodelist={nodes}"] if nodes else []),
            f"--format={format}"]


def on_nodes_command(nodes: str) -> str:
    """The controller's command that lists the jobs running on the hostlist ``nodes``, one ON_NODES a line."""
    return shlex.join(queue_argv(ON_NODES, nodes))


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


def refusal(stderr: str) -> str | None:
    """slurmctld's reason where it refused a submission (``Requested time limit is invalid (missing or exceeds some
    limit)``), None where sbatch failed otherwise: slurmctld not reached, nothing said of the job. sbatch prints both
    after the same words (sbatch.c: "Batch job submission failed: %m"), so the errors of reaching it are told apart
    by their own words."""
    reason = refused_after(stderr, REFUSED_BY_SLURMCTLD)
    return None if reason is None else reason or "refused, no reason given"


@dataclass(frozen=True, slots=True)
class Shown:
    """One job as ``scontrol -o show job`` gives it."""

    job_id: int
    name: str
    state: str           # PENDING, RUNNING, COMPLETED, FAILED, TIMEOUT, CANCELLED, ...
    exit_status: int     # the script's, from ExitCode=<status>:<signal>; 128 + signal where a signal ended it
    run_s: int           # RunTime, in seconds
    reservation: str     # "" for none
    nodes: str           # NodeList: "(null)", or none at all (26.05), while it waits
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

    @property
    def waits_for_nodes(self) -> bool:
        """Pending for nodes it named that are drained, down or another's (WAITS_FOR_NODES)."""
        return self.state == "PENDING" and self.reason.startswith(WAITS_FOR_NODES)

    @property
    def submitted_at(self) -> float | None:
        """SubmitTime (the controller's local time, where it is read) as seconds since the epoch."""
        try:
            return time.mktime(time.strptime(self.submit_time, "%Y-%m-%dT%H:%M:%S"))
        except ValueError:
            return None


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
