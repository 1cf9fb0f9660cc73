"""`clusterforge plan` against the test cluster: it changes nothing on any host, says what the next deploy does, and
the deploy then does exactly that; a secret it plans to change is never shown."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from dataclasses import dataclass

import pytest
from e2e.test_cluster import vault_secrets
from e2e.testbed import REPO, Testbed

pytestmark = pytest.mark.e2e

CTL = "10.77.0.10"


@dataclass
class PlanRun:
    returncode: int
    output: str

    def json(self) -> dict:
        return json.loads(self.output[self.output.index("{"):])

    @property
    def changes(self) -> int:
        return sum(len(found) for found in self.json()["hosts"].values())


def plan(bed: Testbed, *args: str) -> PlanRun:
    run = bed.plan(*args)
    return PlanRun(run.returncode, run.stdout)


def edited(bed: Testbed, tmp_path, *replacements: tuple[str, str]):
    text = bed.inventory.read_text()
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "vagrant.py"
    path.write_text(text)
    return path


def test_a_plan_after_a_deploy_has_nothing_to_do_and_changes_nothing(testbed):
    before = testbed.fingerprint()
    run = plan(testbed)
    assert run.returncode == 0, run.output[-4000:]
    assert "Plan: nothing to do on 4 hosts." in run.output
    rolled = plan(testbed, "--roll", "1")  # and how roll would take the cluster through it, changing nothing
    assert rolled.returncode == 0, rolled.output[-4000:]
    steps = ["With `clusterforge roll --apply --services --batch 1`", "2 nodes in 2 batches of at most 1",
             "first ctl (slurmdbd, slurmctld): dump slurm_acct_db, then deploy",
             "batch 1/2 gpu01: no job runs there now", "batch 2/2 gpu02: no job runs there now",
             "last login1 (login): deploy"]
    assert [rolled.output.find(step) for step in steps] == sorted(rolled.output.find(s) for s in steps) \
        and -1 not in [rolled.output.find(step) for step in steps], rolled.output
    assert testbed.fingerprint() == before


def test_a_plan_of_a_new_partition_and_memory_is_what_the_deploy_then_does(testbed, tmp_path):
    before_inventory = testbed.inventory
    testbed.inventory = edited(
        testbed, tmp_path,
        ('partitions=(Partition("gpu", profiles=("test-gpu",), default=True, max_time="01:00:00"),)',
         'partitions=(Partition("gpu", profiles=("test-gpu",), default=True, max_time="01:00:00"), '
         'Partition("short", nodes="gpu02", max_time="00:10:00"))'),
        ("real_memory=2048,", "real_memory=1900,"))
    try:
        before = testbed.fingerprint()
        run = plan(testbed, "--detailed-exitcode")
        print(run.output)  # shown with -s: the sample in docs/operations/plan.md
        assert run.returncode == 2, run.output[-4000:]
        assert testbed.fingerprint() == before, "a plan changed a host"
        assert "+PartitionName=short Nodes=gpu02" in run.output
        assert re.search(r"^\s+-NodeName=gpu\[01-02\].*RealMemory=2048", run.output, re.M), run.output[-4000:]
        assert re.search(r"^\s+\+NodeName=gpu\[01-02\].*RealMemory=1900", run.output, re.M)
        if testbed.slurm == "22.05":  # nodes changed: slurmctld stopped, every slurmd restarted, slurmctld started
            assert "run: systemctl stop slurmctld.service" in run.output
            assert "run: systemctl restart slurmd.service" in run.output
        else:
            assert f"Slurm {testbed.slurm} adds them with scontrol reconfigure" in run.output
            assert "run: scontrol reconfigure" in run.output and "restarted" not in run.output
        planned = plan(testbed, "--json").changes
        deployed = testbed.deploy()
        assert deployed.returncode == 0, deployed.output[-4000:]
        assert deployed.changed == planned, "\n".join(deployed.changed_operations())
        assert "short" in testbed.run(CTL, "sinfo --noheader --format=%P").split()
        after = plan(testbed, "--detailed-exitcode")
        assert after.returncode == 0, after.output[-4000:]
    finally:
        testbed.inventory = before_inventory
        assert testbed.deploy().returncode == 0
    assert plan(testbed, "--detailed-exitcode").returncode == 0


def test_a_new_database_password_is_planned_masked_and_deployed_as_planned(testbed):
    rotate = subprocess.run([str(REPO / ".venv" / "bin" / "clusterforge"), "secrets", "rotate", str(testbed.inventory),
                             "db-password"], check=False, cwd=REPO, env=testbed.env(), text=True,
                            capture_output=True, timeout=120)
    assert rotate.returncode == 0, rotate.stdout + rotate.stderr
    run = plan(testbed, "--detailed-exitcode")
    assert run.returncode == 2, run.output[-4000:]
    assert "/etc/slurm/slurmdbd.conf: changed; it holds a secret" in run.output
    assert "slurmdbd: restarted" in run.output
    password = vault_secrets(testbed).db_password().reveal()
    for shown in (password, base64.b64encode(password), password.hex().encode()):
        assert shown.decode() not in run.output
    planned = plan(testbed, "--json").changes
    deployed = testbed.deploy()
    assert deployed.returncode == 0, deployed.output[-4000:]
    assert deployed.changed == planned, "\n".join(deployed.changed_operations())
    assert testbed.run(CTL, "sacctmgr --noheader show cluster format=cluster").split() == ["vagrant"]
    assert plan(testbed, "--detailed-exitcode").returncode == 0


def test_a_host_that_cannot_be_reached_is_named_and_the_rest_are_planned(testbed, tmp_path):
    before_inventory = testbed.inventory
    testbed.inventory = edited(testbed, tmp_path, ('Nodes("gpu[01-02]", address="10.77.0.[11-12]"',
                                                   'Nodes("gpu[01-02]", address="10.77.0.[11-12]", profile="test-gpu", '
                                                   'leaf="leaf1"), Nodes("gpu09", address="10.77.0.19"'))
    try:
        before = testbed.fingerprint()
        run = plan(testbed)
        assert run.returncode == 1, run.output[-4000:]
        assert "gpu09: COULD NOT BE REACHED" in run.output
        assert "+NodeName=gpu09" in run.output  # the others' slurm.conf is still planned
        assert testbed.fingerprint() == before
    finally:
        testbed.inventory = before_inventory
