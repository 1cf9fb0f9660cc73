"""End to end: configless Slurm on the running test cluster (CLUSTERFORGE_TESTBED_CONFIGLESS=on, which the other
e2e tests run without). The move removes the nodes' Slurm files once their slurmd runs with --conf-server. A new
partition then reaches every node through `scontrol reconfigure` alone: the deploy uploads nothing to a node and
restarts no slurmd, each node's Slurm commands see the partition from the files slurmd fetched (/run/slurm/conf), and
a second deploy changes nothing. Turning it off again writes the files back and the cluster converges. Four deploys
in all, shared by the module's tests.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from e2e.testbed import INVENTORY, MACHINES, REPO, DeployRun, Testbed

pytestmark = pytest.mark.e2e

CTL = MACHINES["ctl"]
NODES = ("gpu01", "gpu02")
SLURM_FILES = ("slurm.conf", "gres.conf", "cgroup.conf")
PARTITION = 'Partition("fetched", nodes="gpu[01-02]", max_time="00:30:00")'
DEFAULT = 'partitions=(Partition("gpu", profiles=("test-gpu",), default=True, max_time="01:00:00"),'


def deploy(bed: Testbed, configless: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / ".venv" / "bin" / "pyinfra"), "-y", str(bed.inventory),
                           str(REPO / "deploy" / "cluster.py")], check=False, cwd=REPO, text=True, capture_output=True,
                          env=bed.env(CLUSTERFORGE_TESTBED_CONFIGLESS=configless), timeout=1800)


def said(run: subprocess.CompletedProcess[str]) -> str:
    return run.stdout[-6000:] + run.stderr[-2000:]


def slurmd_stopped_since(bed: Testbed, name: str, since: str) -> int:
    """How often systemd stopped the node's slurmd since ``since`` (epoch seconds): a restart stops it, a reconfigure
    does not (from 23.11 slurmd re-executes itself for one, so its start time moves all the same)."""
    return int(bed.run(MACHINES[name], f"journalctl -u slurmd --no-pager -o cat --since @{since} | "
                                       "grep -c '^Stopping slurmd' || true").strip() or 0)


def nothing_changed(run: subprocess.CompletedProcess[str]) -> bool:
    return DeployRun(run.returncode, run.stdout + run.stderr, 0).changed == 0


@pytest.fixture(scope="module")
def configless_on(testbed):
    """Configless turned on over the running cluster for this module, and off again after it."""
    try:
        yield deploy(testbed, "on")
    finally:
        testbed.inventory = INVENTORY
        off = deploy(testbed, "off")
        assert off.returncode == 0, said(off)
        for name in NODES:
            assert testbed.run(MACHINES[name], "test -f /etc/slurm/slurm.conf && echo yes || true").strip() == "yes"


def test_the_nodes_fetch_their_files_from_slurmctld(testbed, configless_on):
    assert configless_on.returncode == 0, said(configless_on)
    assert "enable_configless" in testbed.run(CTL, "scontrol show config | grep -i SlurmctldParameters")
    for name in NODES:
        address = MACHINES[name]
        for file in SLURM_FILES:
            assert testbed.run(address, f"test -e /etc/slurm/{file} && echo left || true").strip() == "", file
        assert "--conf-server" in testbed.run(address, "systemctl show -p Environment slurmd")
        assert testbed.run(address, "test -f /run/slurm/conf/slurm.conf && echo cached || true").strip() == "cached"
        assert "UP" in testbed.run(address, "scontrol ping")


def test_a_partition_reaches_every_node_through_a_reconfigure_and_a_second_deploy_changes_nothing(
        testbed, configless_on, tmp_path):
    edited = tmp_path / "vagrant.py"
    shutil.copy(INVENTORY, edited)
    text = edited.read_text()
    assert text.count(DEFAULT) == 1
    edited.write_text(text.replace(DEFAULT, DEFAULT + f" {PARTITION},"))
    since = testbed.run(CTL, "date +%s").strip()
    testbed.inventory = edited
    try:
        run = deploy(testbed, "on")
        assert run.returncode == 0, said(run)
        assert "scontrol reconfigure" in run.stdout + run.stderr, said(run)
        for name in NODES:
            shown = testbed.run(MACHINES[name], "scontrol show partition fetched")
            assert "PartitionName=fetched" in shown, (name, shown)
            assert "PartitionName=fetched" in testbed.run(MACHINES[name], "cat /run/slurm/conf/slurm.conf")
        assert {name: slurmd_stopped_since(testbed, name, since) for name in NODES} == dict.fromkeys(NODES, 0)
        again = deploy(testbed, "on")
        assert again.returncode == 0 and nothing_changed(again), said(again)
    finally:
        testbed.inventory = INVENTORY
