"""A saved plan on simulated hosts (tests/deploy/simhost.py): `clusterforge plan --out FILE` keeps the plan the admin
read, `clusterforge apply FILE` makes exactly those changes, and refuses, changing nothing, once a host's plan has
changed since. One release: the plan and the deploy are the same code on each (tests/deploy/test_plan.py runs both)."""

from __future__ import annotations

import base64
import json
import sys

import pytest
from deploy.fakedeploy import NEW_PARTITION, Run, SimCluster, dump
from deploy.simhost import Sim
from deploy.test_plan import assert_the_deploy_does_the_plan

from clusterforge.cli.saved_plan import LAYOUT


@pytest.fixture
def cluster(tmp_path) -> SimCluster:
    sim = SimCluster(tmp_path / "sim", version="24.11", auth="slurm")
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    sim.set_inventory("24.11", "slurm", NEW_PARTITION)
    return sim


def apply(cluster: SimCluster, *args: str, answer: str | None = None) -> Run:
    return cluster._run([sys.executable, "-m", "clusterforge.cli", "apply", *args], "", 300, answer=answer)


def test_apply_of_a_saved_plan_makes_its_changes_and_no_others(cluster):
    plan_file = cluster.directory / "partition.plan"
    made = cluster.plan("--out", str(plan_file))
    assert made.returncode == 0, dump(made)
    assert f"Saved to {plan_file}" in made.output
    assert plan_file.stat().st_mode & 0o777 == 0o600
    saved = json.loads(plan_file.read_text())
    assert saved["layout"] == LAYOUT and saved["hosts"] is None
    assert all(not sim.events for sim in made.sims.values()), "a plan changed a host"
    # What apply of the saved plan does is what the plan says: the same check as the deploy after a plan.
    applied = apply(cluster, str(plan_file))
    assert applied.returncode == 0, dump(applied)
    again = cluster.plan()
    assert again.returncode == 0 and "Plan: nothing to do" in again.output, dump(again)
    assert saved["plan"]["hosts"], "the new partition changed nothing to plan"


def test_the_deploy_a_saved_plan_runs_does_what_it_says(cluster):
    plan_file = cluster.directory / "partition.plan"
    assert cluster.plan("--out", str(plan_file)).returncode == 0
    assert_the_deploy_does_the_plan(cluster, json.loads(plan_file.read_text())["plan"])


def test_a_host_changed_since_the_plan_is_named_and_nothing_is_changed(cluster):
    plan_file = cluster.directory / "partition.plan"
    assert cluster.plan("--out", str(plan_file)).returncode == 0
    # Someone edits gres.conf on gpu01 by hand after the admin read the plan.
    path = cluster.directory / "gpu01.json"
    sim = Sim.load(path)
    sim.files["/etc/slurm/gres.conf"]["content"] = base64.b64encode(b"# edited by hand\n").decode()
    sim.save(path)
    refused = apply(cluster, str(plan_file))
    assert refused.returncode == 2, dump(refused)
    assert (f"Error: {plan_file}: the plan no longer holds for gpu01: the state there or the inventory changed since "
            "it was made. Nothing was changed; plan again") in refused.output
    assert {h: s.events for h, s in refused.sims.items() if s.events} == {}


def test_a_saved_plan_takes_no_limit_and_another_clusterforges_is_refused(cluster):
    plan_file = cluster.directory / "partition.plan"
    assert cluster.plan("--out", str(plan_file), "--limit", "gpu01").returncode == 0
    assert json.loads(plan_file.read_text())["hosts"] == ["@fake/gpu01"]  # as pyinfra names it
    limited = apply(cluster, "--limit", "gpu02", str(plan_file))
    assert limited.returncode == 2 and "a saved plan keeps the hosts and the deploy file" in limited.output
    saved = json.loads(plan_file.read_text())
    plan_file.write_text(json.dumps({**saved, "clusterforge": "0.0.1.dev1+gdeadbee"}))
    other = apply(cluster, str(plan_file))
    assert other.returncode == 2 and "planned by clusterforge 0.0.1.dev1+gdeadbee, this is" in other.output
    assert {h: s.events for h, s in other.sims.items() if s.events} == {}


def test_apply_without_yes_shows_clusterforges_plan_and_makes_it_only_once_confirmed(cluster):
    inventory = str(cluster.directory / "hosts.py")
    declined = apply(cluster, inventory, answer="n\n")
    assert declined.returncode == 0, dump(declined)
    assert "+PartitionName=short Nodes=gpu[01-02]" in declined.output  # the plan's diff, not pyinfra's table
    assert "Make these changes? [y/N]" in declined.output and "Nothing was changed." in declined.output
    assert {h: s.events for h, s in declined.sims.items() if s.events} == {}
    confirmed = apply(cluster, inventory, answer="y\n")
    assert confirmed.returncode == 0, dump(confirmed)
    assert any(s.events for s in confirmed.sims.values())
    again = apply(cluster, inventory)  # nothing left to do: said, and no question asked
    assert again.returncode == 0 and "Plan: nothing to do" in again.output and "Make these" not in again.output
