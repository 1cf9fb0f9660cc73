"""End to end: the acceptance tools' stand-ins (testbed/accept/) on the running test cluster, where the Vagrantfile binds
them into every GPU machine, run as the gate's and accept's jobs run them: through Slurm, on the nodes' GPUs, with
the results a test sets in the shared /home (/home/.clusterforge-testbed/accept.json), read by clusterforge's parsers.
What is real: Slurm's jobs, srun's ranks and environment, the shared /home; the tools are the stand-ins.

Then `clusterforge accept` itself, as an admin runs it from this machine through the controller, over the two GPU
nodes: the inventory with admission (CLUSTERFORGE_TESTBED_ADMISSION=on, which accept reads here; the cluster needs no
deploy for it: accept submits its own jobs), its records in a directory of the test's own (XDG_STATE_HOME)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess

import pytest
from e2e.testbed import MACHINES, REPO, Testbed

from clusterforge.admission.parse import dcgm, nccl
from clusterforge.admission import tests

# The test inventory's profile runs every test run by default.
SINGLE_NODE = tests.DEFAULT_SINGLE_NODE

pytestmark = pytest.mark.e2e

CTL = MACHINES["ctl"]
BIN = "/usr/local/lib/clusterforge-testbed/accept"
RESULTS = "/home/.clusterforge-testbed/accept.json"
RUNS = "/home/.clusterforge-testbed/runs"  # an intermittent node's count of its runs (testbed/accept/results.py)
NODES = ("gpu01", "gpu02")
ADMIN = "e2e: RMA fan, ticket 4711"


@pytest.fixture
def results(testbed):
    """The per-node results file, written for a test and removed after it."""

    def write(values: dict) -> None:
        testbed.run(CTL, f"mkdir -p /home/.clusterforge-testbed && rm -rf {RUNS} && "
                         f"printf '%s' {shlex.quote(json.dumps(values))} > {RESULTS}")

    yield write
    testbed.run(CTL, f"rm -rf {RESULTS} {RUNS}")


def test_all_reduce_perf_across_two_nodes_under_srun_is_held_to_the_slow_rail_nccl_may_use(testbed, results):
    results({"gpu02": {"hca": {"mlx5_4": 190}}})
    # 16 ranks over 2 nodes, overcommitted: a test machine has 2 CPUs for its 8 "GPUs" (NCCL's jobs run one rank a
    # GPU), and srun refuses --ntasks-per-node above a node's CPUs even with --overcommit.
    command = (f"srun --nodes=2 --nodelist=gpu01,gpu02 --ntasks=16 --overcommit --gpus-per-node=8 --time=2 "
               f"{BIN}/all_reduce_perf -b 16G -e 16G -g 1")
    every_rail = nccl.parse(testbed.run(CTL, command))
    assert every_rail.ranks == 16
    assert every_rail.rows[-1].busbw[0] == pytest.approx(8 * 190 / 8 * 0.96, abs=0.01)
    without = nccl.parse(testbed.run(CTL, f"NCCL_IB_HCA='^=mlx5_4' {command}"))
    assert without.rows[-1].busbw[0] == pytest.approx(7 * 392.77 / 8 * 0.96, abs=0.01)


def test_each_gpu_machine_has_the_stand_ins_and_a_job_reads_its_nodes_results(testbed, results):
    results({"gpu01": {"dcgm": {"pcie": "Fail"}}})
    for node in ("gpu01", "gpu02"):
        listed = testbed.run(MACHINES[node], f"ls {BIN}").split()
        assert {"all_reduce_perf", "dcgmi", "ib_write_bw", "nvbandwidth", "results.py"} <= set(listed)
    out = testbed.run(CTL, f"srun --nodes=1 --nodelist=gpu01 --gpus-per-node=8 --time=2 {BIN}/dcgmi diag -r 2 -j; "
                           "echo exit $?")
    text, _, status = out.rpartition("exit ")
    assert status.strip() == "226"
    assert {t.name: t.status for t in dcgm.parse(text).tests}["pcie"] == "Fail"


def accept(bed: Testbed, state: str, *args: str) -> subprocess.CompletedProcess[str]:
    # An earlier test's job may still be completing (its epilog): accept would leave that node alone, and say so.
    bed.run(CTL, "for i in $(seq 60); do squeue --noheader --states=all --format=%T | grep -q COMPLETING || "
                 "exit 0; sleep 1; done")
    return subprocess.run([str(REPO / ".venv" / "bin" / "clusterforge"), "accept", str(bed.inventory), *args],
                          cwd=REPO, env=bed.env(CLUSTERFORGE_TESTBED_ADMISSION="on", XDG_STATE_HOME=state),
                          text=True, capture_output=True, timeout=900)


def reason(bed: Testbed, node: str) -> str:
    said = bed.run(CTL, f"sinfo --noheader --Node --nodes={node} --format=%E | head -n 1").strip()
    return "" if said == "none" else said


def accept_jobs(bed: Testbed) -> str:
    return bed.run(CTL, "squeue --noheader --states=all --format=%j | grep '^cf-accept:'; true")


def records(state, node: str) -> list[dict]:
    path = state / "clusterforge" / "vagrant" / "records" / f"{node}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_accept_dry_run_prints_every_job_of_its_rounds_and_submits_nothing(testbed, results, tmp_path):
    results({})
    before = accept_jobs(testbed)
    done = accept(testbed, str(tmp_path), "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert f"round 1: single-node tests on 2 nodes: {2 * len(SINGLE_NODE)} jobs" in out, out
    assert "round 2: allreduce_multi across 1 leaf: 1 job" in out, out
    submits = [line.split() for line in out.splitlines() if line.lstrip().startswith("$ sbatch --parsable ")]
    for test in (*SINGLE_NODE, "allreduce_multi"):
        assert any(f"--job-name=cf-accept:{test}" in argv and "--partition=gpu" in argv
                   and any(re.fullmatch(r"--output=/var/lib/clusterforge/accept-runs/run-[0-9a-f]+/%j\.out", a)
                           for a in argv) for argv in submits), (test, out)
    for node in NODES:
        assert f"#SBATCH --nodelist={node}" in out, out
    # Across both nodes, one rank per GPU on machines of 2 CPUs: the total overcommitted (srun refuses more tasks a
    # node than its CPUs).
    assert "#SBATCH --nodelist=gpu01,gpu02" in out and "--ntasks=16 --overcommit --gpus-per-node=8" in out, out
    assert f"{BIN}/all_reduce_perf" in out and "nothing was submitted, reserved or drained" in out
    assert accept_jobs(testbed) == before
    assert not (tmp_path / "clusterforge").exists()


def test_accept_of_a_healthy_cluster_exits_0_and_keeps_each_nodes_results(testbed, results, tmp_path):
    results({})
    done = accept(testbed, str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    runs = 2 * len(SINGLE_NODE)
    assert f"round 1: single-node tests on 2 nodes: {runs} runs, {runs} passed" in done.stdout, done.stdout
    assert "round 2: allreduce_multi across 1 leaf: 1 run, 1 passed" in done.stdout, done.stdout
    for node in NODES:
        kept = records(tmp_path, node)
        assert kept and all(r["passed"] and r["source"] == "accept" for r in kept), kept
        assert {r["test"].split(":")[0] for r in kept} == {*SINGLE_NODE, "allreduce_multi"}, kept
        assert [r["group"] for r in kept if r["test"] == "allreduce_multi"] == ["gpu01+gpu02"], kept
        assert reason(testbed, node) == ""


def test_accept_names_and_drains_a_slow_node_with_its_number_and_leaves_an_admins_drain(testbed, results, tmp_path):
    results({"gpu02": {"allreduce": 300}})
    testbed.run(CTL, f"scontrol update NodeName=gpu01 State=DRAIN Reason={shlex.quote(ADMIN)}")
    try:
        done = accept(testbed, str(tmp_path))
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"gpu01 left alone: drained, {ADMIN!r}" in done.stdout, done.stdout
        assert "gpu02 drained: 'cf:accept:allreduce 300 GB/s < 460'" in done.stdout, done.stdout
        assert reason(testbed, "gpu02") == "cf:accept:allreduce 300 GB/s < 460"
        assert reason(testbed, "gpu01") == ADMIN
        kept = records(tmp_path, "gpu02")
        # Its run and the confirming one, alone, before the drain: slow both times.
        assert [(r["passed"], r["value"]) for r in kept if r["test"] == "allreduce"] == [(False, 300)] * 2, kept
        assert not (tmp_path / "clusterforge" / "vagrant" / "records" / "gpu01.jsonl").exists()
    finally:
        testbed.run(CTL, "scontrol update NodeName=gpu01 State=RESUME; scontrol update NodeName=gpu02 State=RESUME; "
                         "true")


def test_accept_runs_a_node_failing_once_again_alone_and_reports_it_flaky_with_both_numbers_draining_none(
        testbed, results, tmp_path):
    """Issue 46: gpu02's all_reduce is slow in its first run only (an intermittent node: testbed/accept/results.py
    counts its runs). Before, one slow run drained it; now it runs again alone, passes, and is reported flaky with both
    numbers, and no node is drained. (The other half, an intermittent node padding a healthy node's half of a
    bisection, needs three nodes or more: tests/realslurm/test_accept_eight.py runs it on real Slurm 26.05.)"""
    results({"gpu02": {"allreduce": [300, 478.52]}})
    done = accept(testbed, str(tmp_path))
    print(done.stdout)
    assert "allreduce flaky: 300 GB/s < 460 (gpu02), then 478.52 GB/s >= 460 (gpu02)" in done.stdout, done.stdout
    assert "gpu02 failed allreduce alone, passed alone: flaky, not drained" in done.stdout, done.stdout
    for node in NODES:
        assert reason(testbed, node) == "", node
    kept = records(tmp_path, "gpu02")
    assert [(r["passed"], r["value"]) for r in kept if r["test"] == "allreduce"] == [(False, 300), (True, 478.52)]
