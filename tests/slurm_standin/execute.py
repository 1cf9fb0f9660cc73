"""How the stand-in runs a job: its real script, at once, with bash, as root (the test's user), on this machine, every
node sharing its filesystem; its output written as slurmstepd writes it (the --output path opened for writing, a link
followed; a FIFO no one reads is not waited on). What no machine here can be is a node's fate, set per node: a job
that never ends (a process stuck in the kernel: RUNNING, until scancel), one Slurm ends at its time limit (TIMEOUT,
slurmstepd's words in its output), one whose output is lost.

A Runner without scripts (``scripts=False``) starts jobs and leaves them RUNNING until scancel or their ``ends_at``:
what a test of the roll or the deploy needs, where jobs are users' and their scripts are nobody's concern."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from clusterforge.slurm.commands import Answer

if TYPE_CHECKING:
    from .cluster import Job
    from .slurm import Slurm

TIME_LIMIT_OUTPUT = "slurmstepd: error: *** JOB {} ON {} CANCELLED AT {} DUE TO TIME LIMIT ***\n"
SCRIPT_TIMEOUT_S = 120


@dataclass
class Runner:
    scripts: bool = True
    path: list[str] = field(default_factory=list)        # directories first on a job's PATH (its tools, srun)
    env: dict[str, str] = field(default_factory=dict)     # more of a job's environment
    never_ends: set[str] = field(default_factory=set)     # nodes
    times_out: set[str] = field(default_factory=set)
    no_output: set[str] = field(default_factory=set)

    def start(self, job: Job, slurm: Slurm) -> None:
        if not self.scripts or set(job.nodes) & self.never_ends:
            return
        if set(job.nodes) & self.times_out:
            job.state, job.exit_code, job.ended = "TIMEOUT", "0:15", slurm.now + 60 * int(job.options.get("time", 6))
            job.output = TIME_LIMIT_OUTPUT.format(job.job_id, job.nodes[0], "2026-12-02T10:06:00")
        else:
            self._execute(job)
            job.ended = slurm.now
        self._write_output(job)

    def look(self, job: Job, slurm: Slurm) -> None:
        """A look at a job that never ends: it has run ten minutes more."""
        if job.state == "RUNNING" and set(job.nodes) & self.never_ends:
            slurm.now += 600

    def step(self, command: list[str]) -> Answer:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=SCRIPT_TIMEOUT_S)
        return Answer(done.returncode, done.stdout, done.stderr)

    def _execute(self, job: Job) -> None:
        env = {**os.environ, "PATH": ":".join([*self.path, os.environ["PATH"]]), "SLURM_JOB_ID": str(job.job_id),
               "SLURM_JOB_NODELIST": ",".join(job.nodes), "SLURM_JOB_NUM_NODES": str(len(job.nodes)),
               "SLURMD_NODENAME": job.nodes[0], **self.env}
        env.pop("NCCL_IB_HCA", None)
        for assignment in job.options.get("export", "ALL").split(",")[1:]:   # --export=ALL,KEY=VALUE
            key, _, value = assignment.partition("=")
            env[key] = value
        done = subprocess.run(["bash", "-c", job.script], env=env, capture_output=True, text=True,
                              timeout=SCRIPT_TIMEOUT_S, check=False)
        job.output = done.stdout + done.stderr
        job.state = "COMPLETED" if done.returncode == 0 else "FAILED"
        job.exit_code = f"{done.returncode}:0"

    def _write_output(self, job: Job) -> None:
        """As slurmstepd does, as root: the path opened for writing (created, truncated), a link followed. A FIFO
        no one reads is not waited on (O_NONBLOCK: ENXIO): that output is lost."""
        job.stdout = job.options.get("output", f"slurm-{job.job_id}.out").replace("%j", str(job.job_id))
        if job.nodes[0] in self.no_output:
            return
        try:
            fd = os.open(job.stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, 0o644)
        except OSError:
            return
        with os.fdopen(fd, "w") as file:
            file.write(job.output)
