"""End to end: `clusterforge check` against the running test cluster. Healthy, it exits 0; an inventory that claims
more memory or another socket layout, a stopped slurmd and a drained node are each named and exit 1; and a check
changes nothing on any host. Each test puts back what it broke.

The containers see the whole memory of the machine they run on (slurmd -C reports it) while the test inventory
gives jobs 2048 MiB of it; the inventory says so (Acceptance(memory_tolerance=100)), so the bare command a newcomer
runs first judges only memory *above* what a node has.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from e2e.testbed import INVENTORY, MACHINES, REPO, Testbed

pytestmark = pytest.mark.e2e

CTL = "10.77.0.10"
LOGIN = "10.77.0.9"
RESTART_SLURMCTLD = ("systemctl restart slurmctld && for _ in $(seq 60); do scontrol ping >/dev/null 2>&1 && exit 0; "
                     "sleep 1; done; exit 1")
ALICE = "getent group alice >/dev/null || groupadd --gid 2001 alice; id alice >/dev/null 2>&1 || useradd --uid 2001 " \
        "--gid 2001 alice"  # as the inventory has her; her home stays on the shared /home


def check(bed: Testbed, *args: str, inventory=INVENTORY) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / ".venv" / "bin" / "clusterforge"), "check", str(inventory), *args], cwd=REPO,
                          env=bed.env(), text=True, capture_output=True, timeout=600)


def test_check_of_the_healthy_cluster_exits_0_and_changes_nothing(testbed):
    before = testbed.fingerprint()
    run = check(testbed, "--smoke")
    print(run.stdout)
    if not testbed.confines:  # the smoke test's job opens every GPU: the check names exactly that, and nothing else
        assert run.returncode == 1, run.stdout + run.stderr
        assert re.findall(r"^  (\S+ \S+):", run.stdout, re.M) == ["ctl smoke-gpus"], run.stdout
        assert "ConstrainDevices is not confining" in run.stdout
        run = check(testbed)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all good (exit 0)" in run.stdout
    for line in ("gpu01   hardware", "ctl     nodes", "ctl     topology", "login1  auth", "ctl     users",
                 *(("ctl     smoke-gpus",) if testbed.confines else ())):
        assert line in run.stdout
    # Every host stamped by the deploy that made it, from this very inventory (docs/operations/deploy.md#the-stamp).
    assert re.search(r"^gpu02 +deployed +ok +clusterforge \S+, inventory [0-9a-f]{12} \(this one\)", run.stdout,
                     re.M), run.stdout
    assert re.search(r"^ctl +deploys +ok +\d+ hosts: clusterforge \S+, inventory [0-9a-f]{12} \(this one\)$",
                     run.stdout, re.M), run.stdout
    assert testbed.fingerprint() == before

    report = json.loads(check(testbed, "--json").stdout)
    assert report["status"] == 0 and report["findings"] == 0
    assert {(c["host"], c["check"]) for c in report["checks"]} >= {("gpu02", "hardware"), ("ctl", "slurmdbd")}


def test_an_inventory_with_more_memory_and_another_socket_layout_is_named(testbed, tmp_path):
    text = INVENTORY.read_text()
    assert "    sockets=1,\n    cores_per_socket=2,\n    real_memory=2048," in text
    wrong = tmp_path / "vagrant.py"
    wrong.write_text(text.replace("    sockets=1,\n    cores_per_socket=2,\n    real_memory=2048,",
                                  "    sockets=2,\n    cores_per_socket=1,\n    real_memory=4_000_000,"))
    run = check(testbed, inventory=wrong)
    assert run.returncode == 1, run.stdout + run.stderr
    for node in ("gpu01", "gpu02"):
        assert f"{node} hardware: sockets: the inventory says 2, slurmd -C finds 1" in run.stdout
        assert f"{node} hardware: cores per socket: the inventory says 1, slurmd -C finds 2" in run.stdout
        assert f"{node} hardware: RealMemory 4000000 MiB is above the" in run.stdout
        assert "slurmd would refuse to register" in run.stdout
        # Deployed from the inventory as it was, not this one: apply has not run since it changed.
        assert f"{node} deployed: deployed from another inventory (" in run.stdout


def test_a_stopped_slurmd_is_named_and_started_again(testbed):
    testbed.run(MACHINES["gpu02"], "systemctl stop slurmd")
    try:
        run = check(testbed, "--limit", "gpu02")
        print(run.stdout)  # shown by `pytest -rA`: the sample in docs/operations/check.md
        assert run.returncode == 1, run.stdout + run.stderr
        assert "gpu02 daemons: slurmd is inactive" in run.stdout
        assert "gpu01" not in run.stdout, "--limit checks only the host named"
    finally:
        testbed.run(MACHINES["gpu02"], "systemctl start slurmd")
        testbed.run(CTL, "until sinfo --noheader --Node --nodes=gpu02 --format=%T | grep -qx idle; do sleep 1; done",
                    120)
    assert check(testbed).returncode == 0


def test_a_drained_node_is_named_with_its_reason_and_resumed(testbed):
    testbed.run(CTL, "scontrol update NodeName=gpu01 State=DRAIN Reason='e2e: check sees this'")
    try:
        run = check(testbed)
        print(run.stdout)
        assert run.returncode == 1, run.stdout + run.stderr
        # +PLANNED: 24.11's backfill may have planned a pending job of an earlier test there meanwhile
        assert re.search(r"ctl nodes: gpu01: IDLE\+DRAIN(\+PLANNED)? \(reason: e2e: check sees this \[root@[^]]+\]; "
                         r"not clusterforge's, which leaves it alone\)", run.stdout), run.stdout
        assert run.stdout.count("ctl nodes:") == 1, "gpu02 is fine"
    finally:
        testbed.run(CTL, "scontrol update NodeName=gpu01 State=RESUME")
        # Plain idle, responding ("idle*" is a node slurmctld has not heard from lately: on two shared cores a
        # slurmd can answer a ping late, and check rightly names that).
        testbed.run(CTL, "until sinfo --noheader --Node --nodes=gpu01 --format=%T | grep -qx idle; do sleep 1; done",
                    300)
    assert check(testbed).returncode == 0


def test_a_user_slurmctld_cannot_resolve_is_named_and_the_deploy_makes_it_learn_them_again(testbed):
    # What a restart of slurmctld (a reboot; on 22.05 the deploy adding a node) does to a person whose account the
    # controller cannot resolve at that moment: slurmctld holds her with no uid and no default account, and refuses
    # her jobs even once her account is back, after a reconfigure too (22.05).
    testbed.run(CTL, f"userdel alice && {RESTART_SLURMCTLD}")
    try:
        unknown = check(testbed)
        assert unknown.returncode == 1, unknown.stdout + unknown.stderr
        assert "ctl users: the controller has no Unix account for alice (getent passwd finds none)" in unknown.stdout
        testbed.run(CTL, ALICE)
        stale = check(testbed)
        assert stale.returncode == 1, stale.stdout + stale.stderr
        assert "ctl users: slurmctld holds alice (no uid" in stale.stdout
        refused = testbed.host(LOGIN).run("cd /tmp && runuser -u alice -- srun -N1 true")
        assert refused.rc != 0 and "Invalid account" in refused.stderr, refused.stderr

        before = testbed.fingerprint()
        fixed = testbed.deploy()
        assert fixed.returncode == 0, fixed.output[-3000:]
        assert "slurmctld learns users again" in fixed.output
        # Without a restart on either release: 22.05 re-reads the users at a reconfigure; 24.11's reconfigure is a
        # new slurmctld process, which re-reads everything without stopping the cluster's jobs.
        started = {k: v for k, v in testbed.fingerprint().items() if k != "ctl"}
        assert started == {k: v for k, v in before.items() if k != "ctl"}
        testbed.run(LOGIN, "cd /tmp && runuser -u alice -- srun -N1 true")
        healthy = check(testbed)
        assert healthy.returncode == 0, healthy.stdout + healthy.stderr
        assert testbed.deploy().changed == 0
    finally:
        testbed.run(CTL, ALICE)
        assert testbed.deploy().returncode == 0
