"""End to end: benchmarks/scale.py, small, so that it cannot rot (issue 50): on the running test cluster it turns
admission on, grows the cluster by one cloned compute machine, which the gate admits, measures every operation at
that size (the no-op and its floor, a plan, check and check --smoke, a roll over a job array, accept with the new node
slow, the scrapes) and leaves the cluster as it found it: the test inventory deployed again, admission off, the
clone gone. Its figures are printed, never asserted (the benchmark's own figures come from 4, 16 and 64 machines:
docs/development/benchmarks.md); what is asserted is what the figures rest on: the grown node admitted by the gate,
the roll's jobs all COMPLETED, accept naming the slow node. Debian 12 only: the script is the same on both releases,
and the minutes are the tier's."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from e2e.testbed import MACHINES, REPO, Testbed

pytestmark = pytest.mark.e2e


def test_the_scale_benchmark_grows_measures_and_shrinks_the_test_cluster(testbed: Testbed):
    if testbed.dist != "bookworm":
        pytest.skip("run on Debian 12 alone: the benchmark's script is the same for both releases")
    env = {k: v for k, v in testbed.env().items() if k != "CLUSTERFORGE_INVENTORY"}
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "scale.py"), "--reuse", "--sizes", "3",
                           "--repeat", "1", "--job-seconds", "10"], cwd=REPO, env=env, text=True,
                          capture_output=True, timeout=1800)
    print(done.stderr[-6000:])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    figures = dict(_figure(line) for line in done.stdout.splitlines()[1:])
    assert re.fullmatch(r"[\d.]+ s", figures["gate: 1 new nodes admitted after, 3 nodes"]), figures
    assert figures["jobs of the array COMPLETED, 3 nodes"] == "6/6", figures
    assert figures["nodes named, 3 nodes"] == "gpu03", figures
    assert figures["check's exit, 3 nodes"] == "0", figures
    # As it found it: the clone gone, the gate off, nothing for the test inventory's deploy to do.
    assert "cf-gpu03" not in subprocess.run(["lxc-ls"], capture_output=True, text=True).stdout.split()
    assert "Plan: nothing to do on" in testbed.plan().stdout
    assert testbed.run(MACHINES["ctl"], "systemctl is-active clusterforge-gate || true").strip() != "active"


def _figure(line: str) -> tuple[str, str]:
    """A line of the benchmark's table: the label, then two spaces or more, then the figure."""
    label, value = re.fullmatch(r"\s*(.+?)\s{2,}(\S.*)", line).groups()
    return label, value
