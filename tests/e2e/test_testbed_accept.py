"""End to end: the acceptance tools' stand-ins (testbed/accept/) on the running test cluster, where the Vagrantfile binds
them into every GPU machine, run as the gate's and accept's jobs run them: through Slurm, on the nodes' GPUs, with
the results a test sets in the shared /home (/home/.clusterforge-testbed/accept.json), read by clusterforge's parsers.
What is real: Slurm's jobs, srun's ranks and environment, the shared /home; the tools are the stand-ins."""

from __future__ import annotations

import json
import shlex

import pytest
from e2e.testbed import MACHINES

from clusterforge.admission.parse import dcgm, nccl

pytestmark = pytest.mark.e2e

CTL = MACHINES["ctl"]
BIN = "/usr/local/lib/clusterforge-testbed/accept"
RESULTS = "/home/.clusterforge-testbed/accept.json"


@pytest.fixture
def results(testbed):
    """The per-node results file, written for a test and removed after it."""

    def write(values: dict) -> None:
        testbed.run(CTL, f"mkdir -p /home/.clusterforge-testbed && printf '%s' {shlex.quote(json.dumps(values))} "
                         f"> {RESULTS}")

    yield write
    testbed.run(CTL, f"rm -f {RESULTS}")


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
