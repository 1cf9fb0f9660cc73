"""Each test's batch script and the judging of its output: a number below its floor fails with the number, output
nobody can read fails, a run cut at its bound fails, an exit status the tool gives a failure fails whatever the
output says; the ib_write_bw script, run by bash with a stand-in srun, gives each HCA its own result."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from clusterforge.admission import tests
from clusterforge.admission.tests import ib_write_bw
from clusterforge.admission.tests import MARK, entries, job_script, judge

CAPTURES = Path(__file__).parent / "captures"
FLOORS = {"allreduce": 460.0, "allreduce_multi": 350.0, "ib_write_bw": 380.0, "host_to_device": 48.0,
          "device_to_device": 335.0}


def plan(bin_dir: str | None = "/opt/t", image: str | None = None, gpus: int = 8, **kwargs) -> dict[str, dict]:
    made = entries(tests.DEFAULT, bin_dir=bin_dir, image=image, gpus=gpus, hcas=("mlx5_0", "mlx5_1"),
                   dcgm_level=kwargs.get("dcgm_level", 2), floors=FLOORS, budget=kwargs.get("budget", 1800),
                   ib_cuda=kwargs.get("ib_cuda", True))
    assert json.loads(json.dumps(made)) == made  # admission.json holds them as they are
    return {e["name"]: e for e in made}


# -- the entries and the scripts ----------------------------------------------------------------------------------


def test_each_test_gets_its_share_of_the_budget_by_the_time_it_takes():
    found = plan(budget=1800)
    # dcgm level 2 300 s, nvbandwidth 120, allreduce 120, ib_write_bw 30 per HCA: 600 s on a healthy node
    assert {n: e["timeout"] for n, e in found.items()} == {
        "dcgm": 900, "nvbandwidth": 360, "allreduce": 360, "ib_write_bw": 180, "allreduce_multi": 600}
    assert found["dcgm"]["argv"] == ["/opt/t/dcgmi", "diag", "-r", "2", "-j"]
    assert found["nvbandwidth"]["floors"] == {"device_to_device": 335.0, "host_to_device": 48.0}
    assert found["dcgm"]["floors"] == {}


def test_single_node_allreduce_runs_one_task_over_every_gpu_under_a_bound():
    script = job_script(plan()["allreduce"], ["gpu03"])
    assert script.splitlines()[:6] == ["#!/bin/bash", "#SBATCH --nodes=1", "#SBATCH --nodelist=gpu03",
                                       "#SBATCH --exclusive", "#SBATCH --time=7", "#SBATCH --gpus-per-node=8"]
    assert script.splitlines()[-1] == ("timeout --kill-after=10 360 srun --nodes=1 --ntasks=1 --gpus-per-node=8 "
                                       "/opt/t/all_reduce_perf -b 16G -e 16G -g 8")


def test_multi_node_allreduce_runs_a_task_per_gpu_with_the_ring_algorithm():
    script = job_script(plan()["allreduce_multi"], ["gpu01", "gpu02"])
    assert "#SBATCH --nodelist=gpu01,gpu02" in script
    assert "export NCCL_ALGO=Ring" in script
    assert script.splitlines()[-1].endswith("srun --nodes=2 --ntasks-per-node=8 --gpus-per-task=1 "
                                            "/opt/t/all_reduce_perf -b 16G -e 16G -g 1")


def test_multi_node_allreduce_keeps_a_rank_per_gpu_on_a_node_with_fewer_cpus_than_gpus():
    made = entries(("allreduce_multi",), bin_dir="/opt/t", image=None, gpus=8, hcas=(), dcgm_level=2,
                   floors=FLOORS, budget=1800, ib_cuda=True, cpus=2)
    assert made[0]["cpus"] == 2
    last = job_script(made[0], ["gpu01", "gpu02", "gpu03"]).splitlines()[-1]
    # srun refuses --ntasks-per-node=8 on a 2-CPU node, even overcommitted: the total, overcommitted.
    assert "--ntasks=24 --overcommit --gpus-per-node=8 /opt/t/all_reduce_perf" in last
    assert "--ntasks-per-node" not in last and "--gpus-per-task" not in last


@pytest.mark.parametrize("cpus", [8, 224, None], ids=["as-many-cpus-as-gpus", "h100-node", "cpus-not-known"])
def test_multi_node_allreduce_asks_a_task_per_gpu_per_node_where_the_node_has_the_cpus(cpus):
    made = entries(("allreduce_multi",), bin_dir="/opt/t", image=None, gpus=8, hcas=(), dcgm_level=2,
                   floors=FLOORS, budget=1800, ib_cuda=True, cpus=cpus)
    assert made[0].get("cpus") == cpus
    assert job_script(made[0], ["gpu01", "gpu02"]) == job_script(plan()["allreduce_multi"], ["gpu01", "gpu02"])
    assert "--ntasks-per-node=8 --gpus-per-task=1" in job_script(made[0], ["gpu01", "gpu02"])


def test_an_image_runs_through_pyxis():
    script = job_script(plan(bin_dir=None, image="nvcr.io#nvidia/hpc-benchmarks:24.03")["nvbandwidth"], ["gpu03"])
    assert script.splitlines()[-1].endswith(
        "srun --nodes=1 '--container-image=nvcr.io#nvidia/hpc-benchmarks:24.03' --ntasks=1 --gpus-per-node=8 "
        "nvbandwidth -t host_to_device_memcpy_ce device_to_host_memcpy_ce device_to_device_memcpy_read_ce")


def test_a_single_node_test_refuses_several_nodes_and_an_unknown_test_is_refused():
    with pytest.raises(ValueError, match="runs on one node, given 2"):
        job_script(plan()["dcgm"], ["gpu01", "gpu02"])
    with pytest.raises(ValueError, match="unknown test 'hpl'"):
        job_script({**plan()["dcgm"], "name": "hpl"}, ["gpu01"])


STAND_IN_SRUN = """#!/bin/sh
# srun as the batch step runs it on one node: its options, then the command, run in its place.
while [ $# -gt 0 ]; do case "$1" in --*) shift ;; *) break ;; esac; done
exec "$@"
"""
# ib_write_bw as perftest prints it: the server (no host argument) its box and table, the client its table; a
# device named in SLOW averages 190 Gb/s, one in BROKEN fails as perftest does (exit 1, an error on stderr).
STAND_IN_IB_WRITE_BW = """#!/bin/sh
dev=; host=
while [ $# -gt 0 ]; do case "$1" in -d) dev=$2; shift 2 ;; -s|-p) shift 2 ;; -*) shift ;; *) host=$1; shift ;; esac
done
echo "ib_write_bw $*" >/dev/null
case " $BROKEN " in *" $dev "*) echo " Couldn't get device attributes" >&2; exit 1 ;; esac
bw=391.37; case " $SLOW " in *" $dev "*) bw=190.02 ;; esac
[ -n "$host" ] || printf '%s\\n' '************************************' '* Waiting for client to connect... *' \
    '************************************'
printf '%s\\n' '---------------------------------------------------------------------------------------' \
    '                    RDMA_Write BW Test' " Device         : $dev" \
    '---------------------------------------------------------------------------------------' \
    ' #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]'
printf ' %-7s    %-10s       %-7.2f            %-7.2f\\t\\t     %-7.6f\\n' 8388608 5000 "$bw" "$bw" 0.005832
echo '---------------------------------------------------------------------------------------'
"""


@pytest.fixture(autouse=True)
def _server_starts_at_once(monkeypatch):
    monkeypatch.setattr(ib_write_bw, "SERVER_START_S", 0.2)  # the stand-in server is up at once


def _run(script: str, tmp_path: Path, **env: str) -> tuple[str, int]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("srun", STAND_IN_SRUN), ("ib_write_bw", STAND_IN_IB_WRITE_BW)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLOW": "", "BROKEN": "",
                               **env})
    return done.stdout + done.stderr, done.returncode


def test_ib_write_bw_runs_server_and_client_per_hca_and_each_hca_is_judged(tmp_path):
    test = {**plan(bin_dir=None)["ib_write_bw"], "timeout": 30}
    script = job_script(test, ["gpu03"])
    assert "ib_write_bw -s 8388608 -F --report_gbits -d mlx5_1 -p 18516 --use_cuda=1 localhost" in script
    output, status = _run(script, tmp_path, SLOW="mlx5_1")
    assert status == 0
    results = judge(test, "gpu03", output, status)
    assert [(r.test, r.passed, r.value) for r in results] == [
        ("ib_write_bw:mlx5_0", True, 391.37), ("ib_write_bw:mlx5_1", False, 190.02)]
    assert results[1].reason == "ib_write_bw:mlx5_1 190.02 Gb/s < 380"


def test_an_hca_whose_test_fails_fails_with_what_perftest_said(tmp_path):
    test = {**plan(bin_dir=None)["ib_write_bw"], "timeout": 30}
    output, status = _run(job_script(test, ["gpu03"]), tmp_path, BROKEN="mlx5_0")
    assert status == 1
    results = judge(test, "gpu03", output, status)
    assert [(r.passed, r.detail) for r in results] == [
        (False, "exit status 1: Couldn't get device attributes"), (True, "BW average at 8388608 B")]


def test_an_hca_the_output_never_reached_fails():
    test = plan()["ib_write_bw"]
    output = f"{MARK} mlx5_0\n"
    assert [r.detail for r in judge(test, "gpu03", output, 0)] == [
        "no result: the run ended before this HCA's test did"] * 2


# -- judging ------------------------------------------------------------------------------------------------------


def _allreduce_output(busbw: str = "476.21", ranks: int = 8) -> str:
    """all_reduce_perf's table as the captured H100 run prints it, for one 16 GiB row (the capture's last row is
    8 GiB: its columns, widened as getFloatStr widens them)."""
    text = (CAPTURES / "nccl/h100-2nodes-16ranks.txt").read_text()
    head = text[:text.index("#       size")]
    devices = [line for line in head.splitlines(True) if "Rank" in line][:ranks]
    keep = [line for line in head.splitlines(True) if "Rank" not in line]
    head = "".join(keep[:3] + devices + keep[3:])
    table = text[text.index("#       size"):text.index("           8             2")]
    row = (f" 17179869184    4294967296     float     sum      -1    63135  272.11  {busbw}      0    63201  "
           f"271.83  {busbw}      0\n")
    return head + table + row + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 476.02 \n"


def test_allreduce_holds_the_16_gib_row_to_the_floor():
    test = plan()["allreduce"]
    passed = judge(test, "gpu03", _allreduce_output("476.21"), 0)
    assert [(r.passed, r.value, r.floor) for r in passed] == [(True, 476.21, 460.0)]
    failed = judge(test, "gpu03", _allreduce_output("402.00"), 0)[0]
    assert not failed.passed and failed.reason == "allreduce 402 GB/s < 460"


def test_allreduce_on_fewer_gpus_than_the_profile_has_fails():
    result = judge(plan()["allreduce"], "gpu03", _allreduce_output(ranks=4), 0)[0]
    assert not result.passed and result.detail == "ran on 4 GPUs where 8 were asked for"


def test_allreduce_without_the_16_gib_row_is_unreadable():
    result = judge(plan()["allreduce"], "gpu03", (CAPTURES / "nccl/h100-2nodes-16ranks.txt").read_text(), 0)[0]
    assert not result.passed and result.detail.startswith("unreadable output: no row of 17179869184 bytes")


def test_allreduce_multi_holds_the_largest_row_of_the_captured_two_node_run():
    test = {**plan()["allreduce_multi"], "ranks": 16}
    result = judge(test, "gpu01", (CAPTURES / "nccl/h100-2nodes-16ranks.txt").read_text(), 0)[0]
    assert (result.passed, result.value, result.reason) == (False, 337.35, "allreduce_multi 337.35 GB/s < 350")


def test_an_nccl_failure_status_fails_whatever_the_table_says():
    result = judge(plan()["allreduce"], "gpu03", _allreduce_output(), 7)[0]
    assert not result.passed and result.detail == "exit status 7 (wrong results)"
    cut = judge(plan()["allreduce"], "gpu03", "# nThread 1 nGpus 8\n", 3)[0]
    assert cut.detail.startswith("unreadable output: no nccl-tests results table") and "(NCCL error)" in cut.detail


@pytest.mark.parametrize("status", [124, 137])
def test_a_run_cut_at_its_bound_fails(status):
    result = judge(plan()["allreduce"], "gpu03", _allreduce_output(), status)[0]
    assert not result.passed and result.detail == "cut at its bound of 360 s (hung or too slow)"


def test_dcgm_passes_on_a_real_pass_and_fails_on_any_test_not_passed():
    text = (CAPTURES / "dcgm/4.4.2-r2-pass.txt").read_text()
    passed = judge(plan()["dcgm"], "gpu03", text, 0)[0]
    assert passed.passed and passed.detail == "3 tests passed"
    failing = text.replace("| pcie                      | Pass ", "| pcie                      | Warn ").replace(
        "|                           | GPU0: Pass                                     |\n+-----------",
        "|                           | GPU0: Warn                                     |\n+-----------")
    failed = judge(plan()["dcgm"], "gpu03", failing, 226)[0]
    assert not failed.passed and failed.reason == "dcgm pcie Warn (GPU0)"


def test_dcgm_status_decides_where_every_result_reads_pass():
    text = (CAPTURES / "dcgm/3.3.3-r2-pass.txt").read_text()
    result = judge(plan()["dcgm"], "gpu03", text, 205)[0]
    assert not result.passed and result.detail == "exit status 205 (an error of isolate priority: take the GPU out)"


def test_dcgm_quick_runs_level_1_whatever_the_level_asked_and_is_judged_as_dcgm_under_its_own_name():
    [quick] = entries(("dcgm_quick",), bin_dir="/opt/t", image=None, gpus=8, hcas=(), dcgm_level=4, floors=FLOORS,
                      budget=600, ib_cuda=False)
    assert quick["argv"] == ["/opt/t/dcgmi", "diag", "-r", "1", "-j"] and quick["floors"] == {}
    assert quick["timeout"] == 600  # alone, the whole budget
    assert job_script(quick, ["gpu03"]).splitlines()[-1] == (
        "timeout --kill-after=10 600 srun --nodes=1 --ntasks=1 --gpus-per-node=8 /opt/t/dcgmi diag -r 1 -j")
    text = (CAPTURES / "dcgm/4.4.2-r2-pass.txt").read_text()
    assert judge(quick, "gpu03", text, 0)[0].reason == "dcgm_quick 3 tests passed"
    assert judge(quick, "gpu03", "", 235)[0].reason.startswith("dcgm_quick unreadable output: ")
    # Not run unless named: the default tests, and so every plan that names none, are as before it came.
    assert "dcgm_quick" in tests.TESTS and "dcgm_quick" not in tests.DEFAULT


def test_the_registry_is_the_one_list_of_tests_and_their_floors():
    assert tests.TESTS == ("dcgm", "nvbandwidth", "allreduce", "ib_write_bw", "allreduce_multi", "dcgm_quick")
    assert tests.SINGLE_NODE == ("dcgm", "nvbandwidth", "allreduce", "ib_write_bw", "dcgm_quick")
    assert tests.FLOORS_OF == {"dcgm": (), "nvbandwidth": ("host_to_device", "device_to_device"),
                               "allreduce": ("allreduce",), "ib_write_bw": ("ib_write_bw",),
                               "allreduce_multi": ("allreduce_multi",), "dcgm_quick": ()}
    assert {floor.key for floor in tests.FLOORS} == set(FLOORS)
    assert all(test.name == name for name, test in tests.REGISTRY.items())


def test_dcgm_that_could_not_run_or_printed_nothing_fails():
    error = judge(plan()["dcgm"], "gpu03", '{"DCGM Diagnostic": {"runtime_error": "Host engine down"}}', 235)[0]
    assert not error.passed and error.detail == "could not run: Host engine down"
    empty = judge(plan()["dcgm"], "gpu03", "", 235)[0]
    assert not empty.passed and empty.detail.endswith("exit status 235 (no connection to the host engine "
                                                      "(nv-hostengine))")


def test_nvbandwidth_holds_every_cell_and_names_the_lowest():
    text = (CAPTURES / "nvbandwidth/rtx4090-v0.2-h2d-d2h.txt").read_text()
    results = judge(plan()["nvbandwidth"], "gpu03", text, 0)
    assert [(r.test, r.passed, r.value) for r in results] == [
        ("nvbandwidth:h2d", False, 23.90), ("nvbandwidth:d2h", False, 26.25), ("nvbandwidth:d2d_read", False, None)]
    assert results[0].reason == "nvbandwidth:h2d 23.9 GB/s < 48"
    assert results[0].detail == "host_to_device_memcpy_ce lowest CPU0->GPU2, SUM 205.04"
    assert results[2].detail == "device_to_device_memcpy_read_ce not run (waived?)"


def test_nvbandwidth_that_died_in_a_test_fails_with_its_words():
    text = (CAPTURES / "nvbandwidth/a100-v0.7-d2d-read-assert.txt").read_text()
    results = judge(plan()["nvbandwidth"], "gpu03", text, 0)
    assert results[2].detail.startswith("device_to_device_memcpy_read_ce Error: Invalid value when checking")
    assert judge(plan()["nvbandwidth"], "gpu03", text, 1)[0].detail == "exit status 1"


def test_output_of_another_program_never_passes():
    nccl = (CAPTURES / "nccl/h100-2nodes-16ranks.txt").read_text()
    for name in ("dcgm", "nvbandwidth"):
        assert not any(r.passed for r in judge(plan()[name], "gpu03", nccl, 0))
    assert not any(r.passed for r in judge(plan()["allreduce"], "gpu03", "Hello\n", 0))
    assert not any(r.passed for r in judge(plan()["ib_write_bw"], "gpu03", nccl, 0))


def test_ib_write_bw_whose_job_failed_passes_no_hca_whatever_its_output_says(tmp_path):
    """Issue 46: the verdict needs the job's exit status as well as its output. Output that shows every HCA passing
    beside a job that failed (a planted file, a run cut short) passes nothing."""
    test = {**plan(bin_dir=None)["ib_write_bw"], "timeout": 30}
    output, status = _run(job_script(test, ["gpu03"]), tmp_path)
    assert status == 0 and [r.passed for r in judge(test, "gpu03", output, status)] == [True, True]
    failed = judge(test, "gpu03", output, 1)  # the same text, from a job slurmctld recorded as failed
    assert [r.passed for r in failed] == [False, False]
    assert failed[0].reason == "ib_write_bw:mlx5_0 exit status 1, though its output reads 391.37 Gb/s >= 380"
