"""End to end: the node health check on the running test cluster, run by slurmd every minute (the test inventory's
interval) and, where a test needs no wait, by hand as slurmd runs it (/usr/sbin/clusterforge-health, as root, with
SLURMD_NODENAME). Each test puts back what it broke and lifts what it drained.

What is not real here, and why: the machines have no GPU, so nvidia-smi is the test cluster's stand-in, replaying
real H100 captures (testbed/nvidia-smi), and a GPU is taken away through its control file; the containers share the
kernel log and boot id of the machine they run on, so kernel records reach the check through the root-owned file
the test inventory names (kernel_log_extra), written here as the kernel writes /dev/kmsg records, and a boot is a new
id in the file it names (boot_id_file), which testbed/reboot writes, as kernel_reboot() here does. The machines have no
HCA: the port counters the check reads are files a test writes in the root-owned directory the test inventory names
(infiniband_sysfs), laid out as /sys/class/infiniband.
"""

from __future__ import annotations

import os
import re
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
BOOT_ID = f"{CONTROL}/boot-id"
INFINIBAND = f"{CONTROL}/infiniband"
XID79 = "NVRM: Xid (PCI:0000:5d:00): 79, pid=1912, GPU has fallen off the bus."
XID13 = "NVRM: Xid (PCI:0000:18:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception"
XID154 = ("NVRM: Xid (PCI:0000:5d:00): 154, pid=0, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot "
          "Required)")


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
        time.sleep(1)


def check_now(bed: Testbed, node: str) -> str:
    """The check, run as slurmd runs it; its output whatever it exits."""
    return bed.run(MACHINES[node], f"env -i SLURMD_NODENAME={node} /usr/sbin/clusterforge-health; true")


def kernel_record(bed: Testbed, node: str, message: str, facility: int = 0) -> None:
    """A record as /dev/kmsg gives it (<prefix>,<seq>,<usec>,-;<text>), with the next sequence number."""
    bed.run(MACHINES[node], f"mkdir -p {CONTROL}; n=$(($(wc -l < {RECORDS} 2>/dev/null || echo 0) + 1)); "
                            f"printf '%s,%s,%s,-;%s\\n' {facility << 3 | 3} \"$n\" \"$n\"000 {shlex.quote(message)} "
                            f">> {RECORDS}")


def kernel_reboot(bed: Testbed, node: str) -> None:
    """What a reboot changes for the check, as testbed/reboot does it: a new boot id and a kernel log that starts
    again (the node's daemons keep running)."""
    bed.run(MACHINES[node], f"mkdir -p {CONTROL}; cat /proc/sys/kernel/random/uuid > {BOOT_ID}; : > {RECORDS}")


@pytest.fixture
def clean(testbed):
    """Whatever a test breaks or drains is put back, and every node is left undrained (and in a new boot, so that no
    hardware fault a test left is held past it)."""
    yield testbed
    for node in NODES:
        testbed.run(MACHINES[node], f"rm -f {CONTROL}/gpus-gone {CONTROL}/smi-hangs {CONTROL}/gpu-processes; "
                                    f"rm -rf {INFINIBAND}; pkill -f '^sleep 1234$' || true")
        kernel_reboot(testbed, node)
    testbed.run(CTL, "for n in gpu01 gpu02; do scontrol update nodename=$n state=undrain 2>/dev/null; done; true")
    # Slurm names a drained node whose reboot is pending by the reboot alone ("reboot_issued", "reboot^"): no test
    # begins before such a reboot has ended.
    wait_for(testbed, "undrained nodes",
             lambda nodes: not any(word in nodes[n][0] for n in NODES for word in ("drain", "boot")))


def test_slurmd_runs_the_check_and_a_healthy_cluster_stays_undrained(clean):
    bed = clean
    # Nothing but slurmd has run the check on this cluster yet (the tests that run it by hand come later): its record
    # is slurmd's. Its last run may have been during an earlier test's reboot or node change (seen in CI: not
    # "none"); a healthy cluster's shows within an interval, most often at once. That slurmd runs it every interval
    # is the next test's drain, which nothing else triggers (waiting here for another run cost a minute a release).
    deadline = time.monotonic() + 200
    while any(" none 0 finding(s)" not in bed.run(MACHINES[n], f"cat {LAST_CHECK} 2>/dev/null; true") for n in NODES):
        assert time.monotonic() < deadline, "slurmd's health check found this cluster healthy in no run within 200 s"
        time.sleep(2)
    assert all("drain" not in state for state, _ in sinfo(bed).values())


def test_a_gpu_gone_drains_that_node_alone_within_an_interval_and_its_return_resumes_it(clean):
    bed = clean
    bed.run(MACHINES["gpu01"], f"mkdir -p {CONTROL}; echo 3 > {CONTROL}/gpus-gone")
    nodes = wait_for(bed, "drain of gpu01", lambda nodes: "drain" in nodes["gpu01"][0])
    assert nodes["gpu01"][1].startswith("cf:gpu:missing gpu3 /dev/nvidia3 not seen by nvidia-smi (7 of 8 GPUs)")
    assert "drain" not in nodes["gpu02"][0]
    bed.run(MACHINES["gpu01"], f"rm -f {CONTROL}/gpus-gone")
    # That slurmd runs the check every interval is shown above: the next check, run now as slurmd runs it, resumes
    # the node (a second interval's wait cost each release a minute of CI).
    check_now(bed, "gpu01")
    wait_for(bed, "resume of gpu01", lambda nodes: "drain" not in nodes["gpu01"][0], timeout=30)


def test_a_hardware_xid_drains_its_node_an_applications_is_recorded_and_neither_counts_twice(clean):
    bed = clean
    # slurmd's own check may read a record first: the events log and the node's state say what was counted.
    logged = int(bed.run(MACHINES["gpu02"], f"cat {EVENTS} 2>/dev/null | wc -l").strip())
    kernel_record(bed, "gpu02", XID13)
    check_now(bed, "gpu02")
    assert "drain" not in sinfo(bed)["gpu02"][0]
    kernel_record(bed, "gpu02", XID79)
    check_now(bed, "gpu02")
    state, reason = sinfo(bed)["gpu02"]
    assert "drain" in state and reason.startswith("cf:gpu:xid79 gpu3 0000:5d:00")
    assert "drain" not in sinfo(bed)["gpu01"][0]
    again = check_now(bed, "gpu02")
    assert "keep gpu02: drained for a hardware fault until the node reboots" in again
    events = bed.run(MACHINES["gpu02"], f"tail -n +{logged + 1} {EVENTS}")  # this test's events alone
    assert events.count("cf:gpu:xid13 gpu0 0000:18:00") == 1 and events.count("cf:gpu:xid79 gpu3 0000:5d:00") == 1
    # Lifted by hand in the same boot, the next check drains it again; the same Xid after a reboot holds the node
    # again (the same reason); a boot without it ends the fault.
    bed.run(CTL, "scontrol update nodename=gpu02 state=undrain")
    check_now(bed, "gpu02")
    assert sinfo(bed)["gpu02"][1].startswith("cf:gpu:xid79 gpu3 0000:5d:00")
    kernel_reboot(bed, "gpu02")
    kernel_record(bed, "gpu02", XID79)
    assert "keep gpu02: drained for a hardware fault until the node reboots" in check_now(bed, "gpu02")
    assert "keep gpu02" in check_now(bed, "gpu02")
    kernel_reboot(bed, "gpu02")
    check_now(bed, "gpu02")
    assert "drain" not in sinfo(bed)["gpu02"][0]


def test_a_hardware_fault_seen_while_an_admin_holds_the_node_drains_it_once_released(clean):
    bed = clean
    bed.run(CTL, "scontrol update nodename=gpu02 state=drain reason='disk swap'")
    kernel_record(bed, "gpu02", XID154)
    out = check_now(bed, "gpu02")
    assert "leave gpu02: held by another: disk swap; held until the node reboots: cf:gpu:xid154 gpu3" in out
    assert sinfo(bed)["gpu02"][1] == "disk swap"
    # The admin lets it go: the next check drains it for the fault it saw (a job's prolog would, first).
    bed.run(CTL, "scontrol update nodename=gpu02 state=undrain")
    check_now(bed, "gpu02")
    state, reason = sinfo(bed)["gpu02"]
    assert "drain" in state and reason.startswith("cf:gpu:xid154 gpu3 0000:5d:00")
    kernel_reboot(bed, "gpu02")
    check_now(bed, "gpu02")
    assert "drain" not in sinfo(bed)["gpu02"][0]


def test_a_kernel_record_quoting_a_users_program_name_never_drains(clean):
    bed = clean
    # The kernel's own warning, facility 0, naming a program any user could have named so (seen on a real kernel).
    kernel_record(bed, "gpu01", f"process '/home/alice/{XID79}' started with executable stack")
    out = check_now(bed, "gpu01")
    assert "xid79" not in out and "drain" not in sinfo(bed)["gpu01"][0]


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


def link_downed(bed: Testbed, node: str, value: int) -> None:
    """The node's mlx5_0 port 1 counter of link flaps, in the stand-in for sysfs (root's, as sysfs is)."""
    counters = f"{INFINIBAND}/mlx5_0/ports/1/counters"
    bed.run(MACHINES[node], f"mkdir -p {counters} && echo {value} > {counters}/link_downed")


def test_a_flapping_link_drains_its_node_alone_naming_the_port_until_its_counters_are_reset(clean):
    bed = clean
    monitored = os.environ.get("CLUSTERFORGE_TESTBED_MONITORING", "on") != "off"
    series = 'clusterforge_health_ib_port_errors_total{node="gpu01",hca="mlx5_0",port="1",counter="link_downed"}'
    link_downed(bed, "gpu01", 0)
    check_now(bed, "gpu01")   # the first reading of the counter: a baseline
    assert "drain" not in sinfo(bed)["gpu01"][0]
    if monitored:
        from e2e.test_monitoring import eventually, query  # here: that module imports this one

        # Scraped before the rise, so that Prometheus sees the counter rise.
        eventually("gpu01's link_downed at 0 in Prometheus", lambda: query(f"{series} == 0"), 30)
    link_downed(bed, "gpu01", 3)
    out = check_now(bed, "gpu01")
    nodes = sinfo(bed)
    assert "drain" in nodes["gpu01"][0] and nodes["gpu01"][1].startswith("cf:ib:flap mlx5_0 port 1 link_downed +3"), out
    assert "drain" not in nodes["gpu02"][0]
    if monitored:
        alert = 'ALERTS{alertname="InfinibandPortErrorsRising",node="gpu01",hca="mlx5_0",counter="link_downed"}'
        eventually("the alert of gpu01's rising link_downed", lambda: query(alert), 30)
    # The counter no longer rises: the drain is held all the same, until the port's counters are reset.
    assert "keep gpu01: drained already" in check_now(bed, "gpu01")
    link_downed(bed, "gpu01", 0)   # what perfquery -R does, once the cable is reseated
    check_now(bed, "gpu01")
    wait_for(bed, "resume of gpu01", lambda nodes: "drain" not in nodes["gpu01"][0], timeout=30)


def hold_gpus(bed: Testbed, node: str, minors: list[int]) -> int:
    """A process outside any job, listed by the node's nvidia-smi on these GPUs (as a CUDA process would be)."""
    pid = int(bed.run(MACHINES[node], "setsid sleep 1234 > /dev/null 2>&1 < /dev/null & echo $!").strip())
    lines = "".join(f"{m} {pid} python 30000\\n" for m in minors)
    bed.run(MACHINES[node], f"mkdir -p {CONTROL}; printf '{lines}' > {CONTROL}/gpu-processes")
    return pid


def job_field(bed: Testbed, job: str, key: str) -> str:
    shown = bed.run(CTL, f"scontrol show job {job}")
    return next(w.split("=", 1)[1] for w in shown.split() if w.startswith(f"{key}="))


def test_a_job_landing_on_a_node_whose_gpu_is_busy_is_requeued_and_completes_on_another(clean):
    bed = clean
    # Every GPU of gpu01 held by a stray process: its prolog fails whichever GPU the job gets. The job goes to
    # gpu01 first (both nodes idle and alike, Slurm takes them in order).
    pid = hold_gpus(bed, "gpu01", list(range(8)))
    job = bed.run(CTL, "sbatch --parsable --nodes=1 --gres=gpu:1 --output=/dev/null --wrap 'hostname'").strip()
    nodes = wait_for(bed, "drain of gpu01 by its prolog", lambda nodes: "drain" in nodes["gpu01"][0], timeout=60)
    assert nodes["gpu01"][1].startswith("cf:job:foreign gpu") and f"busy: pid {pid} python" in nodes["gpu01"][1]
    # Requeued, not held (nohold_on_prolog_fail); Slurm lets a requeued job start again only once its launch
    # credential has expired (AuthInfo=cred_expire=30 in the test inventory; 120 s by default).
    deadline = time.monotonic() + 240
    while (state := job_field(bed, job, "JobState")) != "COMPLETED":
        assert state in ("PENDING", "RUNNING", "COMPLETING", "CONFIGURING"), f"job {job} {state}"
        assert time.monotonic() < deadline, f"job {job} not completed within 240 s: {state}"
        time.sleep(2)
    assert job_field(bed, job, "NodeList") == "gpu02"
    assert job_field(bed, job, "Restarts") == "1"
    # The GPU free again: the periodic check lifts the job boundary's drain (run now, as slurmd runs it: that it
    # runs every interval is shown above).
    bed.run(MACHINES["gpu01"], f"rm -f {CONTROL}/gpu-processes; kill {pid}")
    check_now(bed, "gpu01")
    wait_for(bed, "resume of gpu01", lambda nodes: "drain" not in nodes["gpu01"][0], timeout=30)


def test_a_process_that_outlives_its_job_drains_the_node_until_the_gpu_is_free(clean):
    bed = clean
    job = bed.run(CTL, "sbatch --parsable --nodelist=gpu02 --gres=gpu:1 --output=/dev/null --wrap 'sleep 15'")
    job = job.strip()
    deadline = time.monotonic() + 60
    while job_field(bed, job, "JobState") != "RUNNING":
        assert time.monotonic() < deadline, f"job {job} did not start"
        time.sleep(2)
    index = bed.run(CTL, f"scontrol show job -d {job}").split("IDX:", 1)[1].split(")", 1)[0]
    # A process left on the job's GPU, outside the job (as one that escaped its cgroup would be): while the job
    # runs the periodic check takes no action; when it ends, the epilog drains the node.
    pid = hold_gpus(bed, "gpu02", [int(index)])
    nodes = wait_for(bed, "drain of gpu02 by its epilog", lambda nodes: "drain" in nodes["gpu02"][0], timeout=90)
    assert nodes["gpu02"][1].startswith(f"cf:job:leftover gpu{index} ")
    assert f"pid {pid} python 30000 MiB outlived its job" in nodes["gpu02"][1]
    assert job_field(bed, job, "JobState") == "COMPLETED"
    assert "drain" not in nodes["gpu01"][0]
    # Still held: the periodic check keeps the drain. Freed: it lifts it.
    assert "keep gpu02: not clear yet: cf:job:leftover" in check_now(bed, "gpu02")
    bed.run(MACHINES["gpu02"], f"rm -f {CONTROL}/gpu-processes; kill {pid}")
    check_now(bed, "gpu02")
    wait_for(bed, "resume of gpu02", lambda nodes: "drain" not in nodes["gpu02"][0], timeout=30)


@pytest.fixture
def boots_with_slurmd(clean):
    """gpu02's slurmd counts its uptime from its own start (slurmd -b), so that the test inventory's RebootProgram,
    which restarts slurmd (a container cannot reboot its kernel), is a boot in Slurm's eyes; put back after."""
    bed = clean
    bed.run(MACHINES["gpu02"], "echo SLURMD_OPTIONS=-b > /etc/default/slurmd && systemctl restart slurmd")
    wait_for(bed, "gpu02 back", lambda nodes: nodes["gpu02"][0] in ("idle", "mixed"))
    # That start is a boot to Slurm too, and a reboot asked for within its second would be taken for done: the node
    # returned to service with its REBOOT_ISSUED flag for good (seen on Debian 13; testbed/reboot says why).
    boot = re.search(r"BootTime=(\S+)", bed.run(CTL, "scontrol show node gpu02")).group(1)
    while bed.run(CTL, "date +%Y-%m-%dT%H:%M:%S").strip() <= boot:
        time.sleep(0.2)
    yield bed
    bed.run(MACHINES["gpu02"], "rm -f /etc/default/slurmd && systemctl restart slurmd")


def test_a_node_back_sick_from_a_reboot_through_slurm_stays_out_until_healthy(boots_with_slurmd):
    bed = boots_with_slurmd
    log = "/var/log/slurm/slurmd.log"
    start = int(bed.run(MACHINES["gpu02"], f"wc -l < {log}").strip())
    # The GPU goes at the reboot (should slurmd's periodic check see it first, the reboot lifts that drain).
    bed.run(MACHINES["gpu02"], f"mkdir -p {CONTROL}; echo 2 > {CONTROL}/gpus-gone")
    bed.run(CTL, "scontrol reboot ASAP nextstate=resume gpu02")
    # slurmd's check at its start finds the GPU missing while Slurm still has the node rebooting, and the gate it
    # starts drains the node once it has registered.
    deadline = time.monotonic() + 120
    while "wait gpu02: back from a reboot through Slurm" not in bed.run(MACHINES["gpu02"],
                                                                          f"tail -n +{start + 1} {log}"):
        assert time.monotonic() < deadline, "no check at slurmd's start on a node rebooting within 120 s"
        time.sleep(3)
    nodes = wait_for(bed, "gpu02 drained after its reboot",
                     lambda nodes: "drain" in nodes["gpu02"][0] and nodes["gpu02"][1].startswith("cf:"),
                     timeout=60)
    assert nodes["gpu02"][1].startswith("cf:gpu:missing gpu2 /dev/nvidia2 not seen by nvidia-smi")
    assert "REBOOT" not in bed.run(CTL, "scontrol show node gpu02 | grep State=")
    # Healthy again: the periodic check returns it to service (run now, as slurmd runs it).
    bed.run(MACHINES["gpu02"], f"rm -f {CONTROL}/gpus-gone")
    check_now(bed, "gpu02")
    wait_for(bed, "resume of gpu02", lambda nodes: "drain" not in nodes["gpu02"][0], timeout=30)


EVIDENCE = "/var/lib/clusterforge/evidence"


def test_a_reboot_through_slurm_of_a_node_holding_a_hardware_fault_keeps_its_evidence_first(boots_with_slurmd):
    bed = boots_with_slurmd
    node = MACHINES["gpu02"]
    bed.run(node, f"rm -rf {EVIDENCE}")
    kernel_record(bed, "gpu02", XID79)
    check_now(bed, "gpu02")
    wait_for(bed, "gpu02 drained for the Xid", lambda nodes: nodes["gpu02"][1].startswith("cf:gpu:xid79"), timeout=30)
    # Slurm's RebootProgram is clusterforge's wrapper: the evidence, then the test inventory's reboot program, which
    # starts a new boot (a new boot id, the kernel records emptied: what the evidence must have kept).
    bed.run(CTL, "scontrol reboot ASAP nextstate=resume gpu02")
    wait_for(bed, "gpu02 back in service after its reboot",
             lambda nodes: nodes["gpu02"][0] in ("idle", "mixed") and not nodes["gpu02"][1], timeout=120)
    [directory] = bed.run(node, f"ls {EVIDENCE}").split()
    assert re.fullmatch(r"\d{8}T\d{6}Z-xid79-gpu3-reboot", directory), directory
    kept = f"{EVIDENCE}/{directory}"
    reason = bed.run(node, f"cat {kept}/reason.txt")
    assert "held: cf:gpu:xid79 gpu3 0000:5d:00" in reason and "before: reboot" in reason
    assert XID79 in bed.run(node, f"cat {kept}/kernel-records.log")   # the boot's records, gone since
    assert bed.run(node, f"cat {RECORDS}") == ""
    assert f"evidence kept in {kept} before a reboot" in bed.run(node, f"cat {EVENTS}")
    assert bed.run(node, f"stat -c %a {kept}").strip() == "700"
    bed.run(node, f"rm -rf {EVIDENCE}")
