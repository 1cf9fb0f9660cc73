"""The Slurm exporter as the controller runs it: the one file the deploy ships (render/programs.py), alone in a
directory, started by Debian's python3 in isolated mode, which sees Debian's python3-prometheus-client and not this
virtualenv (so an import of anything else from clusterforge, or of a package the controller lacks, fails here).

Stand-ins for sinfo, squeue, sdiag and sacctmgr on PATH print the real captures (captures/README.md), and only for
the command line the exporter must run; a test makes one hang or fail. The output is read with prometheus_client's
own parser and its values checked exactly.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from exporter.controller import CAPTURES, PYTHON, Controller, of, samples  # tests/ is on pythonpath
from needs import skip_or_fail
from ports import free_port

APT_PACKAGES = Path(__file__).with_name("apt-packages.txt")
HANGS = 'echo $$ > "$STATE/{name}.pid"; exec sleep 60'
DBD_DOWN = 'cat "$CAPTURES/sacctmgr-dbd-down.stderr" >&2; exit 1'
CTLD_DOWN = 'echo "{name}: error: Unable to contact slurm controller (connect failure)" >&2; exit 1'


@pytest.fixture(scope="module")
def debian_python():
    probe = subprocess.run([PYTHON, "-I", "-c", "import prometheus_client"], capture_output=True, text=True)
    if probe.returncode != 0:
        skip_or_fail(f"{PYTHON} lacks prometheus_client: apt-get install {APT_PACKAGES.read_text().strip()}")
    # What makes the test mean something: that python cannot reach clusterforge but through the copied files.
    assert subprocess.run([PYTHON, "-I", "-c", "import clusterforge"], capture_output=True).returncode != 0
    return PYTHON


def controller(tmp_path: Path, release: str) -> Controller:
    return Controller(tmp_path, CAPTURES / release)


@pytest.mark.parametrize("release", ["22.05", "24.11"])
def test_one_scrape_of_the_captured_cluster(debian_python, tmp_path, release):
    result, found = controller(tmp_path, release).once()

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert of(found, "slurm_slurmctld_up") == {(): 1}
    assert of(found, "slurm_slurmdbd_up") == {(): 1}
    # labels in sorted order of their names: (node, state), (node, owner, reason), (partition, state), ...
    assert of(found, "slurm_node_state") == {
        ("cpu1", "allocated"): 1, ("cpu2", "unknown*"): 1, ("cpu3", "reboot^"): 1, ("cpu4", "idle"): 1,
        ("gpu1", "mixed"): 1, ("gpu2", "draining"): 1, ("gpu3", "drained"): 1, ("gpu4", "down*"): 1}
    assert of(found, "slurm_node_usable") == {
        ("cpu1",): 1, ("cpu2",): 0, ("cpu3",): 0, ("cpu4",): 1, ("gpu1",): 1, ("gpu2",): 0, ("gpu3",): 0,
        ("gpu4",): 0}
    assert of(found, "slurm_node_drain_info") == {
        ("gpu2", "clusterforge", "cf:gpu:xid79 gpu1 0000:9b:00.0"): 1,
        ("gpu3", "other", "bad DIMM B2 | ticket OPS-4711, ask Anna"): 1}
    assert of(found, "slurm_node_gpus") == {
        ("gpu1", "alloc"): 3, ("gpu1", "total"): 4, ("gpu2", "alloc"): 1, ("gpu2", "total"): 4,
        ("gpu3", "alloc"): 0, ("gpu3", "total"): 4, ("gpu4", "alloc"): 0, ("gpu4", "total"): 4}
    assert of(found, "slurm_partition_nodes") == {
        ("all", "total"): 8, ("all", "usable"): 3, ("cpu", "total"): 4, ("cpu", "usable"): 2,
        ("gpu", "total"): 4, ("gpu", "usable"): 1}
    assert of(found, "slurm_partition_gpus") == {
        ("all", "total"): 16, ("all", "alloc"): 4, ("all", "idle"): 1,   # idle: gpu1's one, on a usable node
        ("cpu", "total"): 0, ("cpu", "alloc"): 0, ("cpu", "idle"): 0,
        ("gpu", "total"): 16, ("gpu", "alloc"): 4, ("gpu", "idle"): 1}
    assert of(found, "slurm_jobs") == {
        ("chemistry", "all", "pending"): 1, ("chemistry", "cpu", "running"): 1,
        ("chemistry", "gpu", "pending"): 1, ("chemistry", "gpu", "running"): 1,
        ("physics", "cpu", "pending"): 1, ("physics", "gpu", "pending"): 3, ("physics", "gpu", "running"): 1}
    assert of(found, "slurm_jobs_pending") == {
        ("all", "BeginTime"): 1, ("cpu", "JobHeldUser"): 1, ("gpu", "Priority"): 1, ("gpu", "Resources"): 3}
    threads, last = {"22.05": (3, 96e-6), "24.11": (1, 114e-6)}[release]
    assert of(found, "slurm_scheduler_threads") == {(): threads}
    assert of(found, "slurm_scheduler_last_cycle_seconds") == {(): pytest.approx(last)}
    assert of(found, "slurm_scheduler_agent_queue_size") == {(): 0}
    assert set(of(found, "slurm_scheduler_mean_cycle_seconds")) == {()}
    assert set(of(found, "slurm_scheduler_backfill_last_cycle_seconds")) == {()}
    # The admission gate's holds, not an admin's maintenance reservation (firmware, on cpu1).
    assert of(found, "slurm_node_gate_held") == {("new", "cpu4", "cf-gate-new-cpu4"): 1,
                                                 ("repaired", "gpu3", "cf-gate-repaired-gpu3"): 1}
    assert of(found, "slurm_exporter_command_ok") == {("sacctmgr",): 1, ("scontrol",): 1, ("sdiag",): 1,
                                                      ("sinfo",): 1, ("squeue",): 1}
    seconds = of(found, "slurm_exporter_command_seconds")
    assert set(seconds) == {("sacctmgr",), ("scontrol",), ("sdiag",), ("sinfo",), ("squeue",)}
    assert all(0 < s < 10 for s in seconds.values())


def test_the_same_slurm_state_gives_the_same_text(debian_python, tmp_path):
    shipped = controller(tmp_path, "24.11")

    def text() -> list[str]:
        out = shipped.once()[0].stdout
        return [line for line in out.splitlines() if not line.startswith("slurm_exporter_command_seconds{")]

    assert text() == text()


def test_a_command_that_hangs_is_cut_at_the_timeout_and_the_rest_is_reported(debian_python, tmp_path):
    shipped = controller(tmp_path, "22.05")
    shipped.answer("sinfo", HANGS)

    start = time.monotonic()
    result, found = shipped.once("--timeout", "1")
    elapsed = time.monotonic() - start

    assert elapsed < 5, "the scrape waits the timeout, not for the command"
    assert result.returncode == 1
    assert "sinfo --noheader --all --Node --Format=" in result.stderr and "gave no answer in 1 s" in result.stderr
    assert of(found, "slurm_exporter_command_ok") == {("sacctmgr",): 1, ("scontrol",): 1, ("sdiag",): 1,
                                                      ("sinfo",): 0, ("squeue",): 1}
    assert 1 <= of(found, "slurm_exporter_command_seconds")[("sinfo",)] < 3
    assert of(found, "slurm_slurmctld_up") == {(): 1}  # squeue and sdiag answered
    for name in ("slurm_node_state", "slurm_node_usable", "slurm_partition_nodes", "slurm_partition_gpus"):
        assert of(found, name) == {}, name
    assert of(found, "slurm_jobs_pending")[("gpu", "Resources")] == 3
    assert of(found, "slurm_scheduler_threads") == {(): 3}
    hung = int((shipped.state / "sinfo.pid").read_text())
    assert not Path(f"/proc/{hung}").exists(), "the hung command was killed"


def test_slurmdbd_down(debian_python, tmp_path):
    shipped = controller(tmp_path, "24.11")
    shipped.answer("sacctmgr", DBD_DOWN)

    result, found = shipped.once()

    assert result.returncode == 1
    assert "Connection refused" in result.stderr
    assert of(found, "slurm_slurmdbd_up") == {(): 0}
    assert of(found, "slurm_slurmctld_up") == {(): 1}
    assert of(found, "slurm_exporter_command_ok")[("sacctmgr",)] == 0
    assert of(found, "slurm_node_state")[("gpu3", "drained")] == 1


def test_slurmctld_down(debian_python, tmp_path):
    shipped = controller(tmp_path, "24.11")
    for name in ("sinfo", "squeue", "sdiag", "scontrol"):
        shipped.answer(name, CTLD_DOWN)

    result, found = shipped.once()

    assert result.returncode == 1
    assert of(found, "slurm_slurmctld_up") == {(): 0}
    assert of(found, "slurm_slurmdbd_up") == {(): 1}
    assert {name for name, _ in found} == {"slurm_slurmctld_up", "slurm_slurmdbd_up",
                                           "slurm_exporter_command_seconds", "slurm_exporter_command_ok"}


def test_lines_and_figures_it_cannot_read_are_skipped_not_guessed(debian_python, tmp_path):
    shipped = controller(tmp_path, "22.05")
    shipped.answer("sinfo", "printf 'gpu1|gpu*|infinite|idle|idle|gpu:h100:4|gpu:h100:0|none|\\n'")
    shipped.answer("sdiag", "echo 'Server thread count:  many'")

    result, found = shipped.once()

    assert result.returncode == 0
    assert of(found, "slurm_node_state") == {("gpu1", "idle"): 1}
    assert of(found, "slurm_scheduler_threads") == {}  # a figure it cannot read is not guessed


def test_holds_it_cannot_read_leave_the_metric_out_never_say_none_held(debian_python, tmp_path):
    shipped = controller(tmp_path, "24.11")
    shipped.answer("scontrol", "echo 'ReservationName=cf-gate-new-cpu4 StartTime=now'")

    result, found = shipped.once()

    assert result.returncode == 1 and "scontrol: its output could not be read" in result.stderr
    assert of(found, "slurm_node_gate_held") == {}
    assert of(found, "slurm_exporter_command_ok")[("scontrol",)] == 0
    shipped.answer("scontrol", "echo 'No reservations in the system'")
    result, found = shipped.once()
    assert result.returncode == 0 and of(found, "slurm_exporter_command_ok")[("scontrol",)] == 1
    assert of(found, "slurm_node_gate_held") == {}


def test_serves_metrics_over_http_until_stopped(debian_python, tmp_path):
    shipped = controller(tmp_path, "22.05")
    port = free_port()
    proc = subprocess.Popen(shipped.argv("--listen", f"127.0.0.1:{port}"), env=shipped.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
                    text = response.read().decode()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.1)
        assert of(samples(text), "slurm_node_state")[("gpu3", "drained")] == 1
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert f"serving /metrics on 127.0.0.1:{port}" in err


def test_each_nodes_last_baseline_and_its_profiles_median_from_the_gates_records(debian_python, tmp_path):
    shipped = controller(tmp_path, "24.11")
    kept = tmp_path / "records"
    kept.mkdir()

    def line(node, value, passed=True, time="2026-11-27T04:00:00Z", test="allreduce"):
        return json.dumps({"node": node, "test": test, "passed": passed, "value": value, "unit": "GB/s",
                           "floor": 460.0, "time": time, "source": "gate"}) + "\n"

    (kept / "gpu1.jsonl").write_text(line("gpu1", 476.0) + line("gpu1", 420.0, False, "2026-11-28T04:00:00Z"))
    (kept / "gpu2.jsonl").write_text(line("gpu2", 470.0) + line("gpu2", None, test="dcgm"))
    (kept / "gpu3.jsonl").write_text(line("gpu3", 468.0))
    (kept / "gpu4.jsonl").write_text(line("gpu4", 300.0, False))  # never passed: no baseline
    plan = tmp_path / "admission.json"
    plan.write_text(json.dumps({"cluster": "c", "nodes": {n: {"profile": "h100", "budget": 1800, "tests": []}
                                                          for n in ("gpu1", "gpu2", "gpu3")}}))

    result, found = shipped.once("--records", str(kept), "--plan", str(plan))

    assert result.returncode == 0, result.stderr
    # labels in sorted order of their names: node, profile, test, unit
    assert of(found, "slurm_node_test_last") == {
        ("gpu1", "h100", "allreduce", "GB/s"): 420.0, ("gpu2", "h100", "allreduce", "GB/s"): 470.0,
        ("gpu3", "h100", "allreduce", "GB/s"): 468.0, ("gpu4", "", "allreduce", "GB/s"): 300.0}
    assert of(found, "slurm_node_test_baseline") == {
        ("gpu1", "h100", "allreduce", "GB/s"): 476.0, ("gpu2", "h100", "allreduce", "GB/s"): 470.0,
        ("gpu3", "h100", "allreduce", "GB/s"): 468.0}
    # gpu4, in no profile of the plan, is compared with no other node
    assert of(found, "slurm_node_test_median") == {
        ("gpu1", "h100", "allreduce", "GB/s"): 468.0, ("gpu2", "h100", "allreduce", "GB/s"): 468.0,
        ("gpu3", "h100", "allreduce", "GB/s"): 468.0, ("gpu4", "", "allreduce", "GB/s"): 300.0}


def test_the_records_of_a_node_slurm_no_longer_lists_are_kept_but_not_scraped(debian_python, tmp_path):
    """A node removed from the cluster keeps its records on the controller; its series leave the scrape (64 grown
    nodes and then shrunk back to 3 left 512 series of nodes that were gone). Where sinfo cannot be read, no node is
    taken for gone."""
    shipped = controller(tmp_path, "24.11")
    kept = tmp_path / "records"
    kept.mkdir()
    for node in ("gpu1", "gpu64"):
        (kept / f"{node}.jsonl").write_text(json.dumps({
            "node": node, "test": "allreduce", "passed": True, "value": 470.0, "unit": "GB/s", "floor": 460.0,
            "time": "2026-11-27T04:00:00Z", "source": "gate"}) + "\n")

    result, found = shipped.once("--records", str(kept), "--plan", str(tmp_path / "none.json"))

    assert result.returncode == 0, result.stderr
    assert of(found, "slurm_node_test_last") == {("gpu1", "", "allreduce", "GB/s"): 470.0}
    assert (kept / "gpu64.jsonl").exists()

    shipped.answer("sinfo", CTLD_DOWN)
    result, found = shipped.once("--records", str(kept), "--plan", str(tmp_path / "none.json"))
    assert set(of(found, "slurm_node_test_last")) == {("gpu1", "", "allreduce", "GB/s"),
                                                       ("gpu64", "", "allreduce", "GB/s")}


def test_records_that_cannot_be_read_leave_their_metrics_out_and_say_so(debian_python, tmp_path):
    shipped = controller(tmp_path, "24.11")
    kept = tmp_path / "records"
    kept.mkdir()
    (kept / "gpu1.jsonl").write_text("not json\n")

    result, found = shipped.once("--records", str(kept), "--plan", str(tmp_path / "none.json"))

    assert result.returncode == 1
    assert f"the gate's records could not be read: {kept}/gpu1.jsonl:1: not a JSON line" in result.stderr
    assert of(found, "slurm_node_test_last") == {}
    assert of(found, "slurm_node_state")[("gpu3", "drained")] == 1
