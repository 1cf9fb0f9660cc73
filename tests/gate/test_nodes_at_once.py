"""Issue 50: a pass steps its held nodes at once (gate/passes.py, WORKERS at most), each node's own steps in their
order. One node after another, the reads of 48 nodes' outputs (an srun each, a second or more on a busy slurmctld)
took the pass 200 s on the test cluster. Proved without a clock: the reads of several nodes wait for each other
(a barrier), which only reads under way at once get past; one node after another, the first waits alone and its read
fails. Slurm here is its stand-in (tests/slurm_standin), one command at a time but for the job steps (srun), which
run on their nodes, beside slurmctld, as the real ones do; the gate's jobs run on this machine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from gate.held import by_admin
from slurm_standin import Runner, Slurm, shell

from clusterforge.admission.verdict import Result
from clusterforge.gate.passes import Gate
from clusterforge.gate.store import Round, Store
from clusterforge.slurm import commands, reservations
from clusterforge.slurm.commands import Answer

NODES = ["gpu01", "gpu02", "gpu03", "gpu04"]
PLAN = {"nodes": {node: {"tests": [{"name": "allreduce", "timeout": 60}]} for node in NODES}}
SCRIPT = "#!/bin/sh\necho 'busbw 480'\n"
# How long a read waits for the others before it gives up: a guard against a gate that never runs two at once, which
# would otherwise wait for ever; no figure of the gate's is held to it.
MEET_S = 20.0


@dataclass
class ReadsMeet(Runner):
    """Each read of a test's output (the gate's srun) waits until ``parties`` reads are under way at once; alone
    past MEET_S, it fails as srun does when it cannot run its step. ``most``: the most reads under way at once."""

    parties: int = 2
    most: int = 0
    _meeting: threading.Barrier = field(init=False, repr=False)
    _count: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _under_way: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        self._meeting = threading.Barrier(self.parties, timeout=MEET_S)

    def step(self, command: list[str]) -> Answer:
        with self._count:
            self._under_way += 1
            self.most = max(self.most, self._under_way)
        try:
            self._meeting.wait()
        except threading.BrokenBarrierError:
            return Answer(1, "", "srun: error: the read waited alone: no other read was under way\n")
        finally:
            with self._count:
                self._under_way -= 1
        return super().step(command)


def held_nodes(runner: Runner) -> Slurm:
    """NODES, idle, each held by the gate in its reservation (as the deploy holds new nodes)."""
    slurm = Slurm.of(NODES, runner=runner)
    for node in NODES:
        by_admin(slurm, *reservations.create_argv(reservations.name("new", node), node))
    return slurm


def judge(test: dict, node: str, output: str, exit_status: int) -> list[Result]:
    return [Result(node, test["name"], exit_status == 0 and "480" in output, detail=output.strip())]


def gate_on(tmp_path: Path, run, said: list[str], **settings) -> Gate:
    return Gate(Store(str(tmp_path / "state")), PLAN, run, lambda test, nodes: SCRIPT,
                settings.pop("judge", judge), str(tmp_path / "scripts"), log=said.append,
                runs_dir=str(tmp_path / "runs"), **settings)


def verdicts(tmp_path: Path) -> dict[str, bool]:
    """Each node's verdict of its test, by node: those whose read was judged, in the round it is still held in, or in
    its records once the gate decided (in the pass that read it: its last test)."""
    store = Store(str(tmp_path / "state"))
    found = {node: round_.results["allreduce"]["results"][0]["passed"]
             for node, round_ in store.held().items() if "allreduce" in round_.results}
    for node in NODES:
        found |= {node: record["passed"] for record in store.records(node) if record["test"] == "allreduce"}
    return found


def test_the_reads_of_several_held_nodes_run_at_once_and_each_verdict_arrives_in_that_pass(tmp_path):
    runner, said = ReadsMeet(parties=len(NODES)), []
    slurm = held_nodes(runner)
    gate = gate_on(tmp_path, slurm, said)
    gate.one_pass()  # each node's test submitted, and run here
    assert [a[0] for a in slurm.asked].count("sbatch") == len(NODES)
    gate.one_pass()  # each node's output read back, at once, and its last test's verdict decided on
    assert runner.most == len(NODES)
    assert verdicts(tmp_path) == dict.fromkeys(NODES, True), said
    assert not [line for line in said if "could not be read" in line]
    # Each node's own lines in its order, whatever the order across nodes.
    for node in NODES:
        mine = [line.split(" ", 2)[1] for line in said if line.startswith(f"{node}: ")]
        assert mine == ["held", "allreduce", "allreduce", "passed,"], said
    assert not slurm.reservations


def test_no_more_steps_run_at_once_than_the_gates_bound(tmp_path):
    runner, said = ReadsMeet(parties=2), []
    gate = gate_on(tmp_path, held_nodes(runner), said, workers=2)
    gate.one_pass()
    gate.one_pass()  # two reads at a time, each pair meeting
    assert runner.most == 2
    assert verdicts(tmp_path) == dict.fromkeys(NODES, True), said


def test_a_step_that_raises_ends_its_nodes_work_alone_and_then_the_pass(tmp_path):
    """A bug in one node's step (here its verdict raises) no longer leaves the nodes after it unstepped: theirs run
    to their end, then the pass raises as before (the program exits; systemd starts it again)."""
    def broken_for_gpu02(test: dict, node: str, output: str, exit_status: int) -> list[Result]:
        if node == "gpu02":
            raise RuntimeError("a verdict that raises")
        return judge(test, node, output, exit_status)

    said: list[str] = []
    gate = gate_on(tmp_path, held_nodes(Runner()), said, judge=broken_for_gpu02)
    gate.one_pass()
    with pytest.raises(RuntimeError, match="a verdict that raises"):
        gate.one_pass()
    assert verdicts(tmp_path) == {"gpu01": True, "gpu03": True, "gpu04": True}
    assert "gpu02: this pass's step failed: RuntimeError: a verdict that raises" in said


def test_sigterm_mid_pass_kills_every_steps_command_and_leaves_no_step_running_nor_acting_on_a_killed_answer(
        tmp_path):
    """As the gate program runs (main.py): SIGTERM raises SystemExit in the main thread while the steps' reads run.
    Each read here is a real command that would run a minute; the pass kills them and waits for every step, none of
    which keeps anything of a killed read (it would have discarded the node's test, to run it again)."""
    slurm, said, reads = held_nodes(Runner()), [], []

    def run(argv, timeout: float) -> Answer:
        if argv[0] != "srun":
            return slurm(argv, timeout)
        reads.append(commands.run(["sleep", "60"], timeout))
        return reads[-1]

    gate = gate_on(tmp_path, run, said, kill=commands.kill_all)
    gate.one_pass()
    seen: set[int] = set()

    def stop_once_all_read() -> None:
        deadline = time.monotonic() + MEET_S
        while len(commands._running) < len(NODES) and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.update(commands._running)
        os.kill(os.getpid(), signal.SIGTERM)

    def stop(signum: int, frame: object) -> None:  # main.py's
        raise SystemExit(0)

    before = signal.signal(signal.SIGTERM, stop)
    try:
        stopper = threading.Thread(target=stop_once_all_read)
        stopper.start()
        with pytest.raises(SystemExit):
            gate.one_pass()
        stopper.join()
    finally:
        signal.signal(signal.SIGTERM, before)
    assert len(seen) == len(NODES)  # every node's read was under way
    assert [a.rc for a in reads] == [-signal.SIGKILL] * len(NODES)  # each killed, none left to end by itself
    assert not commands._running
    assert not [t for t in threading.enumerate() if t.name.startswith("gate-step")]
    assert not [pid for pid in seen if Path(f"/proc/{pid}").exists()]  # killed and reaped
    rounds = Store(str(tmp_path / "state")).held()
    assert sorted(rounds) == NODES
    assert all(not r.results and not r.discarded for r in rounds.values()), rounds
    assert not [line for line in said if "could not be read" in line]


def test_the_benchmark_of_a_pass_runs():
    """benchmarks/gate_pass.py, small, so that it cannot rot: it fails where a pass leaves a node's read undone."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "gate_pass.py"
    done = subprocess.run([sys.executable, str(script), "--nodes", "2", "--command-s", "0"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert [line.split()[:2] for line in done.stdout.splitlines()[2:]] == [["2", "1"], ["2", "16"]], done.stdout


def test_the_gate_program_told_sigterm_while_its_reads_run_at_once_exits_and_leaves_none_running(tmp_path):
    """The program as systemd runs it (main.py), Slurm's commands the stand-in's but srun, which never answers: a
    read of a minute (an odd one, to be found among this machine's processes). Each node's test has ended (the
    gate's round kept from before), so the first pass reads the three at once; SIGTERM then ends the program, 0, with
    no read left running and none taken for a failure."""
    nodes, sleep = NODES[:3], "sleep 61.25"
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "srun").write_text(f"#!/bin/sh\nexec {sleep}\n")
    (fake / "srun").chmod(0o755)
    slurm, store = Slurm.of(nodes, runner=Runner(scripts=False)), Store(str(tmp_path / "state"))
    for node in nodes:
        hold = reservations.name("new", node)
        by_admin(slurm, *reservations.create_argv(hold, node))
        slurm.place("root", [node], 0, name="cf-gate:allreduce").options["reservation"] = hold
        store.save(node, Round(hold, "new"))
    slurm.advance(0)  # each test ended
    shell.save(slurm, tmp_path / "slurm")
    (tmp_path / "plan.json").write_text(json.dumps({"nodes": {n: PLAN["nodes"][n] for n in nodes}}))
    src = Path(__file__).resolve().parents[2] / "src"
    program = subprocess.Popen(
        [sys.executable, "-c", f"import sys; sys.path[:0] = [{str(src)!r}]; from clusterforge.gate.main import main; "
         "sys.exit(main(sys.argv[1:]))", "--plan", str(tmp_path / "plan.json"), "--state-dir", str(tmp_path / "state")],
        env={"PATH": f"{fake}:{shell.bin_dir(tmp_path / 'bin')}:/usr/bin:/bin", shell.STATE: str(tmp_path / "slurm")},
        stderr=subprocess.PIPE, text=True)

    def reads() -> list[str]:
        shown = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
        return [line for line in shown.splitlines() if line.strip() == sleep]

    try:
        deadline = time.monotonic() + MEET_S
        while len(reads()) < len(nodes) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(reads()) == len(nodes)  # the three at once
        program.send_signal(signal.SIGTERM)
        assert program.wait(timeout=MEET_S) == 0
    finally:
        program.kill()
    assert reads() == []
    assert program.stderr.read() == ""  # nothing said of a read that failed
    assert all(not r.results and not r.discarded for r in store.held().values())


def test_a_node_whose_test_was_judged_gets_its_next_test_in_that_pass_and_its_release_after_its_last(tmp_path):
    """A pass that judged a node's test takes the node's next step at once: its next test submitted, or after its
    last the decision. A pass later, each test cost a pass's time more (at 61 held nodes on the test cluster, a
    pass of reads took some 15 s): 4 tests, 4 passes."""
    said: list[str] = []
    slurm = Slurm.of(["gpu01"], runner=Runner())
    by_admin(slurm, *reservations.create_argv(reservations.name("new", "gpu01"), "gpu01"))
    tests = [{"name": "allreduce", "timeout": 60}, {"name": "nvbandwidth", "timeout": 60}]
    plan = {"nodes": {"gpu01": {"tests": tests}}}
    gate = Gate(Store(str(tmp_path / "state")), plan, slurm, lambda test, nodes: SCRIPT, judge,
                str(tmp_path / "scripts"), log=said.append, runs_dir=str(tmp_path / "runs"))
    gate.one_pass()  # allreduce submitted, and run here
    gate.one_pass()  # allreduce read and judged, nvbandwidth submitted
    assert [a[0] for a in slurm.asked].count("sbatch") == 2, said
    assert slurm.reservations, said
    gate.one_pass()  # nvbandwidth read and judged: passed, released
    assert not slurm.reservations, said
    assert [line.split(" ", 2)[1:] for line in said][-1][0] == "passed,", said
