"""End to end: the pinned stack on the running test cluster, from its own repository of stand-ins with NVIDIA's
package names, two versions of each (testbed/stack-repo.sh, served by its apt proxy): installed at exactly the
inventory's versions and held, left alone by apt-get upgrade and unattended-upgrades; a fabric manager that fails
keeps slurmd down and `clusterforge check` names it; a new driver in the inventory drains the nodes, waits for
their job (none killed), moves them and has Slurm reboot them into it.

What is not real here, and why: no NVIDIA package is installed (the machines have no GPU and the repository is out
of reach); the stand-ins play the packages, and their daemons succeed or fail on demand. A container cannot reboot
its kernel: the test inventory's RebootProgram (testbed/reboot) "loads" the installed driver and restarts slurmd,
counting its uptime from that start (slurmd -b), so that Slurm sees a boot.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from e2e.test_health import sinfo, wait_for
from e2e.testbed import MACHINES, REPO, Testbed

pytestmark = pytest.mark.e2e

CTL, LOGIN = MACHINES["ctl"], MACHINES["login1"]
NODES = ("gpu01", "gpu02")
OLD, NEW = "550.163.01-1", "550.172.05-1"
GPU_PACKAGES = ("cuda-drivers-550", "nvidia-driver-bin", "nvidia-fabricmanager-550", "nvidia-persistenced")
CONTROL = "/run/clusterforge-testbed"


def versions(bed: Testbed, node: str) -> dict[str, str]:
    out = bed.run(MACHINES[node], f"dpkg-query -W -f='${{Package}} ${{Version}}\\n' {' '.join(GPU_PACKAGES)}")
    return dict(line.split() for line in out.splitlines())


def held(bed: Testbed, address: str) -> set[str]:
    return set(bed.run(address, "apt-mark showhold").split())


def check(bed: Testbed, limit: str) -> dict:
    result = subprocess.run([str(REPO / ".venv" / "bin" / "clusterforge"), "check", "--json", "--limit", limit,
                             str(bed.inventory)], check=False, cwd=REPO, env=bed.env(), text=True, capture_output=True,
                            timeout=300)
    return json.loads(result.stdout)


def stack_findings(bed: Testbed, node: str) -> list[str]:
    report = check(bed, node)
    return [f["message"] for o in report["checks"] if o["check"] == "stack" and o["host"] == node
            for f in o["findings"]]


def test_the_stack_is_installed_at_its_pinned_versions_held_and_left_alone_by_upgrades(testbed):
    for node in NODES:
        assert versions(testbed, node) == dict.fromkeys(GPU_PACKAGES, OLD)
        assert {"cuda-drivers-550", "nvidia-fabricmanager-550", "nvidia-persistenced",
                "datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-proprietary",
                "datacenter-gpu-manager-exporter", "slurmd", "slurm-client"} <= held(testbed, MACHINES[node])
        assert testbed.run(MACHINES[node], "systemctl is-active nvidia-fabricmanager nvidia-persistenced "
                                           "nvidia-dcgm nvidia-dcgm-exporter").split() == ["active"] * 4
        # The exporter reads nvidia-dcgm's host engine, as its drop-in says (the stand-in refuses to run without).
        metrics = testbed.run(MACHINES[node], "python3 -c \"import urllib.request; print(urllib.request.urlopen("
                                              "'http://localhost:9400/metrics', timeout=5).read().decode())\"")
        assert 'remote="localhost:5555"' in metrics and 'DCGM_FI_DEV_GPU_TEMP{gpu="0"' in metrics
        assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_4:1,mlx5_5:1" in testbed.run(MACHINES[node], "cat /etc/nccl.conf")
    assert "slurmctld" in held(testbed, CTL) and "slurm-client" in held(testbed, LOGIN)
    node = MACHINES["gpu01"]
    # A newer driver is in the repository: neither apt-get upgrade nor unattended-upgrades, told here to take the
    # repository's packages, moves any pinned package.
    testbed.run(node, "apt-get update -qq")
    upgrade = testbed.run(node, "apt-get -s -o Debug::NoLocking=1 dist-upgrade")
    assert not [line for line in upgrade.splitlines() if line.startswith("Inst ") and
                any(f"Inst {p} " in line for p in (*GPU_PACKAGES, "datacenter-gpu-manager-4-core",
                                                     "datacenter-gpu-manager-exporter", "slurmd"))], upgrade
    allow = "/etc/apt/apt.conf.d/52clusterforge-testbed-allow"
    try:
        testbed.run(node, "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq unattended-upgrades >/dev/null && "
                          f"echo 'Unattended-Upgrade::Origins-Pattern {{ \"origin=clusterforge-testbed\"; }};' "
                          f"> {allow}", 300)
        dry = testbed.run(node, "unattended-upgrade --dry-run --debug 2>&1; true", 300)
        assert "clusterforge-testbed" in dry  # it did consider the repository
        assert not any(p in line for line in dry.splitlines() if "Packages that will be upgraded" in line
                       for p in GPU_PACKAGES), dry
    finally:
        testbed.run(node, f"rm -f {allow}; apt-get purge -y -qq unattended-upgrades >/dev/null 2>&1; true", 300)
    assert versions(testbed, "gpu01") == dict.fromkeys(GPU_PACKAGES, OLD)


def test_a_fabric_manager_that_fails_keeps_slurmd_down_and_check_names_it(testbed):
    node = MACHINES["gpu02"]
    try:
        testbed.run(node, f"mkdir -p {CONTROL} && touch {CONTROL}/fabricmanager-fails && "
                          "systemctl stop nvidia-fabricmanager")
        assert testbed.run(node, "systemctl is-active slurmd; true").strip() != "active"  # Requires= stops it too
        started = testbed.run(node, "systemctl start slurmd 2>&1 && echo started || echo refused").strip()
        assert started.endswith("refused"), started
        assert testbed.run(node, "systemctl is-active slurmd; true").strip() != "active"
        found = stack_findings(testbed, "gpu02")
        assert "nvidia-fabricmanager.service is failed: slurmd does not start without it" in found, found
    finally:
        testbed.run(node, f"rm -f {CONTROL}/fabricmanager-fails; systemctl reset-failed; systemctl start slurmd")
    wait_for(testbed, "gpu02 back", lambda nodes: nodes["gpu02"][0] in ("idle", "mixed"))
    assert stack_findings(testbed, "gpu02") == []


@pytest.fixture
def driver_back(testbed, monkeypatch):
    """The driver the inventory pins is put back after, with a deploy that moves it back and reboots the nodes."""
    yield testbed
    monkeypatch.delenv("CLUSTERFORGE_TESTBED_DRIVER", raising=False)
    back = testbed.deploy("--data", "drain_wait=120")
    assert back.returncode == 0, back.output[-4000:]
    wait_for(testbed, "nodes rebooted into the pinned driver",
             lambda nodes: all(nodes[n][0] in ("idle", "mixed") for n in NODES), timeout=180)
    assert all(versions(testbed, n) == dict.fromkeys(GPU_PACKAGES, OLD) for n in NODES)


def test_a_new_driver_waits_for_the_nodes_job_moves_them_and_slurm_reboots_them_into_it(driver_back, monkeypatch):
    bed = driver_back
    # An admin holds one of the nodes whose driver would move: the deploy changes nothing, and the admin's drain
    # stays (a reboot with nextstate=resume would have lifted it).
    monkeypatch.setenv("CLUSTERFORGE_TESTBED_DRIVER", NEW)
    bed.run(CTL, "scontrol update nodename=gpu01 state=drain reason='RMA gpu3 (admin)'")
    refused = bed.deploy()
    assert refused.returncode != 0
    assert "gpu01: the GPU driver moves, but it is held by another: gpu01 'drained RMA gpu3 (admin)'" in \
        refused.output, refused.output[-4000:]
    nodes = sinfo(bed)
    assert nodes["gpu01"][1] == "RMA gpu3 (admin)" and "drain" not in nodes["gpu02"][0]
    assert all(versions(bed, n) == dict.fromkeys(GPU_PACKAGES, OLD) for n in NODES)
    bed.run(CTL, "scontrol update nodename=gpu01 state=undrain")
    monkeypatch.delenv("CLUSTERFORGE_TESTBED_DRIVER")
    job = bed.run(CTL, "sbatch --parsable --nodelist=gpu02 --wrap 'sleep 40'").strip()
    bed.run(CTL, f"until [ \"$(squeue --noheader --jobs={job} --format=%T)\" = RUNNING ]; do sleep 1; done", 60)
    monkeypatch.setenv("CLUSTERFORGE_TESTBED_DRIVER", NEW)
    plan = bed.plan()
    assert "gpu[01-02]: the GPU driver moves (550.172.05-1); the deploy drains them first" in plan.stdout, plan.stdout
    assert f"{job} root gpu02" in plan.stdout and f"cuda-drivers-550: {OLD} -> {NEW}" in plan.stdout

    stopped = bed.deploy()
    assert stopped.returncode != 0
    assert f"jobs still run there: {job} root gpu02" in stopped.output and "no job was killed" in stopped.output
    nodes = sinfo(bed)
    assert all(nodes[n][1] == "cf:stack:driver moves to 550.172.05" for n in NODES), nodes
    assert all(versions(bed, n) == dict.fromkeys(GPU_PACKAGES, OLD) for n in NODES)

    moved = bed.deploy("--data", "drain_wait=120")
    assert moved.returncode == 0, moved.output[-4000:]
    assert bed.run(CTL, f"sacct --noheader -X --parsable2 --jobs={job} --format=State").strip() == "COMPLETED"
    wait_for(bed, "nodes rebooted into the new driver",
             lambda nodes: all(nodes[n][0] in ("idle", "mixed") for n in NODES), timeout=180)
    for node in NODES:
        assert versions(bed, node) == dict.fromkeys(GPU_PACKAGES, NEW)
        assert "cuda-drivers-550" in held(bed, MACHINES[node])
        assert bed.run(MACHINES[node], "nvidia-smi --query-gpu=driver_version --format=csv,noheader").split()[0] \
            == "550.172.05"
        assert stack_findings(bed, node) == []
    assert bed.deploy().changed == 0  # the fixture moves the driver back
