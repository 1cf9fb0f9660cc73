"""`clusterforge check`'s stack check: a pinned package at another version, one not held, a daemon of the stack not
running (the fabric manager, without which slurmd does not start), and a kernel that runs another driver than the
one installed (a reboot owed) are each a finding; a host as the inventory says has none."""

from __future__ import annotations

from pathlib import Path

from clusters import gpu_profile, small_cluster

from clusterforge.check import stack
from clusterforge.model import GpuStack, Stack, resolve

OLD, NEW = "550.163.01-1", "550.172.05-1"
VALID = resolve(small_cluster(profiles=(gpu_profile(nvswitch=True),), stack=Stack(
    slurm="22.05.8-4+deb12u3", gpu=GpuStack(driver=OLD, fabric_manager=OLD, persistenced=OLD))))
NODE = next(m for m in VALID.machines if m.name == "gpu01")
CTL = next(m for m in VALID.machines if m.name == "ctl")
GOOD = {"slurmd": ("22.05.8-4+deb12u3", True), "slurm-client": ("22.05.8-4+deb12u3", True),
        "cuda-drivers-550": (OLD, True), "nvidia-fabricmanager-550": (OLD, True), "nvidia-persistenced": (OLD, True)}
RUNNING = {"nvidia-persistenced.service": "active", "nvidia-fabricmanager.service": "active"}


def test_a_node_as_the_inventory_says_has_no_finding_and_says_what_runs():
    detail, findings = stack.compare(VALID, NODE, GOOD, RUNNING, (0, "550.163.01\n" * 8))
    assert findings == []
    assert detail == ("5 pinned package(s) held; driver 550.163.01 loaded; nvidia-persistenced.service active, "
                      "nvidia-fabricmanager.service active")


def test_drift_a_package_moved_one_not_held_and_a_failed_fabric_manager_are_named():
    drifted = {**GOOD, "cuda-drivers-550": (NEW, True), "slurmd": ("22.05.8-4+deb12u3", False),
               "slurm-wlm-basic-plugins": ("22.05.8-4+deb12u3", False)}  # held through slurmd's exact dependency
    _, findings = stack.compare(VALID, NODE, drifted, {**RUNNING, "nvidia-fabricmanager.service": "failed"},
                                (0, "550.163.01\n"))
    assert [f.message for f in findings] == [
        "slurmd is not held: an apt-get upgrade could move it (the deploy holds it)",
        f"cuda-drivers-550 is {NEW}, the inventory pins {OLD} (the deploy moves it)",
        "nvidia-fabricmanager.service is failed: slurmd does not start without it",
    ]


def test_a_kernel_running_another_driver_than_the_installed_one_owes_a_reboot():
    mismatch = (18, "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.172\n")
    _, findings = stack.compare(VALID, NODE, GOOD, RUNNING, mismatch)
    assert [f.message for f in findings] == ["the kernel runs another driver than the one installed (nvidia-smi: "
                                             "Driver/library version mismatch): a reboot is owed"]
    _, findings = stack.compare(VALID, NODE, GOOD, RUNNING, (0, "550.144.03\n"))
    assert [f.message for f in findings] == ["the kernel runs driver 550.144.03, the inventory pins 550.163.01: a "
                                             "reboot is owed"]


def test_a_service_host_is_checked_for_slurms_packages_only():
    assert stack.names(VALID, CTL) == list(stack.SLURM_PACKAGES) and not stack.has_driver(VALID, CTL)
    _, findings = stack.compare(VALID, CTL, {"slurmctld": ("22.05.8-4+deb12u2", True)}, {}, None)
    assert [f.message for f in findings] == ["slurmctld is 22.05.8-4+deb12u2, the inventory pins 22.05.8-4+deb12u3"]


def test_dpkg_query_lines_give_installed_packages_and_their_holds():
    text = "slurmd hi 22.05.8-4+deb12u3\nslurmctld ii 22.05.8-4+deb12u3\nsackd un <none>\n"
    assert stack.dpkg(text) == {"slurmd": ("22.05.8-4+deb12u3", True), "slurmctld": ("22.05.8-4+deb12u3", False)}


def test_the_driver_version_a_real_driver_580_prints_is_read_as_the_loaded_driver():
    # fixtures/h200-pcie-x1.nvidia-smi-driver-version.csv: the query check runs, captured on a lent H200 machine.
    smi = (0, (Path(__file__).parent / "fixtures" / "h200-pcie-x1.nvidia-smi-driver-version.csv").read_text())
    assert smi[1] == "580.159.04\n"
    _, findings = stack.compare(VALID, NODE, GOOD, RUNNING, smi)
    assert [f.message for f in findings] == ["the kernel runs driver 580.159.04, the inventory pins 550.163.01: a "
                                             "reboot is owed"]
