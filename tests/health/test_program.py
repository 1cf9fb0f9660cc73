"""The node health program as a node runs it: the one file the deploy ships (render/programs.py), run by Debian's
python3 in isolated mode without site-packages, with no PATH beyond the stand-ins', as slurmd runs it. (That the
file imports only the standard library is tests/render/test_programs.py's, as any user.)

Stand-ins (this machine has no GPU, no slurmd of its own to ask, no real node state): `nvidia-smi` prints the
capture of a real 8 x H100 machine (tests/check/fixtures), less the GPUs a test hides or with one changed;
`slurmd -C` prints a DGX H100's layout; `scontrol` is the one Slurm stand-in's (tests/slurm_standin), which keeps
the node's state, its reason and the reservations, and records every command (tests/health_node.py); `systemctl`
answers from a file. The device files are links to /dev/null, a character device. The kernel is the
test's too: its log is a root-owned file of records in /dev/kmsg's format, its boot id a file the test changes for a
reboot, so nothing this machine's kernel logged decides a test (tests/health/test_xid.py reads a real capture). The
extra source a test cluster uses is a second such file.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import replace

import pytest

from clusterforge.health.expect import Hca
from health_node import SMI, Node, wait_until, without_gpus

from clusterforge.slurm import repairs
from clusterforge.slurm.commands import Answer

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the extra kernel-log source must be root's (CI is root)")


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path)


def test_a_healthy_node_is_left_as_it_is(node):
    done = node.run()
    assert done.returncode == 0, done.stdout + done.stderr
    assert node.updates == []
    assert node.state == "IDLE"
    assert (node.state_dir / "last-check").read_text().split()[1:] == ["none", "0", "finding(s)"]


def test_a_gpu_gone_drains_the_node_naming_it_and_its_return_resumes_it(node):
    node.set(smi=without_gpus(SMI, {3}))
    done = node.run()
    assert done.returncode == 1
    assert node.state == "IDLE+DRAIN"
    assert node.reason.startswith(f"cf:gpu:missing gpu3 {node.dev}/nvidia3 not seen by nvidia-smi (7 of 8 GPUs)")
    node.set(smi=SMI)
    done = node.run()
    assert done.returncode == 0, done.stdout
    assert node.state == "IDLE"
    assert node.updates[-1] == "scontrol update NodeName=gpu01 State=UNDRAIN"


@pytest.mark.parametrize("type_", ["nvidia_h100_80gb_hbm3", "h100_80gb", "H100", "80gb_hbm3"])
def test_a_gpu_type_slurm_matches_to_the_gpus_name_never_drains(node, type_):
    # Slurm's own name for nvidia-smi's "NVIDIA H100 80GB HBM3" (autodetection's), or any part of it.
    node.expect = replace(node.expect, gpu_type=type_)
    assert node.run().returncode == 0 and node.updates == []


def test_a_gpu_of_another_model_drains_the_node(node):
    node.expect = replace(node.expect, gpu_type="h200")
    node.run()
    assert node.reason.startswith("cf:gpu:model gpu0 0000:18:00 is a NVIDIA H100 80GB HBM3, not h200")


def test_a_missing_device_file_is_named(node):
    (node.dev / "nvidia5").unlink()
    node.run()
    assert node.reason.startswith(f"cf:gpu:missing gpu5 {node.dev}/nvidia5 missing")


def test_an_admins_drain_and_slurms_are_never_touched(node):
    for state, reason in (("IDLE+DRAIN", "disk swap"), ("IDLE+DRAIN", "Kill task failed"),
                          ("DOWN", "Not responding")):
        node.set(state=state, reason=reason, smi=without_gpus(SMI, {0}))
        node.run()
        node.set(smi=SMI)
        node.run()
        assert (node.state, node.reason) == (state, reason)
    assert node.updates == []


def test_the_deploys_removal_drain_is_not_the_health_checks_to_lift(node):
    node.set(state="IDLE+DRAIN", reason="cf:removed from the inventory")
    done = node.run()
    assert done.returncode == 0
    assert node.updates == []


def test_a_hardware_xid_drains_that_node_naming_the_gpu_and_holds_it_until_a_reboot(node):
    node.kernel("NVRM: Xid (PCI:0000:5d:00): 79, pid=1912, GPU has fallen off the bus.")
    done = node.run()
    assert done.returncode == 1
    assert node.reason.startswith("cf:gpu:xid79 gpu3 0000:5d:00 the GPU fell off the bus: reboot")
    # The event is over, the GPU may not be: in the same boot the node stays drained, and the event is not counted
    # again.
    done = node.run()
    assert "keep gpu01: drained for a hardware fault until the node reboots" in done.stdout
    assert "xid79" not in done.stdout
    assert node.state == "IDLE+DRAIN"
    # After a reboot, a passing check resumes it.
    node.reboot()
    node.run()
    assert node.state == "IDLE"


XID154 = ("NVRM: Xid (PCI:0000:5d:00): 154, pid=0, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot "
          "Required)")


@pytest.mark.parametrize("state, reason", [("IDLE+DRAIN", "disk swap"), ("IDLE+DRAIN", "Kill task failed"),
                                           ("DOWN", "Not responding")], ids=["admin", "slurm", "down"])
def test_a_hardware_fault_seen_while_another_holds_the_node_drains_it_once_released(node, state, reason):
    node.set(state=state, reason=reason)
    node.kernel(XID154)
    done = node.run()
    assert "leave gpu01: held by another" in done.stdout
    assert "held until the node reboots: cf:gpu:xid154 gpu3 0000:5d:00" in done.stdout
    assert node.updates == [] and (node.state, node.reason) == (state, reason)
    assert "held until the node reboots: cf:gpu:xid154" in node.run().stdout  # the event counted once, kept
    # Whoever held it lets it go; the next job's prolog comes before the next check: the node drains, the job
    # goes elsewhere.
    node.set(state="IDLE", reason="")
    assert node.run("prolog", SLURM_JOB_ID="7", SLURM_JOB_GPUS="0").returncode == 1
    assert node.state == "IDLE+DRAIN" and node.reason.startswith("cf:gpu:xid154 gpu3 0000:5d:00")
    assert "keep gpu01: drained for a hardware fault until the node reboots" in node.run().stdout
    # Lifted by hand in the same boot: the periodic check drains it again.
    node.set(state="IDLE", reason="")
    assert node.run().returncode == 1
    assert node.reason.startswith("cf:gpu:xid154 gpu3")
    # A reboot ends it.
    node.reboot()
    assert node.run().returncode == 0
    assert node.state == "IDLE"


LISTED = "scontrol -o show reservation"


def listings(node) -> int:
    return node.asked.count(LISTED)


@pytest.mark.parametrize("hold", ["cf-gate-new-gpu01", "cf-gate-repaired-gpu01"])
def test_inside_the_admission_gates_hold_a_finding_drains_the_node_and_its_end_lifts_the_drain(node, hold):
    node.reserve(hold)   # as the gate's: MAINT,IGNORE_JOBS, the node alone
    node.set(smi=without_gpus(SMI, {3}))
    done = node.run()
    assert done.returncode == 1
    assert f"(inside the admission gate's hold {hold})" in done.stdout
    assert node.state == "IDLE+DRAIN" and node.reason.startswith("cf:gpu:missing gpu3")
    assert listings(node) == 1   # the maintenance the node shows is told from an admin's by the reservations
    node.set(smi=SMI)
    assert node.run().returncode == 0
    assert node.state == "IDLE" and node.updates[-1] == "scontrol update NodeName=gpu01 State=UNDRAIN"
    assert node.reservations == [hold]   # the hold is the gate's to lift


def test_a_hardware_fault_while_the_gates_test_runs_inside_its_hold_drains_the_node(node):
    node.reserve("cf-gate-new-gpu01")
    node.set(state="ALLOCATED")
    node.kernel(XID154)
    assert node.run().returncode == 1
    assert node.state == "ALLOCATED+DRAIN" and node.reason.startswith("cf:gpu:xid154 gpu3 0000:5d:00")


@pytest.mark.parametrize("reservations", [
    [("admin_fw", "gpu[01-02]", "MAINT")],
    [("cf-gate-new-gpu01", "gpu01", "MAINT,IGNORE_JOBS"), ("admin_fw", "gpu[01-02]", "MAINT")],
    [("admin_fw", "gpu01", "MAINT,IGNORE_JOBS"), ("cf-gate-repaired-gpu01", "gpu01", "MAINT,IGNORE_JOBS")],
], ids=["admins", "admins-over-the-gates", "gates-over-the-admins"])
def test_a_node_in_an_admins_maintenance_reservation_is_left_alone_though_the_gate_holds_it_too(node, reservations):
    for name, nodes, flags in reservations:
        node.reserve(name, nodes, flags)
    node.set(smi=without_gpus(SMI, {3}))
    node.kernel(XID154)
    done = node.run()
    assert "leave gpu01: held by another: IDLE+MAINTENANCE+RESERVED; held until the node reboots" in done.stdout
    assert node.updates == [] and (node.state, node.reason) == ("IDLE", "")


def test_an_admins_reservation_that_is_not_maintenance_or_not_started_leaves_the_gates_hold_the_checks(node):
    node.reserve("cf-gate-new-gpu01")
    node.reserve("admin_jobs", "gpu[01-02]", "IGNORE_JOBS")
    node.reserve("admin_later", "gpu[01-02]", "MAINT", state="INACTIVE")
    node.set(smi=without_gpus(SMI, {3}))
    assert node.run().returncode == 1
    assert node.reason.startswith("cf:gpu:missing gpu3")


def test_the_gates_failure_drain_is_neither_lifted_nor_replaced_by_the_check(node):
    node.reserve("cf-gate-new-gpu01")
    node.set(state="IDLE+DRAIN", reason="cf:gate:allreduce 402 GB/s < 460")
    done = node.run()
    assert done.returncode == 0
    assert "leave gpu01: held by another: cf:gate:allreduce 402 GB/s < 460" in done.stdout
    node.set(smi=without_gpus(SMI, {3}))
    assert "leave gpu01: held by another: cf:gate:allreduce 402 GB/s < 460" in node.run().stdout
    assert node.updates == [] and node.reason.startswith("cf:gate:allreduce 402 GB/s < 460")
    assert listings(node) == 0   # drained: the reason says whose it is


def test_maintenance_that_cannot_be_told_the_gates_is_taken_as_another_s(node):
    node.reserve("cf-gate-new-gpu01")
    with node.controller() as slurm:   # a listing that is not one: an error line before the records
        listing = slurm.run(["scontrol", "-o", "show", "reservation"]).out
        slurm.refuse["scontrol show reservation"] = Answer(
            0, "slurm_load_reservations error: Zero Bytes were transmitted or received\n" + listing, "")
        slurm.asked.clear()
    node.set(smi=without_gpus(SMI, {3}))
    done = node.run()
    assert "gpu01's maintenance is taken as another's" in done.stdout
    assert "leave gpu01: held by another" in done.stdout and node.updates == []


def test_a_node_in_no_maintenance_never_asks_for_the_reservations(node):
    node.set(smi=without_gpus(SMI, {3}))
    node.run()
    node.set(smi=SMI)
    node.run()
    assert node.state == "IDLE" and listings(node) == 0


def test_a_hardware_xid_that_recurs_after_the_reboot_holds_the_node_again(node):
    node.kernel("NVRM: Xid (PCI:0000:5d:00): 79, pid=1912, GPU has fallen off the bus.")
    node.run()
    reason = node.reason
    assert reason.startswith("cf:gpu:xid79 gpu3")
    # Rebooted (by hand, the drain kept), and the same Xid again in the new boot: the same reason, a new hold.
    node.reboot()
    node.kernel("NVRM: Xid (PCI:0000:5d:00): 79, pid=77, GPU has fallen off the bus.")
    assert "keep gpu01: drained for a hardware fault until the node reboots" in node.run().stdout
    assert "keep gpu01: drained for a hardware fault until the node reboots" in node.run().stdout
    assert node.state == "IDLE+DRAIN" and node.reason == reason
    node.reboot()
    node.run()
    assert node.state == "IDLE"


def test_a_drain_an_earlier_release_set_for_a_hardware_xid_is_still_held_in_its_boot(node):
    node.set(state="IDLE+DRAIN", reason="cf:gpu:xid79 gpu3 0000:5d:00 the GPU fell off the bus: reboot")
    node.state_dir.mkdir()
    (node.state_dir / "xid-drain-boot").write_text("boot-1")
    assert "keep gpu01: drained for a hardware fault until the node reboots" in node.run().stdout
    node.reboot()
    node.run()
    assert node.state == "IDLE"


XID95 = "NVRM: Xid (PCI:0000:5d:00): 95, pid=3434, Uncontained memory error"  # reset class, gpu3


def test_a_fault_a_gpu_reset_ends_is_released_by_a_reset_of_that_gpu_through_the_program(node):
    node.kernel(XID95)
    node.run()
    assert node.reason.startswith("cf:gpu:xid95 gpu3 0000:5d:00")
    assert "until its GPU is reset or the node reboots" in node.run().stdout
    node.set(**{"reset-fails": ""})  # a process still on it: nvidia-smi refuses, nothing is released
    done = node.run("reset", "gpu3")
    assert done.returncode == 1 and "the GPU was not reset, its faults are still held" in done.stdout
    assert node.state == "IDLE+DRAIN"
    (node.root / "reset-fails").unlink()
    done = node.run("reset", "gpu3")
    assert (node.root / "resets").read_text().splitlines()[-1] == "nvidia-smi -r -i 00000000:5D:00.0"
    assert "released by the reset of 0000:5d:00: cf:gpu:xid95 gpu3" in done.stdout, done.stdout
    assert done.returncode == 0 and node.state == "IDLE"  # the check that follows lifts the drain


def test_a_reset_ends_neither_a_fault_that_needs_a_reboot_nor_another_gpus(node):
    node.kernel("NVRM: Xid (PCI:0000:5d:00): 79, pid=1912, GPU has fallen off the bus.")  # gpu3, reboot class
    node.kernel("NVRM: Xid (PCI:0000:9a:00): 95, pid=3434, Uncontained memory error")   # gpu4, reset class
    node.run()
    for target in ("gpu3", "0000:9a:00"):
        done = node.run("reset", target)
        assert node.state == "IDLE+DRAIN", done.stdout
    assert "still held until the node reboots: cf:gpu:xid79 gpu3" in done.stdout
    assert "released by the reset of 0000:9a:00: cf:gpu:xid95 gpu4" in done.stdout
    assert node.run("reset", "gpu9").returncode == 2  # no such GPU: nothing asked of nvidia-smi
    assert len((node.root / "resets").read_text().splitlines()) == 2


def test_xid_154_drains_by_the_recovery_action_it_names_and_none_records(node):
    node.kernel("NVRM: Xid (PCI:0000:5d:00): 154, pid=0, GPU recovery action changed from 0x2 (Node Reboot "
                "Required) to 0x0 (None)")
    assert node.run().returncode == 0 and node.updates == []
    node.kernel("NVRM: Xid (PCI:0000:5d:00): 154, pid=0, GPU recovery action changed from 0x0 (None) to 0x1 (GPU "
                "Reset Required)")
    node.run()
    assert node.reason.startswith("cf:gpu:xid154 gpu3 0000:5d:00 recovery action: GPU Reset Required")
    node.run("reset", "gpu3")
    assert node.state == "IDLE"


def test_a_test_clusters_boot_id_file_stands_for_the_kernels_where_it_is_there_and_roots_alone(node):
    stand_in = node.root / "testbed-boot-id"
    node.expect = replace(node.expect, boot_id_file=str(stand_in))
    node.kernel("NVRM: Xid (PCI:0000:5d:00): 79, pid=1912, GPU has fallen off the bus.")
    node.run()  # no such file yet: the kernel's boot id (here the test's)
    assert node.state == "IDLE+DRAIN"
    stand_in.write_text("testbed-boot-2\n")
    stand_in.chmod(0o666)
    node.run()
    assert node.state == "IDLE+DRAIN"  # writable by anyone: not read
    stand_in.chmod(0o644)
    node.kmsg.write_text("")  # a reboot's kernel log starts again
    node.run()
    assert node.state == "IDLE"  # another boot: the fault ended with the one it was seen in


def test_report_shows_the_faults_held_in_this_boot(node):
    node.set(state="IDLE+DRAIN", reason="disk swap")
    node.kernel(XID154)
    node.run()
    report = json.loads(node.run("report").stdout)
    assert [(f["reason"][:19], f["held"]) for f in report["findings"]] == [("cf:gpu:xid154 gpu3 ", True)]


def test_an_applications_xid_is_recorded_once_and_never_drains(node):
    node.kernel("NVRM: Xid (PCI:0000:18:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception")
    done = node.run()
    assert done.returncode == 0
    assert "record: cf:gpu:xid13 gpu0 0000:18:00 graphics engine exception, the application's fault" in done.stdout
    assert node.updates == []
    assert "cf:gpu:xid13 gpu0" in (node.state_dir / "events.log").read_text()
    again = node.run()
    assert "xid13" not in again.stdout


def test_a_record_written_from_user_space_never_drains(node):
    # What `logger` or a write to /dev/kmsg gives: facility user (1 << 3), never the kernel's 0.
    node.kernel("NVRM: Xid (PCI:0000:5d:00): 79, pid=1912, GPU has fallen off the bus.", prefix=(1 << 3) | 4)
    done = node.run()
    assert done.returncode == 0, done.stdout
    assert node.updates == []


def test_a_kernel_record_quoting_a_users_program_name_never_drains(node):
    # The kernel's own warning (facility 0) about a program with an executable stack names it whole: any user can name
    # a program like an Xid line.
    node.kernel("process '/tmp/x/NVRM: Xid (PCI:0000:5d:00): 79, pid=1912, GPU has fallen off the bus.' started "
                "with executable stack")
    done = node.run()
    assert done.returncode == 0, done.stdout
    assert node.updates == [] and "xid" not in done.stdout


def test_the_extra_source_counts_as_the_kernels_log_does(node):
    node.kernel("NVRM: Xid (PCI:0000:5d:00): 79, pid=1912, GPU has fallen off the bus.", extra=True)
    node.run()
    assert node.reason.startswith("cf:gpu:xid79 gpu3 0000:5d:00")


def test_an_extra_source_anyone_but_root_could_write_is_ignored(node):
    node.kernel("NVRM: Xid (PCI:0000:5d:00): 79, pid=1912, GPU has fallen off the bus.", extra=True)
    node.kernel_log.chmod(0o666)
    done = node.run()
    assert f"note: {node.kernel_log} ignored: not root's alone" in done.stdout
    assert node.updates == []


def test_the_inventory_may_make_an_xid_drain_or_only_be_recorded(node):
    node.expect = replace(node.expect, xid_actions={79: "record", 13: "drain"})
    node.kernel("NVRM: Xid (PCI:0000:5d:00): 79, pid=1912, GPU has fallen off the bus.")
    node.kernel("NVRM: Xid (PCI:0000:18:00): 13, pid=7, Graphics SM Warp Exception")
    node.run()
    assert node.reason.startswith("cf:gpu:xid13 gpu0 0000:18:00")


def test_a_hung_nvidia_smi_is_itself_a_finding_and_the_check_still_ends(node):
    node.set(**{"smi-hangs": ""})
    done = node.run()
    assert done.returncode == 1
    assert node.reason.startswith("cf:gpu:probe gpus: nvidia-smi -q gave no answer in time")


def test_report_prints_the_findings_and_changes_nothing(node):
    node.set(smi=without_gpus(SMI, {1}))
    node.kernel("NVRM: Xid (PCI:0000:18:00): 13, pid=7, Graphics SM Warp Exception")
    done = node.run("report")
    found = json.loads(done.stdout)
    assert [f["reason"][:20] for f in found["findings"]] == ["cf:gpu:missing gpu1 ", "cf:gpu:xid13 gpu0 00"]
    assert node.updates == [] and not (node.state_dir / "xid-cursors.json").exists()


def test_other_probes_name_what_is_wrong(node):
    node.expect = replace(node.expect, mounts=("/", "/no/such/mount"), real_memory=3_000_000,
                        hcas=(Hca("mlx5_0", 400),))
    node.set(inactive="munge\n")
    done = node.run("report")
    reasons = [f["reason"] for f in json.loads(done.stdout)["findings"]]
    assert "cf:mount /no/such/mount not mounted" in reasons
    assert "cf:hw:memory 2063425 MiB, below RealMemory 3000000" in reasons
    assert "cf:daemon munge inactive" in reasons
    assert any(r.startswith("cf:ib:probe infiniband: ibstat exit 127") for r in reasons)



def test_a_sites_own_probe_drains_with_what_it_said_last_and_one_others_could_write_is_not_run(node):
    node.site_dir.mkdir()
    probe = node.site_dir / "50-scratch-space"
    probe.write_text("#!/bin/sh\necho checking /scratch\necho '/scratch is 98% full'\nexit 1\n")
    probe.chmod(0o755)
    (node.site_dir / "README").write_text("not executable: not a probe\n")
    node.run()
    assert node.reason.startswith("cf:site:50-scratch-space /scratch is 98% full")
    probe.write_text("#!/bin/sh\nexit 0\n")
    node.run()
    assert node.state == "IDLE"
    probe.chmod(0o757)
    done = node.run("report")
    assert [f["reason"] for f in json.loads(done.stdout)["findings"]] == [
        "cf:site:probe site: 50-scratch-space not run: not root's alone"]


# The job boundaries: Slurm's Prolog and Epilog, the same program in another mode, with Slurm's job variables.

def with_processes(text: str, processes: dict[int, list[tuple[int, str, int]]]) -> str:
    """The capture with compute processes on the GPUs of these minor numbers, in the "Processes" section's format
    of nvidia-smi -q where a GPU has some (derived here: the capture was taken on idle GPUs)."""
    head, *blocks = text.split("\nGPU ")
    out = []
    for block in blocks:
        for minor, listed in processes.items():
            if f"Minor Number                          : {minor}\n" in block:
                section = "    Processes\n" + "".join(
                    f"        GPU instance ID                   : N/A\n"
                    f"        Compute instance ID               : N/A\n"
                    f"        Process ID                        : {pid}\n"
                    f"            Type                          : C\n"
                    f"            Name                          : {name}\n"
                    f"            Used GPU Memory               : {mib} MiB\n" for pid, name, mib in listed)
                block = block.replace("    Processes                             : None\n", section)
        out.append(block)
    return "\nGPU ".join([head, *out])


def test_a_prolog_on_free_gpus_passes_without_asking_slurm_anything(node):
    node.set(smi=with_processes(SMI, {5: [(os.getpid(), "python", 30000)]}))
    # GPU 5 is busy, but the job has 0 and 1 (gres indices, the inventory's numbers: minor = index here).
    done = node.run("prolog", SLURM_JOB_ID="41", SLURM_JOB_GPUS="0,1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert node.asked == []


def test_a_prolog_finding_a_process_on_the_jobs_gpu_fails_and_drains_the_node_naming_it(node):
    node.set(smi=with_processes(SMI, {1: [(os.getpid(), "python", 30000)]}))
    done = node.run("prolog", SLURM_JOB_ID="41", SLURM_JOB_GPUS="0,1")
    assert done.returncode == 1  # Slurm requeues the job
    assert node.state == "IDLE+DRAIN"
    assert node.reason.startswith(f"cf:job:foreign gpu1 0000:2a:00 busy: pid {os.getpid()} python 30000 MiB")
    assert "job 41 not started on gpu01: Slurm requeues it" in done.stdout


def test_a_prolog_on_a_node_missing_a_gpu_fails_and_drains_it_as_the_check_would(node):
    node.set(smi=without_gpus(SMI, {6}))
    done = node.run("prolog", SLURM_JOB_ID="41", SLURM_JOB_GPUS="0")
    assert done.returncode == 1
    assert node.reason.startswith(f"cf:gpu:missing gpu6 {node.dev}/nvidia6 not seen by nvidia-smi")


def test_a_prolog_fails_on_an_admins_drained_node_but_leaves_the_drain_alone(node):
    node.set(state="IDLE+DRAIN", reason="disk swap", smi=without_gpus(SMI, {6}))
    done = node.run("prolog", SLURM_JOB_ID="41", SLURM_JOB_GPUS="0")
    assert done.returncode == 1
    assert (node.state, node.reason, node.updates) == ("IDLE+DRAIN", "disk swap", [])


def test_an_epilog_finding_a_process_that_outlived_its_job_drains_until_the_gpu_is_free(node):
    # A process outside any job (this test's own: no job_<id> in its cgroup) on the ended job's GPU.
    node.set(smi=with_processes(SMI, {0: [(os.getpid(), "python", 1200)]}))
    done = node.run("epilog", SLURM_JOB_ID="41", SLURM_JOB_GPUS="0")
    # Drained with clusterforge's reason, the epilog succeeds: Slurm adds no "Epilog error" of its own.
    assert done.returncode == 0, done.stdout
    assert node.reason.startswith(f"cf:job:leftover gpu0 0000:18:00 pid {os.getpid()} python 1200 MiB "
                                  "outlived its job")
    # The periodic check keeps that drain while the process holds the GPU, and lifts it once the GPU is free.
    done = node.run()
    assert "keep gpu01: not clear yet: cf:job:leftover gpu0" in done.stdout
    assert node.state == "IDLE+DRAIN"
    node.set(smi=SMI)
    node.run()
    assert node.state == "IDLE"
    assert node.updates[-1] == "scontrol update NodeName=gpu01 State=UNDRAIN"


def test_the_periodic_check_never_drains_for_a_process_outside_jobs(node):
    # An admin's own GPU tool on an idle node: not a reason to take the node away.
    node.set(smi=with_processes(SMI, {0: [(os.getpid(), "dcgmproftester12", 900)]}))
    done = node.run()
    assert done.returncode == 0, done.stdout
    assert node.updates == []


def test_an_epilog_after_a_clean_job_passes(node):
    done = node.run("epilog", SLURM_JOB_ID="41", SLURM_JOB_GPUS="0,1,2,3,4,5,6,7")
    assert done.returncode == 0
    assert node.asked == []


# The reboot gate: the check slurmd runs at its start, before registering, on a node rebooted through Slurm.


def test_a_node_back_sick_from_a_reboot_through_slurm_is_drained_once_it_has_registered(node):
    # What `scontrol reboot ASAP nextstate=resume` leaves until slurmd registers, which lifts any drain set now.
    node.expect = replace(node.expect, reboot_wait_s=30)
    node.set(state="DOWN+DRAIN+REBOOT_ISSUED", reason="Reboot ASAP : reboot issued", smi=without_gpus(SMI, {2}))
    done = node.run()
    assert "wait gpu01: back from a reboot through Slurm, it is drained once it has registered" in done.stdout
    assert node.updates == []
    time.sleep(3)
    assert node.updates == []  # not while Slurm still reboots it
    node.set(state="IDLE", reason="")  # registered: back in service with no reason
    assert wait_until(lambda: node.state == "IDLE+DRAIN", timeout=20), node.state
    assert node.reason.startswith(f"cf:gpu:missing gpu2 {node.dev}/nvidia2 not seen by nvidia-smi")


def test_the_gate_a_launched_check_starts_runs_the_program_it_was_launched_from(node):
    """The launcher imports through a descriptor of its own (/proc/self/fd/N), which the gate is given: it runs,
    and runs that program, though the deploy has since renamed another over the file."""
    node.expect = replace(node.expect, reboot_wait_s=30)
    node.set(state="DOWN+DRAIN+REBOOT_ISSUED", reason="Reboot ASAP : reboot issued", smi=without_gpus(SMI, {2}))
    done = node.launch()
    assert "wait gpu01: back from a reboot through Slurm" in done.stdout, done.stdout + done.stderr
    newer = node.root / "newer.pyz"
    newer.write_bytes(b"not a program")
    newer.rename(node.program)
    node.set(state="IDLE", reason="")  # registered
    assert wait_until(lambda: node.state == "IDLE+DRAIN", timeout=20), node.state
    assert node.reason.startswith("cf:gpu:missing gpu2")


def test_a_node_back_healthy_from_a_reboot_returns_to_service(node):
    node.expect = replace(node.expect, reboot_wait_s=30)
    node.set(state="DOWN+DRAIN+REBOOT_ISSUED", reason="Reboot ASAP : reboot issued", smi=without_gpus(SMI, {2}))
    node.run()
    node.set(state="IDLE", reason="", smi=SMI)  # the GPU back before the node registered
    assert wait_until(lambda: (node.state_dir / "last-check").exists() and
                      " none 0 finding(s)" in (node.state_dir / "last-check").read_text(), timeout=20)
    assert node.updates == []


# The repair loop's reboot asks no next state: the registration keeps its drain, which the gate's check owns, with
# what slurmctld added to its reason when it issued the reboot (set_node_reason).
LOOPS = repairs.reboot_drain("xid79", 1, 2).reason + " : reboot issued"


def test_a_node_back_healthy_from_the_loops_reboot_has_the_loops_drain_lifted_once_it_has_registered(node):
    node.expect = replace(node.expect, reboot_wait_s=30)
    node.set(state="DOWN+DRAIN+REBOOT_ISSUED", reason=LOOPS)
    done = node.run()
    assert f"wait gpu01: back from the repair loop's reboot, checked once it has registered ({LOOPS})" in done.stdout
    time.sleep(3)
    assert node.updates == []  # not while Slurm still reboots it
    node.set(state="IDLE+DRAIN", reason=LOOPS)  # registered: the drain and its reason kept
    assert wait_until(lambda: node.state == "IDLE", timeout=20), node.state
    assert node.updates == ["scontrol update NodeName=gpu01 State=UNDRAIN"], node.updates


def test_a_node_back_sick_from_the_loops_reboot_is_drained_over_the_loops_reason(node):
    node.expect = replace(node.expect, reboot_wait_s=30)
    node.set(state="DOWN+DRAIN+REBOOT_ISSUED", reason=LOOPS, smi=without_gpus(SMI, {2}))
    assert "wait gpu01: back from the repair loop's reboot" in node.run().stdout
    node.set(state="IDLE+DRAIN", reason=LOOPS)
    assert wait_until(lambda: node.reason.startswith("cf:gpu:missing gpu2"), timeout=20), node.reason
    assert "DRAIN" in node.state


def test_an_admins_drain_over_the_loops_reboot_reason_is_left_after_the_registration(node):
    node.expect = replace(node.expect, reboot_wait_s=30)
    node.set(state="DOWN+DRAIN+REBOOT_ISSUED", reason=LOOPS)
    assert "wait gpu01: back from the repair loop's reboot" in node.run().stdout
    node.set(state="IDLE+DRAIN", reason="disk swap")  # the admin's drain, kept by the registration
    assert wait_until(lambda: (node.state_dir / "last-check").exists(), timeout=20)
    assert node.updates == [] and node.reason == "disk swap" and node.state == "IDLE+DRAIN"


def test_the_loops_reboot_reason_at_a_check_of_a_registered_node_is_another_s(node):
    """Owned only by the gate the check at slurmd's start starts: a periodic check leaves it."""
    node.set(state="IDLE+DRAIN", reason=LOOPS)
    done = node.run()
    assert "leave gpu01: held by another" in done.stdout and node.updates == []


def test_the_epilog_after_a_failed_prolog_keeps_the_prologs_reason(node):
    node.set(smi=with_processes(SMI, {0: [(os.getpid(), "python", 30000)]}))
    assert node.run("prolog", SLURM_JOB_ID="41", SLURM_JOB_GPUS="0").returncode == 1
    reason = node.reason
    assert reason.startswith("cf:job:foreign gpu0")
    # Slurm runs the epilog of the job it then requeues: the same process is there, the reason says what happened.
    assert node.run("epilog", SLURM_JOB_ID="41", SLURM_JOB_GPUS="0").returncode == 0
    assert node.reason == reason and len(node.updates) == 1


def test_the_installed_launcher_runs_a_check_without_argument_and_a_report_when_asked(node):
    from clusterforge.model.settings import HEALTH_PROGRAM
    from clusterforge.render.health import PROGRAM, launcher

    text = launcher(HEALTH_PROGRAM).replace(repr(PROGRAM), repr(str(node.program)))
    assert repr(str(node.program)) in text  # the installed launcher, run on the program as the deploy ships it
    program = node.root / "clusterforge-health"
    program.write_text(text)
    program.chmod(0o755)
    node.set(smi=without_gpus(SMI, {4}))
    (node.root / "health.json").write_text(node.expect.to_json())
    env = {"PATH": f"{node.bin}:/usr/bin:/bin", "NODE": str(node.root), "SLURMD_NODENAME": "gpu01",
           "CLUSTERFORGE_HEALTH_EXPECT": str(node.root / "health.json"),
           "CLUSTERFORGE_HEALTH_STATE": str(node.state_dir), "CLUSTERFORGE_HEALTH_SITE_DIR": str(node.site_dir),
           **node.controller_env}
    report = subprocess.run([str(program), "report"], env=env, capture_output=True, text=True, check=False)
    assert json.loads(report.stdout)["findings"][0]["reason"].startswith("cf:gpu:missing gpu4")
    assert node.updates == []  # a report changes nothing
    subprocess.run([str(program)], env=env, capture_output=True, text=True, check=False)
    assert node.state == "IDLE+DRAIN"  # as slurmd runs it: the check


def test_a_hardware_xid_found_at_boot_is_the_gates_reason_once_the_node_registers(node):
    node.expect = replace(node.expect, reboot_wait_s=30)
    node.set(state="DOWN+DRAIN+REBOOT_ISSUED", reason="Reboot ASAP : reboot issued")
    node.kernel("NVRM: Xid (PCI:0000:5d:00): 79, pid=1912, GPU has fallen off the bus.")
    assert "wait gpu01" in node.run().stdout
    node.set(state="IDLE", reason="")
    assert wait_until(lambda: node.state == "IDLE+DRAIN", timeout=20), node.state
    assert node.reason.startswith("cf:gpu:xid79 gpu3 0000:5d:00")


def metrics_of(node: Node) -> dict[str, float]:
    """node exporter's textfile, as Prometheus' own text parser reads it: "name{labels}" -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    text = (node.root / "textfile" / "clusterforge_health.prom").read_text()
    return {f"{s.name}{{{','.join(f'{k}={v}' for k, v in sorted(s.labels.items()))}}}": s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_with_monitoring_the_check_writes_its_gpus_findings_and_xids_for_node_exporter(node):
    (node.root / "textfile").mkdir()
    node.expect = replace(node.expect, profile="dgx-h100", metrics_dir=str(node.root / "textfile"))
    assert node.run().returncode == 0
    healthy = metrics_of(node)
    assert healthy["clusterforge_health_gpus{node=gpu01,profile=dgx-h100}"] == 8
    assert healthy["clusterforge_health_findings{node=gpu01}"] == 0
    assert abs(healthy["clusterforge_health_last_check_timestamp_seconds{node=gpu01}"] - time.time()) < 60
    node.set(smi=without_gpus(SMI, {3}))
    node.kernel("NVRM: Xid (PCI:0000:5d:00): 79, pid=0, GPU has fallen off the bus.")
    assert node.run().returncode == 1
    sick = metrics_of(node)
    assert sick["clusterforge_health_gpus{node=gpu01,profile=dgx-h100}"] == 7
    assert sick["clusterforge_health_findings{node=gpu01}"] >= 2
    assert sick["clusterforge_health_xid_events_total{node=gpu01,xid=79}"] == 1
    assert node.run().returncode == 1  # the same Xid is not counted twice
    assert metrics_of(node)["clusterforge_health_xid_events_total{node=gpu01,xid=79}"] == 1


def test_without_node_exporters_directory_the_check_writes_no_metrics(node):
    node.expect = replace(node.expect, profile="dgx-h100", metrics_dir=str(node.root / "textfile"))
    assert node.run().returncode == 0
    assert not (node.root / "textfile").exists()
