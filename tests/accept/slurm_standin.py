"""A stand-in for the controller's Slurm commands, as `clusterforge accept` sends them, for tests/accept: many nodes on
one machine, which the real-Slurm tier cannot give (one slurmd per machine). Each command answers as Slurm's does
(slurm/nodes.py's sinfo listing, ``scontrol -o show job``'s keys, sbatch --parsable's id, a drain never over a held
node as drains.drain_command's own shell says); a job runs its real script at once, with bash, the testbed's stand-in tools
(testbed/accept/) as its programs and tests/accept/bin/srun as srun, so the output judged is those tools' output.

A node in ``never_ends`` runs a job that does not end (a process stuck in the kernel): Slurm shows it RUNNING, ten
minutes older at each look, until scancel ends it (CANCELLED, signal 15). One in ``times_out`` runs a job Slurm ends
at its time limit (TIMEOUT, slurmstepd's words in its output).

The controller's one file accept writes, the gate's records (records.append_command), is written by a real shell into
``controller_records``, a directory of the test's in the place of /var/lib/clusterforge/gate/records.

A job's output is written as slurmstepd writes it, by root (the test's user) opening sbatch's --output path for writing,
a link followed; the nodes' commands (making the run's output directory, reading an output, removing the directory)
run in a real shell, every node sharing this machine's filesystem: ``output_base`` (a directory of the test's) is
where accept is told to make its run directories, in the place of /var/lib/clusterforge/accept."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from clusterforge.admission import records
from clusterforge.slurm import drains, nodes
from clusterforge.slurm.commands import Answer

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "testbed" / "accept"
BIN = Path(__file__).resolve().parent / "bin"
NODE_TIMEOUT_S = 10   # a node command that takes longer is stalled (the CLI's bound is 60 s)


@dataclass
class Job:
    job_id: str
    name: str
    nodes: list[str]
    argv: list[str]
    script: str
    state: str = "PENDING"
    run_s: int = 0
    exit_code: str = "0:0"
    output: str = ""
    stdout: str = ""        # the file its output was written to


@dataclass
class SlurmStandIn:
    nodes: dict[str, tuple[str, str]]            # name: (sinfo's state, reason)
    testbed_root: Path
    never_ends: set[str] = field(default_factory=set)
    times_out: set[str] = field(default_factory=set)     # Slurm ends the job at its time limit
    reservations: dict[str, str] = field(default_factory=dict)   # name: nodes
    jobs: dict[str, Job] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    node_commands: list[tuple[str, str]] = field(default_factory=list)
    stalled: list[tuple[str, str]] = field(default_factory=list)      # node commands cut at NODE_TIMEOUT_S
    no_output: set[str] = field(default_factory=set)     # a job whose batch host is one of these writes no output
    # name: (its nodes, whether the default); none: every node in one default partition
    partitions: dict[str, tuple[set[str], bool]] = field(default_factory=dict)

    def controller(self, command: str) -> Answer:
        self.commands.append(command)
        if command == nodes.sinfo_command():  # the long state and reason are what accept reads
            return ok("".join(f"{n}|all|infinite|{self.state(n)}||(null)|(null)|{r or 'none'}|\n"
                              for n, (_, r) in self.nodes.items()))
        if command == "scontrol -o show reservation":
            if not self.reservations:
                return ok("No reservations in the system\n")
            return ok("".join(f"ReservationName={name} StartTime=2026-11-27T04:00:00 EndTime=2027-11-27T04:00:00 "
                              f"Duration=365-00:00:00 Nodes={nodes} NodeCnt={len(nodes.split(','))} CoreCnt=8 "
                              "Features=(null) PartitionName=(null) Flags=MAINT,IGNORE_JOBS,SPEC_NODES TRES=cpu=8 "
                              "Users=root Groups=(null) Accounts=(null) Licenses=(null) State=ACTIVE "
                              "BurstBuffer=(null) MaxStartDelay=(null)\n"
                              for name, nodes in self.reservations.items()))
        if command.startswith("scontrol show hostnames "):
            return ok("\n".join(shlex.split(command)[3].split(",")) + "\n")
        if command.startswith("scontrol create reservation "):
            argv = shlex.split(command)
            values = dict(a.split("=", 1) for a in argv if "=" in a)
            self.reservations.setdefault(values["ReservationName"], values["Nodes"])
            return ok(f"Reservation created: {values['ReservationName']}\n")
        if command.startswith("scontrol delete ReservationName="):
            name = command.split("=", 1)[1]
            if self.reservations.pop(name, None) is None:
                return Answer(1, "", "delete_reservation: Requested reservation is invalid\n")
            return ok("")
        if command.startswith("sbatch "):
            return self.sbatch(command)
        if command.startswith("scontrol -o show job "):
            return ok("".join(self.show(job_id) for job_id in re.findall(r"show job '?(\d+)'?", command)))
        if command.startswith("scancel "):
            job = self.jobs[shlex.split(command)[1]]
            if job.state == "RUNNING":
                job.state, job.exit_code = "CANCELLED", "0:15"
            return ok("")
        if "State=DRAIN" in command:
            return self.drain(command)
        if records.ON_CONTROLLER in command:
            done = subprocess.run(["sh", "-c", command.replace(records.ON_CONTROLLER, str(self.controller_records))],
                                  capture_output=True, text=True, check=False)
            return Answer(done.returncode, done.stdout, done.stderr)
        raise AssertionError(f"a command Slurm's stand-in does not know: {command[:200]!r}")

    @property
    def controller_records(self) -> Path:
        return self.testbed_root / "controller" / "gate" / "records"

    def __post_init__(self) -> None:
        (self.testbed_root / "node").mkdir(exist_ok=True)

    @property
    def output_base(self) -> str:
        return str(self.testbed_root / "node" / "var-lib-clusterforge" / "accept-runs")

    def node(self, name: str):
        def run(command: str) -> Answer:
            self.node_commands.append((name, command))
            try:
                done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=False,
                                      timeout=NODE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                # What the CLI's `timeout 60 sh -c` gives (check/run.py): exit 124. A stall, recorded.
                self.stalled.append((name, command))
                return Answer(124, "", "")
            return Answer(done.returncode, done.stdout, done.stderr)
        return run

    def sbatch(self, command: str) -> Answer:
        first, _, rest = command.partition("\n")
        head, _, end = first.partition(" <<")
        end = end.strip("'")
        script = rest[:rest.rindex(f"\n{end}")] + "\n"
        argv = shlex.split(head)
        options = dict(a[2:].split("=", 1) for a in argv[1:] if a.startswith("--") and "=" in a)
        lines = {k: v for k, _, v in (line[len("#SBATCH --"):].partition("=")
                                      for line in script.splitlines() if line.startswith("#SBATCH --"))}
        nodes = (options.get("nodelist") or lines["nodelist"]).split(",")
        if self.partitions:
            named = options.get("partition") or next(n for n, (_, default) in self.partitions.items() if default)
            if named not in self.partitions or not set(nodes) <= self.partitions[named][0]:
                # A refusal of slurmctld's for nodes outside the job's partition
                return Answer(1, "", "sbatch: error: Batch job submission failed: Requested node configuration is "
                                     "not available\n")
        if "reservation" in options and options["reservation"] not in self.reservations:
            return Answer(1, "", "sbatch: error: Batch job submission failed: Requested reservation is invalid\n")
        job = Job(str(1000 + len(self.jobs)), options["job-name"], nodes, argv, script)
        self.jobs[job.job_id] = job
        if set(nodes) & self.never_ends:
            job.state = "RUNNING"
        elif set(nodes) & self.times_out:
            job.state, job.exit_code, job.run_s = "TIMEOUT", "0:15", 360
            job.output = "slurmstepd: error: *** JOB CANCELLED DUE TO TIME LIMIT ***\n"
        else:
            self.execute(job, options)
        if job.state != "RUNNING":
            self.write_output(job, options["output"])
        return ok(f"{job.job_id}\n")

    def write_output(self, job: Job, output: str) -> None:
        """As slurmstepd does, as root: the path opened for writing (created, truncated), a link followed. A FIFO
        no one reads is not waited on (O_NONBLOCK: ENXIO): that output is lost."""
        job.stdout = output.replace("%j", job.job_id)
        if job.nodes[0] in self.no_output:
            return
        try:
            fd = os.open(job.stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, 0o644)
        except OSError:
            return
        with os.fdopen(fd, "w") as file:
            file.write(job.output)

    def execute(self, job: Job, options: dict[str, str]) -> None:
        # The tools by name too, as an image's PATH has them (Programs(image=...) names no directory).
        env = {**os.environ, "PATH": f"{BIN}:{TOOLS}:{os.environ['PATH']}", "SLURM_JOB_ID": job.job_id,
               "SLURM_JOB_NODELIST": ",".join(job.nodes), "SLURM_JOB_NUM_NODES": str(len(job.nodes)),
               "SLURMD_NODENAME": job.nodes[0], "CLUSTERFORGE_TESTBED_ROOT": str(self.testbed_root)}
        env.pop("NCCL_IB_HCA", None)
        for assignment in options.get("export", "ALL").split(",")[1:]:
            key, _, value = assignment.partition("=")
            env[key] = value
        done = subprocess.run(["bash", "-c", job.script], env=env, capture_output=True, text=True, timeout=120,
                              check=False)
        job.output = done.stdout + done.stderr
        job.state = "COMPLETED" if done.returncode == 0 else "FAILED"
        job.exit_code = f"{done.returncode}:0"
        job.run_s = 1

    def show(self, job_id: str) -> str:
        job = self.jobs.get(job_id)
        if job is None:
            return ""
        if job.state == "RUNNING":
            job.run_s += 600
        clock = f"{job.run_s // 3600:02d}:{job.run_s // 60 % 60:02d}:{job.run_s % 60:02d}"
        return (f"JobId={job.job_id} JobName={job.name} UserId=root(0) GroupId=root(0) Priority=1 "
                f"JobState={job.state} Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 "
                f"ExitCode={job.exit_code} RunTime={clock} TimeLimit=00:06:00 NodeList={','.join(job.nodes)} "
                f"BatchHost={job.nodes[0]} NumNodes={len(job.nodes)} Command=(null) "
                f"StdOut={job.stdout or '(null)'}\n")

    def drain(self, command: str) -> Answer:
        """drains.drain_command: every node of --nodes not in a held state drained with its Reason."""
        listed = re.search(r"--nodes=(\S+) ", command).group(1)
        reason = shlex.split(re.search(r"(Reason=(?:'[^']*'|\S+))", command).group(1))[0].split("=", 1)[1]
        for name in shlex.split(listed)[0].split(","):
            if not re.search(drains.HELD_STATES, self.state(name)):
                self.nodes[name] = ("drained", reason)
        return ok("")

    def state(self, name: str) -> str:
        """sinfo's %T: a node inside a MAINT reservation shows as maint where idle, else with "$" (allocated$), as
        26.05 prints them (tests/realslurm/test_accept.py)."""
        state = self.nodes[name][0]
        if name not in {n for nodes in self.reservations.values() for n in nodes.split(",")}:
            return state
        return "maint" if state == "idle" else state + "$"

    @property
    def submitted(self) -> list[Job]:
        return list(self.jobs.values())


def ok(out: str) -> Answer:
    return Answer(0, out, "")
