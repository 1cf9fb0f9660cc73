"""A test as a Slurm batch job, for `clusterforge accept`: its job spec (slurm/jobs.py, which builds the sbatch
command line and the controller's shell text that submits it with its script on sbatch's standard input, and reads
sbatch's and ``scontrol -o show job``'s answers), and where its output goes on the node and how it comes back. Pure:
the caller runs the commands on the controller and the nodes.

The script (admission.tests.job_script) names the nodes, asks for them alone and bounds the test: the tool under
``timeout`` at its share of the node's budget, Slurm's ``--time`` a minute past it (the state TIMEOUT). What is
accept's own is added on sbatch's command line: the job's name ``cf-accept:<test>`` (what squeue shows an admin), its
output file, the partition (one every node of the job is in: a node outside the default partition would never run a
job that names none), the ``cf-accept`` reservation where accept made one, and for a rail's run the one HCA NCCL may
use. The
output goes to a file on the batch host (the first node), read back from there when the job has ended: root's home
on a compute node is not shared, and no shared directory is assumed. The controller submits, reads and cancels the
jobs (reach's Controller), sbatch's answer and scontrol's read by slurm/jobs.py, as the gate reads them.

Where the output goes is root's alone: a directory made for one run
(``/var/lib/clusterforge/accept-runs/run-<random>``, mode 0700, under a root-owned parent no one else may write to),
made on each node before the run's first job (prepare_command) and removed at its end (remove_command). Job ids are
sequential and /tmp is everyone's, so an output named there could be planted by any job user before the job starts:
a file of hers read back as the verdict, a FIFO that stalls the read, or a symbolic link root's job output follows
into any file root can write (fs.protected_symlinks=0). The read (read_output_command) takes only a regular file
owned by root in that directory, follows no link, is bounded by timeout(1), and says why where it refuses: a verdict
comes only from the job itself.
"""

from __future__ import annotations

import posixpath
import secrets
import shlex
from dataclasses import dataclass

from ..slurm import jobs

JOB_PREFIX = "cf-accept:"
RESERVATION = "cf-accept"
# On each node: the parent of each run's own output directory, root's and 0700 (made where missing).
OUTPUT_BASE = "/var/lib/clusterforge/accept-runs"   # beside the gate's gate-runs
READ_TIMEOUT_S = 10          # a read that blocks (it should not: a regular file, no link) ends here
READ_MAX_MIB = 16            # no test prints more; a bigger file is read this far
# The exit status and the words of a refusal by one of the node's commands below: what accept names as the reason.
REFUSED = 3
SAID = "clusterforge accept: "


@dataclass(frozen=True, slots=True)
class Job:
    """One test on one node or group: what it runs (the test's entry of admission.json), where, with one HCA alone
    for a rail's run (NCCL_IB_HCA), and its script (admission.tests.job_script)."""

    test: str
    nodes: tuple[str, ...]
    budget_s: int
    script: str
    hca: str | None = None
    reservation: str | None = None
    output_dir: str = ""        # the run's own directory on the node (run_directory)
    partition: str | None = None   # one all its nodes are in (Accept.partition_of); None: Slurm's default

    @property
    def name(self) -> str:
        return JOB_PREFIX + self.test

    @property
    def label(self) -> str:
        return "+".join(self.nodes) + (f" on {self.hca}" if self.hca else "")

    @property
    def limit_s(self) -> int:
        """When Slurm ends the job: the script's --time, a minute past the tool's bound, in whole minutes."""
        return jobs.minutes(self.budget_s + 60) * 60

    @property
    def spec(self) -> jobs.Spec:
        """What is accept's own on sbatch's command line (the script says the rest); its output file names the job by
        its id (Slurm's %j)."""
        return jobs.Spec(name=self.name, partitions=(self.partition,) if self.partition else (),
                         reservation=self.reservation or "", output=output_path(self.output_dir, "%j"),
                         export=(f"NCCL_IB_HCA={self.hca}",) if self.hca else ())

    def argv(self) -> list[str]:
        """The sbatch command line, without the script."""
        return jobs.submit_argv(self.spec)

    def submit_command(self) -> str:
        """The controller's shell command: sbatch reads the script from its standard input."""
        try:
            return jobs.submit_command(self.spec, self.script)
        except ValueError as error:
            raise ValueError(f"{self.label}: {error}") from None


def run_directory(base: str = OUTPUT_BASE) -> str:
    """A new run's own output directory on the nodes: a name no one can guess, under ``base``."""
    return f"{base.rstrip('/')}/run-{secrets.token_hex(8)}"


def output_path(directory: str, job_id: int | str) -> str:
    if not directory.startswith("/"):
        raise ValueError(f"a job's output directory is an absolute path, not {directory!r}")
    return f"{directory}/{job_id}.out"


ROOTS_ALONE = "a directory only root may enter (0700)"
# Shell functions of the node's commands: refuse (say why, exit REFUSED), and own: a directory, not a link, root's,
# that no one else may write to (no group or other write bit).
_FUNCTIONS = (f"refuse() {{ echo \"{SAID}$*\" >&2; exit {REFUSED}; }}; "
              'own() { [ ! -L "$1" ] && [ -d "$1" ] && [ "$(stat -c %u -- "$1")" = 0 ] && '
              '[ $(( 0$(stat -c %a -- "$1") & 022 )) -eq 0 ]; }; '
              'private() { own "$1" && [ "$(stat -c %a -- "$1")" = 700 ]; }; ')


def prepare_command(directory: str) -> str:
    """The node's command, run as root before the run's jobs, that makes ``directory`` (run_directory's) root's own,
    0700: its parent made 0700 where missing, and its parent's parent, and each checked to be a directory of root's
    that no one else may write to (never a link). One that already is root's own, 0700, is taken: only root can
    have made it there (a second node sharing the filesystem, as the tests' nodes on one machine do)."""
    base = posixpath.dirname(directory.rstrip("/"))
    top = posixpath.dirname(base)
    d, b, t = (shlex.quote(p) for p in (directory, base, top))
    return (_FUNCTIONS + "umask 077; "
            f"[ -e {t} ] || [ -L {t} ] || mkdir -m 0755 -- {t} 2>/dev/null; "
            f"own {t} || refuse {shlex.quote(f'{top} is not a directory of root only root may write to')}; "
            f"[ -e {b} ] || [ -L {b} ] || mkdir -m 0700 -- {b} 2>/dev/null; "
            f"private {b} || refuse {shlex.quote(f'{base} is not a directory of root only root may enter (0700)')}; "
            f"[ -e {d} ] || [ -L {d} ] || mkdir -m 0700 -- {d} 2>/dev/null; "
            f"private {d} || refuse {shlex.quote(f'{directory} could not be made {ROOTS_ALONE}')}")


def read_output_command(directory: str, job_id: int | str) -> str:
    """The batch host's command, run as root, that prints a job's output and removes the file. It refuses (exit
    REFUSED, the reason on stderr) a directory that is not root's own 0700, and an output that is missing, a link,
    not a regular file (a FIFO, a directory) or not root's; it follows no link and reads no longer than
    READ_TIMEOUT_S (O_NOFOLLOW and O_NONBLOCK through dd's iflag)."""
    d, f = shlex.quote(directory), shlex.quote(output_path(directory, job_id))
    path = output_path(directory, job_id)
    return (_FUNCTIONS + f"f={f}; "
            f"private {d} || refuse {shlex.quote(f'the output directory {directory} is not {ROOTS_ALONE}')}; "
            f'if [ -L "$f" ]; then refuse "$f is a symbolic link, not the job\'s output"; '
            f'elif [ ! -e "$f" ]; then refuse "$f is missing: the job wrote no output there"; '
            f'elif [ ! -f "$f" ]; then refuse "$f is a $(stat -c %F -- "$f"), not a regular file"; '
            f'elif [ "$(stat -c %u -- "$f")" != 0 ]; then refuse "$f belongs to uid $(stat -c %u -- "$f"), '
            'not root"; fi; '
            f'timeout {READ_TIMEOUT_S} dd if="$f" iflag=nofollow,nonblock bs=1M count={READ_MAX_MIB} status=none '
            f'|| refuse "$f could not be read"; '
            f"rm -f -- {shlex.quote(path)}")


def remove_command(directory: str) -> str:
    """The node's command that removes the run's directory once its outputs are read (only where it is root's own:
    rm -r follows no link)."""
    d = shlex.quote(directory)
    return _FUNCTIONS + f"if [ -e {d} ]; then private {d} && rm -rf -- {d}; fi"


def refusal(err: str) -> str:
    """The reason a node's command above refused, from its stderr; "" where it gave none (it failed otherwise)."""
    said = [line[len(SAID):] for line in err.splitlines() if line.startswith(SAID)]
    return said[-1].strip() if said else ""
