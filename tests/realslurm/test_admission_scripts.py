"""admission.tests' batch scripts as the real slurmctld and slurmd of 26.05 run them (the release whose root has
slurmd): sbatch takes each script's #SBATCH lines, the tool runs as a job step with the node's 8 GPUs (gres, as on
an H100 node), and what Slurm hands back, the output file and the job's exit status, judges to the numbers the tool
printed; a hung tool is cut at the entry's bound and its job ends with timeout(1)'s status, judged a failure.

The tools are stand-ins that print real captures (tests/admission/captures) and exit as the tool would, so that the
judge reads the real tools' text (the test cluster's stand-ins, testbed/accept, run here too in
test_accept_eight.py). What is proved here is the scripts' use of Slurm."""

from __future__ import annotations

from pathlib import Path

import pytest
from realslurm import harness

from clusterforge.admission import tests

NODE = "gpu01"
GPUS = tuple(f"/dev/nvidia{i}" for i in range(8))
CAPTURES = Path(__file__).resolve().parents[1] / "admission" / "captures"
FLOORS = {"allreduce": 460, "allreduce_multi": 350, "ib_write_bw": 380, "host_to_device": 48, "device_to_device": 335}
# A tool: its captured output, its exit status, or a hang (a file named <tool>.hang beside it).
TOOL = """#!/bin/sh
[ -e "$0.hang" ] && exec sleep 600
cat "$0.out"
exit "$(cat "$0.rc" 2>/dev/null || echo 0)"
"""


def slurm_conf(scratch: Path) -> Path:
    # One CPU and 100 MB, no more than this machine has; 8 GPUs as device stand-ins (the harness makes them).
    etc = harness.bare_etc(scratch, "admission", "ReturnToService=2\nGresTypes=gpu\nMinJobAge=300\n"
                           f"NodeName={NODE} NodeAddr=127.0.0.1 CPUs=1 RealMemory=100 Gres=gpu:h100:8 State=UNKNOWN\n"
                           f"PartitionName=all Nodes={NODE} Default=YES State=UP\n")
    (etc / "gres.conf").write_text(f"NodeName={NODE} Name=gpu Type=h100 File=/dev/nvidia[0-7]\n")
    return etc


def tool(bin_dir: Path, name: str, output: str, status: int = 0, hang: bool = False) -> None:
    path = bin_dir / name
    path.write_text(TOOL)
    path.chmod(0o755)
    (bin_dir / f"{name}.out").write_text(output)
    (bin_dir / f"{name}.rc").write_text(f"{status}\n")
    if hang:
        (bin_dir / f"{name}.hang").write_text("")


@pytest.mark.realslurm
def test_each_script_runs_as_a_real_job_and_judges_to_what_its_tool_printed():
    runtime = harness.require("26.05")
    with harness.scratch_dir() as scratch:
        etc = slurm_conf(scratch)
        bin_dir = scratch / "tools"
        bin_dir.mkdir(mode=0o755)
        tool(bin_dir, "dcgmi", (CAPTURES / "dcgm/4.4.2-r2-pass.txt").read_text())
        tool(bin_dir, "nvbandwidth", (CAPTURES / "nvbandwidth/rtx4090-v0.2-h2d-d2h.txt").read_text())
        tool(bin_dir, "ib_write_bw", (CAPTURES / "perftest/gbits-post-list-60s.txt").read_text())
        tool(bin_dir, "all_reduce_perf", "", hang=True)
        entries = {e["name"]: e for e in tests.entries(
            list(tests.DEFAULT_SINGLE_NODE), bin_dir=str(bin_dir), image=None, gpus=8, hcas=("mlx5_0",), dcgm_level=2,
            floors=FLOORS, budget=1800, ib_cuda=False)}
        entries["allreduce"]["timeout"] = 3

        with harness.running_slurmctld(runtime, etc, scratch) as ctld, \
                harness.running_slurmd(ctld, NODE, GPUS):

            def judged(name: str) -> tuple[int, list[tuple[str, bool, str]]]:
                script = scratch / f"{name}.sbatch"
                script.write_text(tests.job_script(entries[name], [NODE]))
                out = scratch / f"{name}.out"
                done = ctld.run("sbatch", "--wait", f"--job-name=cf-test:{name}", f"--output={out}", str(script),
                                check=False, timeout=120)
                assert out.exists(), done.stdout + done.stderr
                results = tests.judge(entries[name], NODE, out.read_text(), done.returncode)
                return done.returncode, [(r.test, r.passed, r.reason) for r in results]

            assert judged("dcgm") == (0, [("dcgm", True, "dcgm 3 tests passed")])
            status, nvbandwidth = judged("nvbandwidth")
            assert status == 0 and nvbandwidth[:2] == [
                ("nvbandwidth:h2d", False, "nvbandwidth:h2d 23.9 GB/s < 48"),
                ("nvbandwidth:d2h", False, "nvbandwidth:d2h 26.25 GB/s < 48")]
            assert judged("ib_write_bw") == (0, [("ib_write_bw:mlx5_0", False, "ib_write_bw:mlx5_0 0.48 Gb/s < 380")])
            assert judged("allreduce") == (tests.CUT, [
                ("allreduce", False, "allreduce cut at its bound of 3 s (hung or too slow)")])
            jobs = harness.parse_oneliner(ctld.run("scontrol", "-o", "show", "job").stdout)
            assert {j["JobName"]: j["JobState"] for j in jobs} == {
                "cf-test:dcgm": "COMPLETED", "cf-test:nvbandwidth": "COMPLETED", "cf-test:ib_write_bw": "COMPLETED",
                "cf-test:allreduce": "FAILED"}
            # Each job asked for the node's 8 GPUs (AllocTRES shows them only where accounting tracks gres/gpu).
            assert [j.get("TresPerNode") for j in jobs] == ["gres/gpu:8"] * 4, jobs
