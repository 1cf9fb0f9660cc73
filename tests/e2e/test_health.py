"""End to end: the node health check on the running test cluster, run by slurmd every minute (the test inventory's
interval) and, where a test needs no wait, by hand as slurmd runs it (/usr/sbin/clusterforge-health, as root, with
SLURMD_NODENAME). Each test puts back what it broke and lifts what it drained.

What is not real here, and why: the machines have no GPU, so nvidia-smi is the test cluster's stand-in, replaying
real H100 captures (testbed/nvidia-smi), and a GPU is taken away through its control file; the containers share the
kernel log of the machine they run on, so kernel records reach the check through the root-owned file the test
inventory names (kernel_log_extra), written here as the kernel writes /dev/kmsg records.
"""

from __future__ import annotations

import shlex
import time

import pytest
from e2e.testbed import MACHINES, Testbed

pytestmark = pytest.mark.e2e

CTL = MACHINES["ctl"]
NODES = ("gpu01", "gpu02")
CONTROL = "/run/clusterforge-testbed"
RECORDS = f"{CONTROL}/kernel-records"
LAST_CHECK = "/var/lib/clusterforge/health/last-check"
EVENTS = "/var/lib/clusterforge/health/events.log"
XID79 = "NVRM: Xid (PCI:0000:5d:00): 79, pid=1912, GPU has fallen off the bus."
XID13 = "NVRM: Xid (PCI:0000:18:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception"


def sinfo(bed: Testbed) -> dict[str, tuple[str, str]]:
    """Each node's state and reason, as the controller holds them."""
    out = bed.run(CTL, "sinfo --noheader --Node --format='%N|%T|%E'")
    found = {}
    for line in out.splitlines():
        name, state, reason = line.strip().split("|", 2)
        found.setdefault(name, (state, "" if reason == "none" else reason))
    return found


def wait_for(bed: Testbed, what: str, test, timeout: float = 200) -> dict[str, tuple[str, str]]:
    deadline = time.monotonic() + timeout
    while True:
        nodes = sinfo(bed)
        if test(nodes):
            return nodes
        assert time.monotonic() < deadline, f"no {what} within {timeout} s: {nodes}"
        time.sleep(5)


def check_now(bed: Testbed, node: str) -> str:
    """The check, run as slurmd runs it; its output whatever it exits."""
    return bed.run(MACHINES[node], f"env -i SLURMD_NODENAME={node} /usr/sbin/clusterforge-health; true")


def kernel_record(bed: Testbed, node: str, message: str, facility: int = 0) -> None:
    """A record as /dev/kmsg gives it (<prefix>,<seq>,<usec>,-;<text>), with the next sequence number."""
    bed.run(MACHINES[node], f"mkdir -p {CONTROL}; n=$(($(wc -l < {RECORDS} 2>/dev/null || echo 0) + 1)); "
                            f"printf '%s,%s,%s,-;%s\\n' {facility << 3 | 3} \"$n\" \"$n\"000 {shlex.quote(message)} "
                            f">> {RECORDS}")


@pytest.fixture
def clean(testbed):
    """Whatever a test breaks or drains is put back, and every node is left undrained."""
    yield testbed
    for node in NODES:
        testbed.run(MACHINES[node], f"rm -f {CONTROL}/gpus-gone {CONTROL}/smi-hangs")
    testbed.run(CTL, "for n in gpu01 gpu02; do scontrol update nodename=$n state=undrain 2>/dev/null; done; true")
    wait_for(testbed, "undrained nodes", lambda nodes: all("drain" not in nodes[n][0] for n in NODES))


def test_slurmd_runs_the_check_and_a_healthy_cluster_stays_undrained(clean):
    bed = clean
    start = {n: bed.run(MACHINES[n], f"stat -c %Y {LAST_CHECK} 2>/dev/null || echo 0").strip() for n in NODES}
    deadline = time.monotonic() + 200
    while any(bed.run(MACHINES[n], f"stat -c %Y {LAST_CHECK} 2>/dev/null || echo 0").strip() == start[n]
              for n in NODES):
        assert time.monotonic() < deadline, "slurmd did not run the health check within 200 s"
        time.sleep(5)
    for node in NODES:
        assert " none 0 finding(s)" in bed.run(MACHINES[node], f"cat {LAST_CHECK}")
    assert all("drain" not in state for state, _ in sinfo(bed).values())


def test_a_gpu_gone_drains_that_node_alone_within_an_interval_and_its_return_resumes_it(clean):
    bed = clean
    bed.run(MACHINES["gpu01"], f"mkdir -p {CONTROL}; echo 3 > {CONTROL}/gpus-gone")
    nodes = wait_for(bed, "drain of gpu01", lambda nodes: "drain" in nodes["gpu01"][0])
    assert nodes["gpu01"][1].startswith("cf:gpu:missing gpu3 /dev/nvidia3 not seen by nvidia-smi (7 of 8 GPUs)")
    assert "drain" not in nodes["gpu02"][0]
    bed.run(MACHINES["gpu01"], f"rm -f {CONTROL}/gpus-gone")
    wait_for(bed, "resume of gpu01", lambda nodes: "drain" not in nodes["gpu01"][0])


def test_a_hardware_xid_drains_its_node_an_applications_is_recorded_and_neither_counts_twice(clean):
    bed = clean
    # slurmd's own check may read a record first: the events log and the node's state say what was counted.
    kernel_record(bed, "gpu02", XID13)
    check_now(bed, "gpu02")
    assert "drain" not in sinfo(bed)["gpu02"][0]
    kernel_record(bed, "gpu02", XID79)
    check_now(bed, "gpu02")
    state, reason = sinfo(bed)["gpu02"]
    assert "drain" in state and reason.startswith("cf:gpu:xid79 gpu3 0000:5d:00")
    assert "drain" not in sinfo(bed)["gpu01"][0]
    again = check_now(bed, "gpu02")
    assert "keep gpu02: drained for a hardware Xid until the node reboots" in again
    events = bed.run(MACHINES["gpu02"], f"cat {EVENTS}")
    assert events.count("cf:gpu:xid13 gpu0 0000:18:00") == 1 and events.count("cf:gpu:xid79 gpu3 0000:5d:00") == 1


def test_a_line_written_from_user_space_never_drains(clean):
    bed = clean
    # logger, by root and by anyone: the journal's, never the kernel's records.
    bed.run(MACHINES["gpu01"], f"logger '{XID79}'; su nobody -s /bin/sh -c \"logger '{XID79}'\"")
    # In the extra source too, a record with the user facility (what a write to /dev/kmsg gets) does not count.
    kernel_record(bed, "gpu01", XID79, facility=1)
    out = check_now(bed, "gpu01")
    assert "xid79" not in out
    assert "drain" not in sinfo(bed)["gpu01"][0]


def test_an_admins_drain_stays_through_a_fault_its_recovery_and_checks(clean):
    bed = clean
    bed.run(CTL, "scontrol update nodename=gpu02 state=drain reason='disk swap'")
    bed.run(MACHINES["gpu02"], f"mkdir -p {CONTROL}; echo 5 > {CONTROL}/gpus-gone")
    out = check_now(bed, "gpu02")
    assert "leave gpu02: held by another: disk swap" in out
    bed.run(MACHINES["gpu02"], f"rm -f {CONTROL}/gpus-gone")
    check_now(bed, "gpu02")
    state, reason = sinfo(bed)["gpu02"]
    assert "drain" in state and reason == "disk swap"
