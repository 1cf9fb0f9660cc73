"""A test as a Slurm batch job, for `clusterforge accept`: its sbatch command line, the controller's shell command
that submits it with its script, and the reading of ``scontrol -o show job`` as it runs and ends. Pure: the caller
runs the commands on the controller.

The script (admission.tests.job_script) names the nodes, asks for them alone and bounds the test: the tool under
``timeout`` at its share of the node's budget, Slurm's ``--time`` a minute past it (the state TIMEOUT). What is
accept's own is added on sbatch's command line: the job's name ``cf-accept:<test>`` (what squeue shows an admin), its
output file, the ``cf-accept`` reservation where accept made one, and for a rail's run the one HCA NCCL may use. The
output goes to a file on the batch host (the first node), read back from there when the job has ended: root's home
on a compute node is not shared, and no shared directory is assumed. sbatch's answer and scontrol's are read by
slurm_jobs.py, as the gate reads them.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass

from . import slurm_jobs

JOB_PREFIX = "cf-accept:"
RESERVATION = "cf-accept"
OUTPUT_DIR = "/tmp"
# The here-document's end: a word no test script writes on a line of its own.
_END = "CF_ACCEPT_SCRIPT_END"


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

    @property
    def name(self) -> str:
        return JOB_PREFIX + self.test

    @property
    def label(self) -> str:
        return "+".join(self.nodes) + (f" on {self.hca}" if self.hca else "")

    @property
    def limit_s(self) -> int:
        """When Slurm ends the job: the script's --time, a minute past the tool's bound, in whole minutes."""
        return (math.ceil(self.budget_s / 60) + 1) * 60

    def argv(self) -> list[str]:
        """The sbatch command line; its output file names the job by its id (Slurm's %j)."""
        argv = ["sbatch", "--parsable", f"--job-name={self.name}", f"--output={output_path('%j')}"]
        if self.reservation:
            argv.append(f"--reservation={self.reservation}")
        if self.hca:
            argv.append(f"--export=ALL,NCCL_IB_HCA={self.hca}")
        return argv

    def submit_command(self) -> str:
        """The controller's shell command: sbatch reads the script from its standard input."""
        if any(line.strip() == _END for line in self.script.splitlines()):
            raise ValueError(f"{self.label}: the job script of {self.test} contains the line {_END}")
        return f"{shlex.join(self.argv())} <<'{_END}'\n{self.script.rstrip()}\n{_END}"


def output_path(job_id: int | str) -> str:
    return f"{OUTPUT_DIR}/cf-accept-{job_id}.out"


def read_output_command(job_id: int | str) -> str:
    """The batch host's command that prints a job's output and removes the file (nothing where there is none)."""
    path = shlex.quote(output_path(job_id))
    return f"cat {path} 2>/dev/null; rm -f {path}"


def parse_job_id(sbatch_out: str) -> str:
    """sbatch's job id (slurm_jobs.submitted) as the text accept's commands name the job by."""
    return str(slurm_jobs.submitted(sbatch_out))


def show_command(job_ids: list[str]) -> str:
    """Every job of ``job_ids`` one line each; a job Slurm forgot (past MinJobAge) prints nothing."""
    return "; ".join(f"scontrol -o show job {shlex.quote(j)} 2>/dev/null" for j in job_ids) + "; true"


def parse_jobs(text: str) -> dict[str, slurm_jobs.Shown]:
    """show_command's answer (slurm_jobs.parse_jobs), each job by its id as accept holds it."""
    return {str(job.job_id): job for job in slurm_jobs.parse_jobs(text)}


def cancel_command(job_id: str) -> str:
    return f"scancel {shlex.quote(job_id)}"
