"""The test cluster's acceptance stand-ins (testbed/accept/: all_reduce_perf, dcgmi, ib_write_bw, nvbandwidth), run
here as a node and Slurm's srun would run them, with CLUSTERFORGE_TESTBED_ROOT a prefix to the results file they
read (the cluster's /home/.clusterforge-testbed/accept.json): each prints its real tool's format with the values a
test sets for a node, and exits as the tool does."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from ports import free_port

REPO = Path(__file__).resolve().parents[2]
ACCEPT = REPO / "testbed" / "accept"


@pytest.fixture
def cluster(tmp_path) -> Path:
    (tmp_path / "home" / ".clusterforge-testbed").mkdir(parents=True)
    return tmp_path


def set_results(root: Path, results: dict) -> None:
    (root / "home" / ".clusterforge-testbed" / "accept.json").write_text(json.dumps(results))


def run(root: Path, tool: str, *args: str, node: str = "gpu01", timeout: float = 20,
        **env: str) -> subprocess.CompletedProcess[str]:
    environment = {"PATH": os.environ["PATH"], "CLUSTERFORGE_TESTBED_ROOT": str(root), "SLURMD_NODENAME": node,
                   **env}
    return subprocess.run([str(ACCEPT / tool), *args], env=environment, capture_output=True, text=True,
                          timeout=timeout, check=False)


def srun(root: Path, nodes: str, tasks: str, ntasks: int, *args: str, procid: int = 0,
         **env: str) -> subprocess.CompletedProcess[str]:
    """One task of `srun all_reduce_perf` as Slurm starts it: its rank, the step's nodes and tasks per node."""
    return run(root, "all_reduce_perf", *args, SLURM_NTASKS=str(ntasks), SLURM_PROCID=str(procid),
               SLURM_LOCALID=str(procid % 8), SLURM_STEP_NODELIST=nodes, SLURM_STEP_TASKS_PER_NODE=tasks, **env)


def rows(output: str) -> list[list[str]]:
    """all_reduce_perf's result rows as acceptance.md says to read them: not "#", 13 fields."""
    return [line.split() for line in output.splitlines() if line.strip() and not line.startswith("#")
            and len(line.split()) == 13]


# all_reduce_perf

def test_all_reduce_perf_on_one_node_prints_nccl_tests_table_with_the_busbw_set_for_the_node(cluster):
    set_results(cluster, {"gpu02": {"allreduce": 300}})
    done = run(cluster, "all_reduce_perf", "-b", "16G", "-e", "16G", "-g", "8")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] == ["# nccl-tests version 2.18.3 nccl-headers=22703 nccl-library=22703",
                         "# Collective test starting: all_reduce_perf",
                         "# nThread 1 nGpus 8 minBytes 17179869184 maxBytes 17179869184 step: 1048576(bytes) warmup "
                         "iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0"]
    devices = [line for line in lines if line.startswith("#  Rank")]
    assert [line.split()[11] for line in devices] == [f"[0000:{b}:00]" for b in
                                                       ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")]
    assert all(" on      gpu01 device " in line for line in devices)
    [row] = rows(done.stdout)
    assert row[:5] == ["17179869184", "4294967296", "float", "sum", "-1"]
    assert row[7] == row[11] == "478.52"                      # busbw, out-of-place and in-place
    assert float(row[6]) == pytest.approx(478.52 * 8 / 14, abs=0.01)   # algbw = busbw / (2(n-1)/n)
    assert lines[-6:] == ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 478.52 ", "#",
                          "# Collective test concluded: all_reduce_perf", "", "#"]
    slow = run(cluster, "all_reduce_perf", "-b", "16G", "-e", "16G", "-g", "8", node="gpu02")
    assert rows(slow.stdout)[0][7] == "300.00"


def test_all_reduce_perf_over_a_range_of_sizes_peaks_at_the_largest_and_averages_every_row(cluster):
    done = run(cluster, "all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8")
    table = rows(done.stdout)
    assert [int(r[0]) for r in table] == [8 << n for n in range(31)]
    busbw = [float(r[7]) for r in table]
    assert busbw == sorted(busbw) and busbw[-1] == 478.52 and busbw[0] < 1
    average = float(re.search(r"^# Avg bus bandwidth    : (\S+)", done.stdout, re.M).group(1))
    assert average == pytest.approx(sum(busbw) / len(busbw), rel=1e-3)


def test_all_reduce_perf_below_nccl_tests_min_bw_says_failed_and_exits_7(cluster):
    done = run(cluster, "all_reduce_perf", "-b", "16G", "-e", "16G", "-g", "8", NCCL_TESTS_MIN_BW="600")
    assert done.returncode == 7
    assert "# Avg bus bandwidth    : 478.52 FAILED" in done.stdout
    passed = run(cluster, "all_reduce_perf", "-b", "16G", "-e", "16G", "-g", "8", NCCL_TESTS_MIN_BW="460")
    assert passed.returncode == 0 and "# Avg bus bandwidth    : 478.52 OK" in passed.stdout


def test_all_reduce_perf_asked_for_more_gpus_than_the_node_has_exits_5(cluster):
    done = run(cluster, "all_reduce_perf", "-g", "9")
    assert done.returncode == 5 and done.stdout == ""
    assert "Invalid number of GPUs: 9 requested but only 8 were found." in done.stderr


HEALTHY_RAIL = 392.77 / 8 * 0.96   # GB/s one NDR rail carries for NCCL


def test_all_reduce_perf_across_nodes_is_nic_bound_and_only_rank_0_prints(cluster):
    done = srun(cluster, "gpu[01-02]", "8(x2)", 16, "-b", "16G", "-e", "16G", "-g", "1")
    assert done.returncode == 0, done.stderr
    devices = [line.split() for line in done.stdout.splitlines() if line.startswith("#  Rank")]
    assert [(d[2], d[8], d[10]) for d in devices] == [(str(r), f"gpu0{1 + r // 8}", str(r % 8)) for r in range(16)]
    [row] = rows(done.stdout)
    assert float(row[7]) == pytest.approx(8 * HEALTHY_RAIL, abs=0.01)
    other = srun(cluster, "gpu[01-02]", "8(x2)", 16, "-b", "16G", "-e", "16G", "-g", "1", procid=9)
    assert (other.returncode, other.stdout) == (0, "")


def test_all_reduce_perf_across_nodes_is_held_to_the_slowest_node_and_the_slowest_allowed_rail(cluster):
    set_results(cluster, {"gpu03": {"allreduce": 300}, "gpu05": {"hca": {"mlx5_4": 190}}})

    def busbw(nodes: str, count: int, **env: str) -> float:
        done = srun(cluster, nodes, f"8(x{count})", 8 * count, "-b", "16G", "-e", "16G", "-g", "1", **env)
        assert done.returncode == 0, done.stderr
        return float(rows(done.stdout)[0][7])

    assert busbw("gpu[01-04]", 4) == 300.00                                 # the slow node
    assert busbw("gpu[04-05]", 2) == pytest.approx(8 * 190 / 8 * 0.96, abs=0.01)   # its slow rail, on every ring
    assert busbw("gpu[04-05]", 2, NCCL_IB_HCA="^=mlx5_4") == pytest.approx(7 * HEALTHY_RAIL, abs=0.01)
    assert busbw("gpu[04-05]", 2, NCCL_IB_HCA="=mlx5_4:1") == pytest.approx(190 / 8 * 0.96, abs=0.01)
    assert busbw("gpu[04-05]", 2, NCCL_IB_HCA="mlx5_0") == pytest.approx(HEALTHY_RAIL, abs=0.01)
    assert busbw("gpu[01-02]", 2, NCCL_IB_HCA="=mlx5_2") < 5                 # no HCA: NCCL's sockets


def test_all_reduce_perf_with_a_hung_node_stalls_after_its_device_list(cluster):
    set_results(cluster, {"gpu02": {"hang": 30}})
    process = subprocess.Popen(
        [str(ACCEPT / "all_reduce_perf"), "-b", "16G", "-e", "16G", "-g", "1"], stdout=subprocess.PIPE, text=True,
        env={"PATH": os.environ["PATH"], "CLUSTERFORGE_TESTBED_ROOT": str(cluster), "SLURMD_NODENAME": "gpu01",
             "SLURM_NTASKS": "16", "SLURM_PROCID": "0", "SLURM_STEP_NODELIST": "gpu[01-02]",
             "SLURM_STEP_TASKS_PER_NODE": "8(x2)"})
    try:
        head = [process.stdout.readline() for _ in range(21)]
        assert head[-1].startswith("#  Rank 15 ")
        time.sleep(1)
        assert process.poll() is None   # stalled, as a collective waits for its slowest rank
    finally:
        process.kill()
        process.wait()


def test_a_results_file_that_is_not_json_fails_the_stand_in_naming_it(cluster):
    (cluster / "home" / ".clusterforge-testbed" / "accept.json").write_text("{gpu01: slow}")
    done = run(cluster, "all_reduce_perf", "-g", "8")
    assert done.returncode == 1 and "accept.json is not JSON" in done.stderr
    set_results(cluster, {"gpu01": {"allreduce": 300, "slow": True}})
    done = run(cluster, "dcgmi", "diag", "-r", "1")
    assert done.returncode == 1 and "gpu01's entry must be an object of" in done.stderr


# dcgmi

def test_dcgmi_diag_prints_dcgm_4s_table_every_test_of_the_level_passing(cluster):
    done = run(cluster, "dcgmi", "diag", "-r", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Successfully ran diagnostic for group."
    assert {len(line) for line in lines[1:]} == {78}
    assert "| DCGM Version              | 4.2.3                                          |" in lines
    tests = [line[2:27].strip() for line in lines if re.match(r"\| \w", line) and "GPU" not in line[2:27]]
    assert tests == ["Diagnostic", "DCGM Version", "Driver Version Detected", "software", "memory", "pcie"]
    assert lines.count("|                           | GPU7: Pass                                     |") == 3


def test_dcgmi_diag_a_failed_test_fails_on_gpu_0_with_a_warning_and_exit_226(cluster):
    set_results(cluster, {"gpu01": {"dcgm": {"pcie": "Fail"}}})
    done = run(cluster, "dcgmi", "diag", "-r", "2")
    assert done.returncode == 226
    lines = done.stdout.splitlines()
    at = lines.index("| pcie                      | Fail                                           |")
    assert lines[at + 1] == "|                           | GPU0: Fail                                     |"
    assert lines[at + 9].startswith("| Warning: GPU0             | GPU 0 failed the pcie test")


def test_dcgmi_diag_json_reports_a_warning_as_a_failure_and_a_plugin_not_installed_as_skipped(cluster):
    set_results(cluster, {"gpu01": {"dcgm": {"memory": "Warn"}}})
    done = run(cluster, "dcgmi", "diag", "-r", "3", "-j")
    assert done.returncode == 226
    found = json.loads(done.stdout)
    tests = {t["name"]: t for c in found["DCGM Diagnostic"]["test_categories"] for t in c["tests"]}
    assert list(tests) == ["software", "memory", "diagnostic", "eud", "pcie", "targeted_stress", "targeted_power",
                           "memory_bandwidth"]
    assert tests["memory"]["test_summary"] == {"status": "Fail"}
    assert [r["status"] for r in tests["memory"]["results"]] == ["Fail"] + ["Pass"] * 7
    assert tests["memory"]["results"][0]["warnings"][0]["warning"].startswith("GPU 0 failed the memory test")
    assert {r["status"] for r in tests["eud"]["results"]} == {"Skip"}
    assert found["metadata"]["version"] == "4.2.3"
    table = run(cluster, "dcgmi", "diag", "-r", "3")
    assert "| memory                    | Warn                                           |" in table.stdout


@pytest.mark.parametrize("args", [(), ("diag",), ("diag", "-r", "5"), ("diag", "-r", "1", "--fail-early"),
                                  ("discovery", "-l")])
def test_dcgmi_refuses_anything_but_a_diagnostic_run(cluster, args):
    done = run(cluster, "dcgmi", *args)
    assert (done.returncode, done.stdout) == (1, "")
    assert "dcgmi diag -r LEVEL" in done.stderr


# nvbandwidth

def test_nvbandwidth_prints_each_copy_engine_matrix_with_the_values_set_and_its_sum(cluster):
    set_results(cluster, {"gpu01": {"nvbandwidth": {"host_to_device_memcpy_ce": 30,
                                                    "device_to_device_memcpy_read_ce": [370] * 5 + [200] + [370] * 2}}})
    done = run(cluster, "nvbandwidth", "-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce",
               "device_to_device_memcpy_read_ce")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert text.startswith("nvbandwidth Version: v0.8\nBuilt from Git version: v0.8\n\n")
    assert "Device 3: NVIDIA H100 80GB HBM3 (00000000:5d:00)\n" in text
    h2d = text.split("Running host_to_device_memcpy_ce.\n")[1].split("\n\n")[0].splitlines()
    assert h2d == ["memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
                   "  " + "".join(f"{n:>10d}" for n in range(8)), " 0" + "     30.00" * 8]
    assert "SUM host_to_device_memcpy_ce 240.00\n" in text
    assert "SUM device_to_host_memcpy_ce 442.48\n" in text   # healthy
    d2d = text.split("Running device_to_device_memcpy_read_ce.\n")[1].split("\n\n")[0].splitlines()[2:]
    assert d2d[0] == " 0       N/A" + "    370.00" * 4 + "    200.00" + "    370.00" * 2
    assert d2d[5] == " 5" + "    200.00" * 5 + "       N/A" + "    200.00" * 2
    assert text.endswith("NOTE: The reported results may not reflect the full capabilities of the platform.\n"
                         "Performance can vary with software drivers, hardware clocks, and system topology.\n\n")


def test_nvbandwidth_json_gives_the_cells_as_strings_and_takes_test_indexes(cluster):
    done = run(cluster, "nvbandwidth", "-j", "-t", "0", "4")
    cases = json.loads(done.stdout)["nvbandwidth"]["testcases"]
    assert [(c["name"], c["status"]) for c in cases] == [("host_to_device_memcpy_ce", "Passed"),
                                                        ("device_to_device_memcpy_read_ce", "Passed")]
    assert cases[0]["bandwidth_matrix"] == [["55.64"] * 8]
    assert cases[1]["bandwidth_matrix"][2][2] == "N/A" and cases[1]["bandwidth_matrix"][2][3] == "376.43"


def test_nvbandwidth_an_unknown_test_is_an_error_exit_1(cluster):
    done = run(cluster, "nvbandwidth", "-t", "host_to_device_latency")
    assert done.returncode == 1 and "Testcase host_to_device_latency not found" in done.stdout


# ib_write_bw

def pair(root: Path, hca: str, *args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """A server and its client on one node and HCA, as Azure's check runs them: the client's run, the server's
    output."""
    port = str(free_port())
    env = {"PATH": os.environ["PATH"], "CLUSTERFORGE_TESTBED_ROOT": str(root), "SLURMD_NODENAME": "gpu01"}
    server = subprocess.Popen([str(ACCEPT / "ib_write_bw"), "-d", hca, "-p", port, *args], env=env,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline() == "\n"
        assert server.stdout.readline() == "************************************\n"   # listening
        client = run(root, "ib_write_bw", "-d", hca, "-p", port, *args, "localhost")
        served, _ = server.communicate(timeout=20)
    finally:
        server.kill()
    assert server.returncode == 0
    return client, served


def average(output: str) -> tuple[str, float]:
    header, row = [line for line in output.splitlines() if line.startswith((" #bytes", " 8388608", " 65536"))]
    return header.split("BW average[")[1].split("]")[0], float(row.split()[3])


def test_ib_write_bw_pair_prints_perftests_report_with_the_hcas_rate(cluster):
    set_results(cluster, {"gpu01": {"hca": {"mlx5_4": 190.5}}})
    client, served = pair(cluster, "mlx5_4", "-s", "8388608", "-x", "0", "-F", "--report_gbits", "--use_cuda=2")
    assert client.returncode == 0, client.stderr
    assert average(client.stdout) == average(served) == ("Gb/sec", 190.5)
    lines = client.stdout.splitlines()
    assert " Dual-port       : OFF\t\tDevice         : mlx5_4" in lines
    assert "Picking device No. 2" in lines
    assert lines[-1] == "-" * 87
    assert re.search(r"^ 8388608    5000             190\.\d\d             190\.50 \t\t     0\.00\d{4}$",
                     client.stdout, re.M)
    healthy, _ = pair(cluster, "mlx5_0")
    assert average(healthy.stdout) == ("MiB/sec", pytest.approx(392.77 * 1e9 / 8 / 2**20, abs=0.01))


def test_ib_write_bw_below_its_limit_fails_with_perftests_error(cluster):
    set_results(cluster, {"gpu01": {"hca": {"mlx5_4": 190.5}}})
    client, _ = pair(cluster, "mlx5_4", "--report_gbits", "-w", "380")
    assert client.returncode == 1 and "Error: BW result is below bw limit" in client.stderr


def test_ib_write_bw_without_its_server_or_on_an_hca_the_node_lacks_fails(cluster):
    alone = run(cluster, "ib_write_bw", "-d", "mlx5_0", "-p", str(free_port()), "localhost")
    assert alone.returncode == 1 and "Couldn't connect to localhost" in alone.stderr
    missing = run(cluster, "ib_write_bw", "-d", "mlx5_2", "localhost")
    assert missing.returncode == 1 and "IB device mlx5_2 not found" in missing.stderr


# The parsers (admission/parse) read what the stand-ins print back to the values a test set: the gate and accept
# judge the test cluster's nodes by the same code as a real cluster's.

def test_the_parsers_read_the_stand_ins_output_to_the_values_set(cluster):
    from clusterforge.admission.parse import dcgm, nccl, nvbandwidth, perftest

    set_results(cluster, {"gpu01": {"allreduce": 402.5, "dcgm": {"memory": "Warn", "pcie": "Fail"},
                                    "hca": {"mlx5_6": 211.25},
                                    "nvbandwidth": {"device_to_host_memcpy_ce": [55] * 7 + [21.5]}}})
    table = nccl.parse(run(cluster, "all_reduce_perf", "-b", "1G", "-e", "16G", "-f", "2", "-g", "8").stdout)
    assert table.ranks == 8 and table.rows[-1].size == 16 << 30 and table.rows[-1].busbw == (402.5, 402.5)
    multi = srun(cluster, "gpu[01-02]", "8(x2)", 16, "-b", "16G", "-e", "16G", "-g", "1", NCCL_IB_HCA="=mlx5_6")
    assert nccl.parse(multi.stdout).rows[-1].busbw[0] == pytest.approx(211.25 / 8 * 0.96, abs=0.01)
    for args, warned in ((("-j",), "Fail"), ((), "Warn")):   # the JSON says Fail for a warning, the table Warn
        diag = dcgm.parse(run(cluster, "dcgmi", "diag", "-r", "2", *args).stdout)
        assert {t.name: t.status for t in diag.tests} == {"software": "Pass", "memory": warned, "pcie": "Fail"}
        assert diag.version == "4.2.3"
    client, served = pair(cluster, "mlx5_6", "--report_gbits", "-s", "8388608")
    for output in (client.stdout, served):
        bandwidth = perftest.parse(output)
        assert bandwidth.unit == "Gb/s" and bandwidth.rows[-1].average == 211.25
    for args in (("-j",), ()):
        measured = nvbandwidth.parse(run(cluster, "nvbandwidth", *args, "-t", "device_to_host_memcpy_ce",
                                         "device_to_device_memcpy_read_ce").stdout)
        d2h, d2d = measured.tests
        assert d2h.cells == ((55.0,) * 7 + (21.5,),) and d2h.sum == pytest.approx(406.5)
        assert d2d.cells[1][1] is None and d2d.cells[1][2] == 376.43


def test_the_test_clusters_machines_get_the_stand_ins_where_its_inventory_looks_for_them():
    """The Vagrantfile binds testbed/accept/ where the test inventory's admission Programs(bin_dir=...) points."""
    bound = re.findall(r"File\.join\(ROOT, 'testbed', 'accept'\)\} (\S+) none bind,ro,create=dir",
                       (REPO / "Vagrantfile").read_text())
    named = re.findall(r'Programs\(bin_dir="([^"]+)"\)', (REPO / "inventories" / "vagrant.py").read_text())
    assert bound == ["usr/local/lib/clusterforge-testbed/accept"] and named == [f"/{bound[0]}"]


def test_nvbandwidth_a_test_set_waived_or_failed_measures_nothing_and_the_run_still_exits_0(cluster):
    from clusterforge.admission.parse import nvbandwidth

    set_results(cluster, {"gpu01": {"nvbandwidth": {"device_to_device_memcpy_read_ce": "Error",
                                                    "host_to_device_memcpy_ce": "Waived"}}})
    for args in (("-j",), ()):
        done = run(cluster, "nvbandwidth", *args, "-t", "0", "1", "4")
        assert done.returncode == 0, done.stderr
        h2d, d2h, d2d = nvbandwidth.parse(done.stdout).tests
        assert d2h.status == "Passed" and d2h.sum == pytest.approx(442.48)
        assert d2d.status == "Error" and "unspecified launch failure" in d2d.error and d2d.sum is None
        assert h2d.status != "Passed" and h2d.sum is None
