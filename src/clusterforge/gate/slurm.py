"""The gate's own of its jobs (slurm/jobs.py's commands and readings): their names, where a test's output goes on
the node and how it is read back, and which nodes take them (slurm/nodes.py's listing). Pure.

A test runs as a batch job in the node's reservation, alone on the node (``--exclusive``), cut at its bound
(``--time``), its output in a file on the node (no directory is shared with the controller on every cluster). When
it has ended, a one-task job in the same reservation prints that file back to the gate: Slurm's own way to the node,
with the allocation users' jobs would have.

Where that file is matters (issue 46): a name in /tmp or /var/tmp is one a job user can plant first (a file, a
symlink, a FIFO), and job ids are sequential. Slurm's own output goes to /dev/null; the script itself (``confined``)
makes a directory of its own, new for this job, under RUNS_DIR on the node, which only root can create and read
(/var/lib is root's), and writes there. The read job refuses anything but a regular file root owns in a 0700
directory root owns, opened without following a link and bounded in time, and says why on its last line with
READ_REFUSED: a missing, foreign or unreadable output fails the test, named, never passes, never stalls a pass.

The gate finds its jobs again by name, owner (root) and reservation in ``scontrol show job``, which lists an ended
job for MinJobAge (300 s by default) with its state and exit code: read, as sbatch's answer and the job states, by
slurm/jobs.py, accept's reading too.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from ..slurm import jobs, nodes
from ..slurm.jobs import Shown
from ..slurm.nodes import Node

JOB_PREFIX = "cf-gate:"
READ_NAME = f"{JOB_PREFIX}read"
# On the node: under /var/lib, which only root writes (no one else can plant a name there), outliving a reboot; one
# directory per node (nodes sharing a filesystem in tests keep apart), one per job inside it.
RUNS_DIR = "/var/lib/clusterforge/gate-runs"
OUTPUT = "output"
READ_TIME_LIMIT_MIN = 2
# The read job's exit status where it refuses the output (missing, not a regular file, not root's, unreadable), the
# reason on its last line; any other failure is srun's or Slurm's, and says nothing of the node.
READ_REFUSED = 97
READ_CAT_TIMEOUT_S = 30  # a regular file on a local disk is read in far less; never a FIFO's wait
# The script's exit status where it could not make its directory: its output is then missing, and the test fails.
NO_RUN_DIR = 90
# A node's base states in which it takes the gate's jobs, and the flags that say nothing against it: in a maintenance
# reservation (the gate's own hold), reserved, a job of its own ending.
USABLE_BASES = frozenset({"IDLE", "MIXED", "ALLOCATED", "COMPLETING"})
HARMLESS_FLAGS = frozenset({"MAINTENANCE", "RESERVED", "COMPLETING", "PLANNED", "RES"})


def job_name(test: str) -> str:
    return f"{JOB_PREFIX}{test}"


def run_dir(runs_dir: str, node: str, job_id: int | str) -> str:
    return f"{runs_dir}/{node}/{job_id}"


def confined(script: str, runs_dir: str, node: str) -> str:
    """The test's batch script with its output sent into a directory of its own: ``runs_dir/<node>/<job id>``,
    0700, made fresh by the job (as root) after the #SBATCH header; the node's earlier runs, judged already (the gate
    submits a node's next test only once the last one's verdict is kept), removed first. Nothing is written before
    that, and Slurm's own output goes to /dev/null (submit_argv)."""
    lines = script.splitlines()
    at = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    runs, mine = shlex.quote(runs_dir), shlex.quote(f"{runs_dir}/{node}")
    # Each directory is root's alone (0700), the runs' too: a person may not even list whose runs are there.
    made = ('mkdir -p -m 0700 "$d" && [ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ] && chmod 0700 "$d" '
            f"|| exit {NO_RUN_DIR}")
    preamble = [
        "# clusterforge gate: the output goes into a directory only root makes and reads, new for this job",
        f"mine={mine}",
        f"for d in {runs} \"$mine\"; do {made}; done",
        "umask 077",
        'find "$mine" -mindepth 1 -maxdepth 1 -exec rm -rf -- {} + || exit ' + str(NO_RUN_DIR),
        f'mkdir -m 0700 "$mine/$SLURM_JOB_ID" || exit {NO_RUN_DIR}',
        f'exec >"$mine/$SLURM_JOB_ID/{OUTPUT}" 2>&1',
    ]
    return "\n".join(lines[:at] + preamble + lines[at:]) + "\n"


# The read job's script ($0: the run's directory): each refusal names why on stdout's last line, exit READ_REFUSED.
# No link is followed: the directory and the file are tested with -L first, and dd opens the file O_NOFOLLOW and
# O_NONBLOCK (a FIFO planted there would not hang it), under timeout.
READ_SCRIPT = (
    'r=' + str(READ_REFUSED) + '; f="$0/' + OUTPUT + '"; '
    'if [ -L "$0" ] || [ ! -d "$0" ]; then echo "no output: $0 is missing or not a directory"; exit $r; fi; '
    'if [ ! -O "$0" ] || [ "$(stat -c %a "$0")" != 700 ]; then '
    'echo "foreign output: $0 is not a 0700 directory of root\'s ($(stat -c \'%U %a\' "$0"))"; exit $r; fi; '
    'if [ -L "$f" ]; then echo "foreign output: $f is a symbolic link"; exit $r; fi; '
    'if [ ! -e "$f" ]; then echo "no output: $f is missing"; exit $r; fi; '
    'if [ ! -f "$f" ]; then echo "foreign output: $f is not a regular file ($(stat -c %F "$f"))"; exit $r; fi; '
    'if [ ! -O "$f" ]; then echo "foreign output: $f is owned by $(stat -c %U "$f"), not root"; exit $r; fi; '
    f'timeout -k 5 {READ_CAT_TIMEOUT_S} dd if="$f" iflag=nofollow,nonblock bs=1M status=none '
    '|| { echo; echo "unreadable output: $f could not be read"; exit $r; }')


def refused(answer_out: str) -> str:
    """Why the read job refused an output: its last line."""
    lines = [line for line in answer_out.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output: the read job said nothing"


def submit_argv(reservation: str, node: str, partitions: Iterable[str], test: str, seconds: float,
                script: str) -> list[str]:
    """Submit the script at ``script`` (a file on the controller: sbatch reads it there and sends its text) for
    ``node`` alone, inside its hold, bounded at ``seconds``. Every partition the node is in: sbatch runs the job in
    the first that can. Slurm opens --output itself, following links, before the script runs: nothing of the test
    goes there (confined)."""
    return jobs.submit_argv(jobs.Spec(name=job_name(test), nodes=1, nodelist=(node,), partitions=tuple(partitions),
                                      reservation=reservation, exclusive=True, minutes=jobs.minutes(seconds),
                                      output="/dev/null", requeue=False), script)


def read_argv(reservation: str, node: str, partitions: Iterable[str], job_id: int,
              runs_dir: str = RUNS_DIR) -> list[str]:
    """Print a test's output back from the node (READ_SCRIPT), a job step of its own in the hold. It stays there
    until the node's next test starts (confined): a gate killed before it kept the verdict reads it again."""
    return jobs.step_argv(jobs.Spec(name=READ_NAME, nodes=1, nodelist=(node,), tasks=1, partitions=tuple(partitions),
                                    reservation=reservation, minutes=READ_TIME_LIMIT_MIN),
                          ["sh", "-c", READ_SCRIPT, run_dir(runs_dir, node, job_id)], quiet=True)


def test_of(job: Shown) -> str:
    """The test a gate job runs, from its name (cf-gate:<test>)."""
    return job.name.removeprefix(JOB_PREFIX)


def parse_jobs(text: str) -> list[Shown]:
    """``scontrol -o show job`` (jobs.parse_jobs, which refuses text it cannot read): the gate's jobs, named
    cf-gate:... and root's (the gate runs as root; a name is anyone's to choose); every other job left out. A job's
    ``active``: it waits or runs, or is held where a release runs it again, so nothing is submitted beside it."""
    return [j for j in jobs.parse_jobs(text) if j.name.startswith(JOB_PREFIX) and j.user_id == 0]


def usable(node: Node) -> bool:
    """Takes the gate's jobs now: up, not drained, nothing but its hold on it."""
    return node.base in USABLE_BASES and node.flags - {node.base} <= HARMLESS_FLAGS


def parse_nodes(text: str) -> dict[str, Node]:
    """The one listing (slurm/nodes.py) by node name, each with every partition it is in."""
    return {node.name: node for node in nodes.parse_sinfo(text)}
