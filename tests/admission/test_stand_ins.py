"""Each test's batch script, run by bash with the test cluster's stand-ins for the tools (testbed/accept/: the real
tools' formats, with the results a test sets per node) and a stand-in srun that runs the command on this machine
as a job step would: a healthy node passes every test, and each number made low, a failing DCGM test and a hung run
fail with the number or the reason. What the gate and `clusterforge accept` run on the test cluster, minus Slurm."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from pathlib import Path

import pytest

from clusterforge.admission import tests
from clusterforge.admission.tests import ib_write_bw

REPO = Path(__file__).resolve().parents[2]
ACCEPT = REPO / "testbed" / "accept"
NODE = "gpu07"
FLOORS = {"allreduce": 460, "allreduce_multi": 350, "ib_write_bw": 380, "host_to_device": 48, "device_to_device": 335}
STAND_IN_SRUN = """#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in --*) shift ;; *) break ;; esac; done
exec "$@"
"""


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setattr(ib_write_bw, "SERVER_START_S", 0.2)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "srun").write_text(STAND_IN_SRUN)
    (tmp_path / "bin" / "srun").chmod(0o755)
    entries = {e["name"]: e for e in tests.entries(
        tests.SINGLE_NODE, bin_dir=str(ACCEPT), image=None, gpus=8, hcas=("mlx5_0", "mlx5_4"), dcgm_level=1,
        floors=FLOORS, budget=600, ib_cuda=False)}
    results = tmp_path / "home" / ".clusterforge-testbed" / "accept.json"
    results.parent.mkdir(parents=True)
    jobs = itertools.count(1000)  # each call a job of its own, as Slurm numbers them

    def judged(name: str, values: dict | None = None, timeout: int | None = None) -> list:
        results.write_text(json.dumps({NODE: values or {}}))
        test = {**entries[name], **({"timeout": timeout} if timeout else {})}
        env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "SLURMD_NODENAME": NODE, "SLURM_JOB_ID": str(next(jobs)),
               "CLUSTERFORGE_TESTBED_ROOT": str(tmp_path)}
        done = subprocess.run(["bash", "-c", tests.job_script(test, [NODE])], capture_output=True, text=True,
                              env=env, timeout=60)
        return [(r.test, r.passed, r.reason) for r in tests.judge(test, NODE, done.stdout + done.stderr,
                                                                 done.returncode)]
    return judged


def test_a_healthy_node_passes_every_test(run):
    assert run("dcgm") == [("dcgm", True, "dcgm 1 tests passed")]
    assert run("nvbandwidth") == [("nvbandwidth:h2d", True, "nvbandwidth:h2d 55.64 GB/s >= 48"),
                                  ("nvbandwidth:d2h", True, "nvbandwidth:d2h 55.31 GB/s >= 48"),
                                  ("nvbandwidth:d2d_read", True, "nvbandwidth:d2d_read 376.43 GB/s >= 335")]
    assert run("allreduce") == [("allreduce", True, "allreduce 478.52 GB/s >= 460")]
    assert run("ib_write_bw") == [("ib_write_bw:mlx5_0", True, "ib_write_bw:mlx5_0 392.77 Gb/s >= 380"),
                                  ("ib_write_bw:mlx5_4", True, "ib_write_bw:mlx5_4 392.77 Gb/s >= 380")]


def test_each_low_number_fails_with_it(run):
    assert run("allreduce", {"allreduce": 300}) == [("allreduce", False, "allreduce 300 GB/s < 460")]
    assert run("ib_write_bw", {"hca": {"mlx5_4": 190}})[1] == ("ib_write_bw:mlx5_4", False,
                                                               "ib_write_bw:mlx5_4 190 Gb/s < 380")
    assert run("nvbandwidth", {"nvbandwidth": {"device_to_device_memcpy_read_ce": 250}})[2] == (
        "nvbandwidth:d2d_read", False, "nvbandwidth:d2d_read 250 GB/s < 335")


def test_dcgm_quick_runs_on_the_stand_in_and_fails_as_dcgm_does(run):
    assert run("dcgm_quick") == [("dcgm_quick", True, "dcgm_quick 1 tests passed")]
    [(name, passed, reason)] = run("dcgm_quick", {"dcgm": {"software": "Fail"}})
    assert (name, passed) == ("dcgm_quick", False) and reason.startswith("dcgm_quick software Fail (GPU0)")


def test_a_failing_dcgm_test_and_a_hung_run_fail(run):
    [(name, passed, reason)] = run("dcgm", {"dcgm": {"software": "Fail"}})
    assert (name, passed) == ("dcgm", False) and reason.startswith("dcgm software Fail (GPU0)")
    assert run("allreduce", {"hang": 600}, timeout=2) == [
        ("allreduce", False, "allreduce cut at its bound of 2 s (hung or too slow)")]


def test_an_intermittent_node_gives_each_run_its_value_and_the_last_to_every_later_one(run, tmp_path):
    intermittent = {"allreduce": [478.52, 300]}
    slow = (False, "allreduce 300 GB/s < 460")
    assert [run("allreduce", intermittent)[0][1:] for _ in range(3)] == [(True, "allreduce 478.52 GB/s >= 460"),
                                                                        slow, slow]
    assert len((tmp_path / "home" / ".clusterforge-testbed" / "runs" / NODE).read_text().split()) == 3
    # A test's mistake is never a healthy node: the stand-in fails (its message on stderr, which judge does not keep).
    assert [r[:2] for r in run("allreduce", {"allreduce": []})] == [("allreduce", False)]
