"""Issue 46, the gate's side: a verdict comes only from the test job itself, and nothing held is held silently.

Slurm here is its stand-in (tests/slurm_standin), gpu01 held by the gate (held.py). It runs the gate's jobs for real,
on this machine, as root: sbatch runs the script the gate wrote with SLURM_JOB_ID set, its stdout opened where
``--output`` says as slurmstepd opens it (following links, creating, truncating; a FIFO no one reads cannot be
opened, and the job then runs without its output), and records its exit status; the read job (``srun ... sh -c
...``) is the gate's own command, run here, timed by this test. Before the gate's first pass an unprivileged person
(uid 65534, a real process) plants a FIFO, a symlink to a root-owned file and a file with a passing table at every
name in /tmp and /var/tmp the gate's jobs could use: the slow node is drained all the same, no file of root's is
written through the link, and no pass waits on the FIFO.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from gate.held import HOLD, NODE, by_admin, held
from slurm_standin import Partition, Runner, Slurm, cluster

from clusterforge.admission import tests as admission_tests
from clusterforge.gate import slurm
from clusterforge.gate.passes import Gate
from clusterforge.gate.store import Store
from clusterforge.slurm import jobs
from clusterforge.slurm.commands import Answer

IB_TEST = {"name": "ib_write_bw", "argv": ["ib_write_bw", "-s", "8388608", "-F", "--report_gbits"], "image": None,
           "gpus": 0, "hcas": ["mlx5_0"], "use_cuda": False, "floors": {"ib_write_bw": 380.0}, "unit": "Gb/s",
           "timeout": 60}
PLAN = {"nodes": {NODE: {"tests": [IB_TEST]}}}
NOBODY = 65534
PLANTED_TABLE = "planted: 399 Gb/s"


def perftest(gbits: float) -> str:
    """ib_write_bw's table (perftest --report_gbits) for one HCA, as tests/admission's stand-in prints it."""
    line = "-" * 87
    return (f"{line}\n                    RDMA_Write BW Test\n Device         : mlx5_0\n{line}\n"
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
            f" 8388608    5000             {gbits:.2f}              {gbits:.2f}\t\t     0.005832\n{line}\n")


def passing_output() -> str:
    mark = admission_tests.MARK
    return f"{mark} mlx5_0\n{perftest(399)}{mark} mlx5_0 exit 0\n"


def slow_script(test: dict, nodes: list[str]) -> str:
    """The node's ib_write_bw: a slow HCA (190 Gb/s), which perftest reports with exit 0, in the script's format."""
    mark = admission_tests.MARK
    table = perftest(190.02).replace("'", "")
    return ("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --exclusive\nset -u\n"
            f"echo '{mark} mlx5_0'\nprintf '%s' '{table}'\necho '{mark} mlx5_0 exit 0'\nexit 0\n")


def as_nobody(command: str) -> None:
    subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "sh", "-c", command],
                   check=True, timeout=30)


@dataclass
class TimedReads(Runner):
    """The stand-in's runner, each read job (srun's command) timed, and bounded here: a read waiting on a FIFO shows
    as one of many seconds, and gives up at ``read_bound`` as a stalled read (124)."""

    reads: list[float] = field(default_factory=list)     # seconds each read job took
    read_bound: float = 15                                # the most a read may take here before it counts as a stall

    def step(self, command: list[str]) -> Answer:
        started = time.monotonic()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=self.read_bound, check=False)
        except subprocess.TimeoutExpired:
            return Answer(124, "", "timed out")
        finally:
            self.reads.append(time.monotonic() - started)
        return Answer(done.returncode, done.stdout, done.stderr)


def reason(slurm_: Slurm) -> str:
    """The node's drain reason, as slurmctld holds it."""
    return slurm_.nodes[NODE].reason


@pytest.fixture
def planted(tmp_path):
    """Job ids past any this machine's Slurm would give (one range per test process), and for each the names a gate
    job could write in /tmp and /var/tmp, planted by nobody: a FIFO, a link to a root-owned file, a passing table."""
    if os.geteuid() != 0:
        pytest.skip("plants as another user and runs the jobs as root: needs root")
    first = 7_000_000 + os.getpid() % 100_000 * 10
    victim = tmp_path / "victim"  # a root-owned file the link points to: as a file under /etc would be
    victim.write_text("root's own\n")
    names = [f"{d}/cf-gate-{first + i}.out" for i in range(6) for d in ("/var/tmp", "/tmp")]
    kinds = ["fifo", "link", "table"]
    commands = []
    for index, name in enumerate(names):
        kind = kinds[(index // 2) % 3]
        commands.append(f"mkfifo {shlex.quote(name)}" if kind == "fifo" else
                        f"ln -s {shlex.quote(str(victim))} {shlex.quote(name)}" if kind == "link" else
                        f"printf '%s' {shlex.quote(passing_output())} > {shlex.quote(name)}; chmod 666 {name}")
    as_nobody("; ".join(commands))
    yield first, victim, names
    for name in names:
        Path(name).unlink(missing_ok=True)


def test_planted_fifos_links_and_files_neither_pass_a_slow_hca_nor_stall_a_pass_nor_take_roots_writes(
        tmp_path, planted):
    first, victim, names = planted
    runner = TimedReads()
    slurm_ = held(next_job=first, runner=runner)
    said: list[str] = []
    gate = Gate(Store(str(tmp_path / "state")), PLAN, slurm_, slow_script, admission_tests.judge,
                str(tmp_path / "scripts"), log=said.append)
    gate.runs_dir = str(tmp_path / "runs")  # on a node: slurm.RUNS_DIR, under /var/lib
    for _ in range(8):
        gate.one_pass()
        if reason(slurm_):
            break
    assert reason(slurm_).startswith("cf:gate:ib_write_bw:mlx5_0 190.02 Gb/s < 380"), (reason(slurm_), said)
    assert runner.reads and all(seconds < 5 for seconds in runner.reads), runner.reads  # no read waited on a FIFO
    assert victim.read_text() == "root's own\n"  # root's job wrote nothing through the link
    for name in names:  # what nobody planted is as nobody left it: root neither wrote nor removed it
        seen = os.lstat(name)
        assert seen.st_uid == NOBODY, name
        if stat.S_ISREG(seen.st_mode):
            assert Path(name).read_text() == passing_output(), name
    # The test's output was its own directory's, root's, 0700, under the gate's runs.
    run = tmp_path / "runs" / NODE / str(first)
    assert run.is_dir() and not run.is_symlink() and stat.S_IMODE(run.stat().st_mode) == 0o700
    assert "190.02" in (run / slurm.OUTPUT).read_text()


def read(run_dir: Path) -> subprocess.CompletedProcess[str]:
    """The gate's read job's command, run here as the node runs it (srun's sh)."""
    argv = slurm.read_argv("cf-gate-new-gpu01", NODE, (), 5, str(run_dir.parents[1]))
    return subprocess.run(argv[argv.index("sh"):], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("kind", ["missing", "fifo", "link", "foreign", "directory", "open directory"])
def test_the_read_refuses_anything_but_roots_own_file_at_once_and_names_why(tmp_path, kind):
    if os.geteuid() != 0:
        pytest.skip("makes files of another user: needs root")
    run = tmp_path / "runs" / NODE / "5"
    run.mkdir(parents=True)
    run.chmod(0o700)
    output = run / slurm.OUTPUT
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text(passing_output())
    if kind == "fifo":
        os.mkfifo(output)
    elif kind == "link":
        output.symlink_to(elsewhere)
    elif kind == "foreign":
        output.write_text(passing_output())
        os.chown(output, NOBODY, NOBODY)
    elif kind == "directory":
        output.mkdir()
    elif kind == "open directory":
        output.write_text(passing_output())
        run.chmod(0o777)
    started = time.monotonic()
    done = read(run)
    assert time.monotonic() - started < 10
    assert done.returncode == slurm.READ_REFUSED, (done.stdout, done.stderr)
    why = slurm.refused(done.stdout)
    assert why.startswith({"missing": "no output: ", "fifo": "foreign output: ", "link": "foreign output: ",
                           "foreign": "foreign output: ", "directory": "foreign output: ",
                           "open directory": "foreign output: "}[kind]), why
    assert PLANTED_TABLE not in done.stdout and "399" not in done.stdout


def test_roots_own_output_is_read_whole_and_kept_until_the_nodes_next_test(tmp_path):
    run = tmp_path / "runs" / NODE / "5"
    run.mkdir(parents=True)
    run.chmod(0o700)
    (run / slurm.OUTPUT).write_text(passing_output())
    done = read(run)
    assert (done.returncode, done.stdout) == (0, passing_output())
    assert (run / slurm.OUTPUT).exists()  # a gate killed before it kept the verdict reads it again


def unrun(partitions: dict[str, Partition] | None = None, kind: type[Slurm] = Slurm) -> Slurm:
    """gpu01 held; each job slurmctld starts runs until it is cancelled, its script not run (where a test goes, and
    whether slurmctld takes it, is all these tests ask)."""
    return held(partitions, kind=kind, runner=Runner(scripts=False))


LONG = {**IB_TEST, "timeout": 44 * 60}  # prod's dcgm level 3 share: 44 minutes, 45 with Slurm's margin
# When the stand-in's jobs are submitted (its clock stands still here), as the gate reads SubmitTime: the
# controller's local time.
SUBMITTED = time.mktime(time.strptime(cluster.stamp(cluster.START), "%Y-%m-%dT%H:%M:%S"))


def gate_on(tmp_path: Path, slurm_: Slurm, plan: dict | None = None, **settings) -> Gate:
    gate = Gate(Store(str(tmp_path / "state")), plan or {"nodes": {NODE: {"tests": [LONG]}}}, slurm_, slow_script,
                admission_tests.judge, str(tmp_path / "scripts"), log=lambda text: None,
                runs_dir=str(tmp_path / "runs"))
    for key, value in settings.items():
        setattr(gate, key, value)
    return gate


def test_a_test_goes_only_to_the_partitions_whose_time_limit_lets_it_run(tmp_path):
    slurm_ = unrun({"debug": Partition([NODE], max_minutes=30),
                    "batch": Partition([NODE], default=True, max_minutes=24 * 60), "long": Partition([NODE])})
    gate_on(tmp_path, slurm_).one_pass()
    [submitted] = [a for a in slurm_.asked if a[0] == "sbatch"]
    assert "--partition=batch,long" in submitted and "--time=45" in submitted
    assert reason(slurm_) == ""


def test_a_test_no_partition_of_the_node_lets_run_drains_it_cannot_run_and_submits_nothing(tmp_path):
    slurm_ = unrun({"debug": Partition([NODE], max_minutes=30)})
    gate = gate_on(tmp_path, slurm_)
    gate.one_pass()
    assert reason(slurm_) == "cf:gate:cannot run: ib_write_bw needs 45 min, TimeLimit debug 30 min"
    assert not [a for a in slurm_.asked if a[0] == "sbatch"]
    gate.one_pass()  # drained by the gate: it waits for an admin, and asks nothing again
    assert not [a for a in slurm_.asked if a[0] == "sbatch"]


class MaxTimeLoweredMeanwhile(Slurm):
    """Right after the pass read the partitions (sinfo), an admin lowers all's MaxTime to 30 minutes: slurmctld
    refuses the 45 minutes the gate asks for there (EnforcePartLimits=ALL, as clusterforge renders it)."""

    def sinfo(self, args: list[str]) -> Answer:
        answer = super().sinfo(args)
        by_admin(self, "scontrol", "update", "PartitionName=all", "MaxTime=30")
        return answer


def test_a_test_sbatch_refuses_drains_the_node_cannot_run_with_slurms_reason(tmp_path):
    slurm_ = unrun(kind=MaxTimeLoweredMeanwhile)
    gate = gate_on(tmp_path, slurm_)
    gate.one_pass()
    assert reason(slurm_) == ("cf:gate:cannot run: ib_write_bw: sbatch: Requested time limit is invalid (missing or "
                              "exceeds some limit)")
    asked = len(slurm_.asked)
    gate.one_pass()
    assert not [a for a in slurm_.asked[asked:] if a[0] == "sbatch"]  # no retry every pass: an admin's now


def test_sbatch_that_cannot_reach_slurmctld_drains_nothing_and_tries_again(tmp_path):
    # sbatch failing without slurmctld's word on the job: its own error, or slurmctld not reached, which sbatch says
    # after the same words as a refusal (sbatch.c). Slurm is up for everything else: the pass reads the node again.
    for said in ("sbatch: error: slurm_persist_conn_open: Something happened\n",
                 "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)\n",
                 "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation\n"):
        slurm_ = unrun()
        slurm_.refuse["sbatch"] = Answer(1, "", said)
        gate = gate_on(tmp_path / str(len(said)), slurm_)
        gate.one_pass()
        gate.one_pass()
        assert reason(slurm_) == "", said
        assert len([a for a in slurm_.asked if a[0] == "sbatch"]) == 2, said


def waiting(tmp_path: Path, seconds: float) -> tuple[Slurm, Gate, jobs.Shown]:
    """The gate's test submitted, ``seconds`` ago, behind a job of alice's that runs on the node since before the
    hold (IGNORE_JOBS): slurmctld keeps it pending (Resources)."""
    slurm_ = unrun()
    slurm_.place("alice", [NODE], 3600)
    gate = gate_on(tmp_path, slurm_, clock=lambda: SUBMITTED + seconds)
    gate.one_pass()
    [job] = slurm.parse_jobs(slurm_.scontrol(["-o", "show", "job"]).out)
    assert (job.state, job.reason, job.submitted_at) == ("PENDING", "Resources", SUBMITTED)
    return slurm_, gate, job


def test_a_test_pending_past_the_bound_is_cancelled_and_drains_the_node_cannot_run(tmp_path):
    slurm_, gate, job = waiting(tmp_path, 60)
    gate.one_pass()
    assert reason(slurm_) == "" and not [a for a in slurm_.asked if a[0] == "scancel"]  # a minute: it waits
    gate.clock = lambda: SUBMITTED + 901
    gate.one_pass()
    assert ["scancel", str(job.job_id)] in slurm_.asked
    assert reason(slurm_) == f"cf:gate:cannot run: ib_write_bw (job {job.job_id}) pending Resources for 901 s"


def test_a_test_pending_for_a_limit_drains_at_once(tmp_path):
    slurm_, gate, job = waiting(tmp_path, 6)
    by_admin(slurm_, "scontrol", "update", "PartitionName=all", "MaxTime=30")  # under its 45 minutes, once accepted
    gate.one_pass()
    assert reason(slurm_) == f"cf:gate:cannot run: ib_write_bw (job {job.job_id}) pending PartitionTimeLimit for 6 s"


ADMIN = "RMA: fan (admin)"


def test_the_gate_drains_on_the_nodes_state_read_again_just_before_never_over_an_admins_drain(tmp_path):
    """Issue 46, 8: the pass's sinfo says the node is idle in its hold; between that read and the gate's drain of
    its failed test, an admin drains it. Read again just before, the admin's reason stays."""
    class AdminMeanwhile(Slurm):
        armed = False

        def sinfo(self, args: list[str]) -> Answer:
            answer = super().sinfo(args)
            if self.armed:  # right after the pass read the node
                by_admin(self, "scontrol", "update", f"NodeName={NODE}", "State=DRAIN", f"Reason={ADMIN}")
                self.armed = False
            return answer

    first = 8_000_000 + os.getpid() % 100_000 * 10
    slurm_ = held(kind=AdminMeanwhile, next_job=first)
    gate = gate_on(tmp_path, slurm_, {"nodes": {NODE: {"tests": [IB_TEST]}}}, runs_dir=str(tmp_path / "runs"))
    try:
        gate.one_pass()  # submitted, and run here
        slurm_.armed = True
        gate.one_pass()  # read, judged (190.02 < 380) and decided on, after the pass's read the admin's drain followed
    finally:
        Path(f"/var/tmp/cf-gate-{first}.out").unlink(missing_ok=True)  # where today's gate had its output
    assert reason(slurm_) == ADMIN
    assert not [a for a in slurm_.asked if a[:2] == ["scontrol", "update"]]


def test_a_job_named_as_the_gates_but_not_roots_is_not_the_gates(tmp_path):
    """Issue 46: a name is anyone's to choose. A job of another user named cf-gate:... in the hold's reservation is
    neither judged nor taken for the gate's running test."""
    slurm_ = held()
    alices = slurm_.place("alice", [NODE], 0, name="cf-gate:ib_write_bw")
    alices.options["reservation"] = HOLD
    slurm_.advance(0)  # it ends: COMPLETED, 0:0
    shown = slurm_.scontrol(["-o", "show", "job"]).out
    assert "JobName=cf-gate:ib_write_bw UserId=alice(" in shown and "JobState=COMPLETED" in shown
    assert slurm.parse_jobs(shown) == []


def test_the_pending_bound_is_the_gates_command_line_default_fifteen_minutes():
    from clusterforge.gate.main import arguments

    assert arguments([]).pending_bound == 900 and arguments(["--pending-bound", "60"]).pending_bound == 60
