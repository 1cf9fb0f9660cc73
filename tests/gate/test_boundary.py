"""Issue 46, the gate's side: a verdict comes only from the test job itself, and nothing held is held silently.

The Slurm here runs the gate's jobs for real, on this machine, as root: sbatch runs the script the gate wrote with
SLURM_JOB_ID set, its stdout opened where ``--output`` says as slurmstepd opens it (following links, creating,
truncating; a FIFO no one reads cannot be opened, and the job then runs without its output), and records its exit
status; the read job (``srun ... sh -c ...``) is the gate's own command, run here. Everything else is the text the
real slurmctld 26.05 prints (tests/realslurm runs the gate on it). Before the gate's first pass an unprivileged
person (uid 65534, a real process) plants a FIFO, a symlink to a root-owned file and a file with a passing table at
every name in /tmp and /var/tmp the gate's jobs could use: the slow node is drained all the same, no file of root's
is written through the link, and no pass waits on the FIFO.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import time
from pathlib import Path

import pytest

from clusterforge.admission import tests as admission_tests
from clusterforge.gate import slurm
from clusterforge.gate.passes import Gate
from clusterforge.gate.store import Store
from clusterforge.slurm.commands import Answer

NODE = "gpu01"
HOLD_LINE = ("ReservationName=cf-gate-new-gpu01 StartTime=2026-11-27T04:14:44 EndTime=2027-11-27T04:14:44 "
             "Duration=365-00:00:00 Nodes=gpu01 NodeCnt=1 CoreCnt=4 Features=(null) PartitionName=(null) "
             "Flags=MAINT,IGNORE_JOBS,SPEC_NODES TRES=cpu=4 Users=root Groups=(null) Accounts=(null) "
             "Licenses=(null) State=ACTIVE BurstBuffer=(null) MaxStartDelay=(null)\n")
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


class LocalSlurm:
    """The gate's Slurm, its jobs run here (see the module's docstring)."""

    def __init__(self, first_job: int, read_bound: float = 15) -> None:
        self.next_job = first_job
        self.jobs: list[str] = []
        self.asked: list[list[str]] = []
        self.reads: list[float] = []      # seconds each read job took
        self.read_bound = read_bound      # the most a read may take here before it counts as a stall
        self.reason = ""                  # the node's drain reason
        self.sinfo_state = "idle+maintenance+reserved"

    def __call__(self, argv, timeout) -> Answer:
        argv = list(argv)
        self.asked.append(argv)
        if argv == ["scontrol", "-o", "show", "reservation"]:
            return Answer(0, HOLD_LINE, "")
        if argv == ["scontrol", "-o", "show", "job"]:
            return Answer(0, "\n".join(self.jobs) + "\n" if self.jobs else "No jobs in the system\n", "")
        if argv[0] == "sinfo":
            return Answer(0, self.listing(argv, [("all*", "infinite")]), "")
        if argv[:3] == ["scontrol", "show", "node"]:
            flags = "IDLE+DRAIN+MAINTENANCE+RESERVED" if self.reason else "IDLE+MAINTENANCE+RESERVED"
            return Answer(0, f"NodeName={NODE} State={flags} Reason={self.reason or '(null)'}\n", "")
        if argv[:2] == ["scontrol", "update"]:
            self.reason = next(a for a in argv if a.startswith("Reason=")).removeprefix("Reason=")
            return Answer(0, "", "")
        if argv[0] == "sbatch":
            return self._batch(argv)
        if argv[0] == "srun":
            return self._read(argv[argv.index("sh"):], timeout)
        if argv[0] == "scancel":
            return Answer(0, "", "")
        return Answer(1, "", f"not a command the gate runs: {argv}")

    def listing(self, argv: list[str], partitions: list) -> str:
        """sinfo -O's line per partition, of the fields its --Format= names."""
        fields = [f.removesuffix(":|") for f in argv[-1].removeprefix("--Format=").split(",")]
        state = "idle+drain+maintenance+reserved" if self.reason else self.sinfo_state
        lines = []
        for partition, limit in partitions:
            values = {"NodeList": NODE, "Partition": partition, "Time": limit, "StateComplete": state,
                      "StateLong": "drained" if self.reason else "maint", "Gres": "(null)", "GresUsed": "(null)",
                      "Reason": self.reason or "none"}
            lines.append("".join(f"{values[f]}|" for f in fields))
        return "\n".join(lines) + "\n"

    def _batch(self, argv: list[str]) -> Answer:
        job_id, self.next_job = self.next_job, self.next_job + 1
        options = dict(a.split("=", 1) for a in argv if a.startswith("--") and "=" in a)
        output = options.get("--output", f"slurm-{job_id}.out").replace("%j", str(job_id))
        try:  # as slurmstepd: root opens it, following a link; O_NONBLOCK: a FIFO without reader is refused
            fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK, 0o644)
        except OSError:
            fd = os.open(os.devnull, os.O_WRONLY)
        try:
            done = subprocess.run(["bash", argv[-1]], stdout=fd, stderr=fd, timeout=30,
                                  env={**os.environ, "SLURM_JOB_ID": str(job_id)})
        finally:
            os.close(fd)
        self.jobs.append(f"JobId={job_id} JobName={options['--job-name']} UserId=root(0) GroupId=root(0) "
                         f"JobState={'COMPLETED' if done.returncode == 0 else 'FAILED'} Reason=None "
                         f"ExitCode={done.returncode}:0 SubmitTime=2026-12-02T01:00:00 Partition=all "
                         f"Reservation=cf-gate-new-gpu01 NodeList={NODE} BatchHost={NODE}")
        return Answer(0, f"{job_id}\n", "")

    def _read(self, command: list[str], timeout: float) -> Answer:
        started = time.monotonic()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=min(timeout, self.read_bound))
        except subprocess.TimeoutExpired:
            self.reads.append(time.monotonic() - started)
            return Answer(124, "", "timed out")
        self.reads.append(time.monotonic() - started)
        return Answer(done.returncode, done.stdout, done.stderr)


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
    slurm_ = LocalSlurm(first)
    said: list[str] = []
    gate = Gate(Store(str(tmp_path / "state")), PLAN, slurm_, slow_script, admission_tests.judge,
                str(tmp_path / "scripts"), log=said.append)
    gate.runs_dir = str(tmp_path / "runs")  # on a node: slurm.RUNS_DIR, under /var/lib
    for _ in range(8):
        gate.one_pass()
        if slurm_.reason:
            break
    assert slurm_.reason.startswith("cf:gate:ib_write_bw:mlx5_0 190.02 Gb/s < 380"), (slurm_.reason, said)
    assert all(seconds < 5 for seconds in slurm_.reads), slurm_.reads  # no read waited on a FIFO
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


class FakeSlurm(LocalSlurm):
    """The same Slurm, answering sbatch as told instead of running the job."""

    def __init__(self, partitions: str = "all*|infinite", sbatch: Answer | None = None) -> None:
        super().__init__(1)
        self.partitions = [p.split("|") for p in partitions.split(",")]
        self.sbatch = sbatch or Answer(0, "1\n", "")

    def __call__(self, argv, timeout) -> Answer:
        argv = list(argv)
        if argv[0] == "sinfo":
            self.asked.append(argv)
            return Answer(0, self.listing(argv, self.partitions), "")
        if argv[0] == "sbatch":
            self.asked.append(argv)
            return self.sbatch
        return super().__call__(argv, timeout)


LONG = {**IB_TEST, "timeout": 44 * 60}  # prod's dcgm level 3 share: 44 minutes, 45 with Slurm's margin


def fake_gate(tmp_path: Path, slurm_: LocalSlurm, plan: dict | None = None, **settings) -> Gate:
    gate = Gate(Store(str(tmp_path / "state")), plan or {"nodes": {NODE: {"tests": [LONG]}}}, slurm_, slow_script,
                admission_tests.judge, str(tmp_path / "scripts"), log=lambda text: None)
    for key, value in settings.items():
        setattr(gate, key, value)
    return gate


def test_a_test_goes_only_to_the_partitions_whose_time_limit_lets_it_run(tmp_path):
    slurm_ = FakeSlurm("debug|30:00,batch*|1-00:00:00,long|infinite")
    fake_gate(tmp_path, slurm_).one_pass()
    [submitted] = [a for a in slurm_.asked if a[0] == "sbatch"]
    assert "--partition=batch,long" in submitted and "--time=45" in submitted
    assert slurm_.reason == ""


def test_a_test_no_partition_of_the_node_lets_run_drains_it_cannot_run_and_submits_nothing(tmp_path):
    slurm_ = FakeSlurm("debug|30:00")
    gate = fake_gate(tmp_path, slurm_)
    gate.one_pass()
    assert slurm_.reason == "cf:gate:cannot run: ib_write_bw needs 45 min, TimeLimit debug 30 min"
    assert not [a for a in slurm_.asked if a[0] == "sbatch"]
    gate.one_pass()  # drained by the gate: it waits for an admin, and asks nothing again
    assert not [a for a in slurm_.asked if a[0] == "sbatch"]


def test_a_test_sbatch_refuses_drains_the_node_cannot_run_with_slurms_reason(tmp_path):
    refused = Answer(1, "", "sbatch: error: Batch job submission failed: Requested time limit is invalid (missing "
                            "or exceeds some limit)\n")
    slurm_ = FakeSlurm(sbatch=refused)
    gate = fake_gate(tmp_path, slurm_)
    gate.one_pass()
    assert slurm_.reason == ("cf:gate:cannot run: ib_write_bw: sbatch: Requested time limit is invalid (missing or "
                             "exceeds some limit)")
    asked = len(slurm_.asked)
    gate.one_pass()
    assert not [a for a in slurm_.asked[asked:] if a[0] == "sbatch"]  # no retry every pass: an admin's now


def test_sbatch_that_cannot_reach_slurmctld_drains_nothing_and_tries_again(tmp_path):
    slurm_ = FakeSlurm(sbatch=Answer(1, "", "sbatch: error: Batch job submission failed: Unable to contact slurm "
                                            "controller (connect failure)\n"))
    slurm_.sbatch = Answer(1, "", "sbatch: error: slurm_persist_conn_open: Something happened\n")
    gate = fake_gate(tmp_path, slurm_)
    gate.one_pass()
    gate.one_pass()
    assert slurm_.reason == ""
    assert len([a for a in slurm_.asked if a[0] == "sbatch"]) == 2


def pending(job_id: int, reason: str, submitted: str) -> str:
    return (f"JobId={job_id} JobName=cf-gate:ib_write_bw UserId=root(0) GroupId=root(0) JobState=PENDING "
            f"Reason={reason} ExitCode=0:0 SubmitTime={submitted} Partition=all Reservation=cf-gate-new-gpu01 "
            "NodeList=(null)")


def test_a_test_pending_past_the_bound_is_cancelled_and_drains_the_node_cannot_run(tmp_path):
    slurm_ = FakeSlurm(sbatch=Answer(0, "3\n", ""))
    submitted = time.mktime(time.strptime("2026-12-02T01:00:00", "%Y-%m-%dT%H:%M:%S"))
    gate = fake_gate(tmp_path, slurm_, clock=lambda: submitted + 60)
    gate.one_pass()  # submitted as job 3, which waits
    slurm_.jobs = [pending(3, "ReqNodeNotAvail", "2026-12-02T01:00:00")]
    gate.one_pass()
    assert slurm_.reason == "" and not [a for a in slurm_.asked if a[0] == "scancel"]  # a minute: it waits
    gate.clock = lambda: submitted + 901
    gate.one_pass()
    assert ["scancel", "3"] in slurm_.asked
    assert slurm_.reason == "cf:gate:cannot run: ib_write_bw (job 3) pending ReqNodeNotAvail for 901 s"


def test_a_test_pending_for_a_limit_drains_at_once(tmp_path):
    slurm_ = FakeSlurm(sbatch=Answer(0, "3\n", ""))
    submitted = time.mktime(time.strptime("2026-12-02T01:00:00", "%Y-%m-%dT%H:%M:%S"))
    gate = fake_gate(tmp_path, slurm_, clock=lambda: submitted + 6)
    gate.one_pass()
    slurm_.jobs = [pending(3, "PartitionTimeLimit", "2026-12-02T01:00:00")]
    gate.one_pass()
    assert slurm_.reason == "cf:gate:cannot run: ib_write_bw (job 3) pending PartitionTimeLimit for 6 s"


ADMIN = "RMA: fan (admin)"


def test_the_gate_drains_on_the_nodes_state_read_again_just_before_never_over_an_admins_drain(tmp_path):
    """Issue 46, 8: the pass's sinfo says the node is idle in its hold; between that read and the gate's drain of
    its failed test, an admin drains it. Read again just before, the admin's reason stays."""
    class AdminMeanwhile(LocalSlurm):
        armed = False

        def __call__(self, argv, timeout):
            answer = super().__call__(argv, timeout)
            if self.armed and list(argv)[0] == "sinfo":
                self.reason, self.armed = ADMIN, False  # right after the pass read the node
            return answer

    first = 8_000_000 + os.getpid() % 100_000 * 10
    slurm_ = AdminMeanwhile(first)
    gate = fake_gate(tmp_path, slurm_, {"nodes": {NODE: {"tests": [IB_TEST]}}}, runs_dir=str(tmp_path / "runs"))
    try:
        gate.one_pass()  # submitted, and run here
        gate.one_pass()  # read and judged: 190.02 < 380
        slurm_.armed = True
        gate.one_pass()  # decided on a read the admin's drain followed
    finally:
        Path(f"/var/tmp/cf-gate-{first}.out").unlink(missing_ok=True)  # where today's gate had its output
    assert slurm_.reason == ADMIN
    assert not [a for a in slurm_.asked if a[:2] == ["scontrol", "update"]]


def test_a_job_named_as_the_gates_but_not_roots_is_not_the_gates(tmp_path):
    """Issue 46: a name is anyone's to choose. A job of another user named cf-gate:... in the hold's reservation is
    neither judged nor taken for the gate's running test."""
    slurm_ = LocalSlurm(1)
    slurm_.jobs = [f"JobId=1 JobName=cf-gate:ib_write_bw UserId=alice(2001) GroupId=alice(2001) JobState=COMPLETED "
                   "Reason=None ExitCode=0:0 Reservation=cf-gate-new-gpu01 NodeList=gpu01 BatchHost=gpu01"]
    assert slurm.parse_jobs("\n".join(slurm_.jobs)) == []


def test_the_pending_bound_is_the_gates_command_line_default_fifteen_minutes():
    from clusterforge.gate.main import arguments

    assert arguments([]).pending_bound == 900 and arguments(["--pending-bound", "60"]).pending_bound == 60
