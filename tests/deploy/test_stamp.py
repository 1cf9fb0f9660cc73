"""The deploy's stamp (/etc/clusterforge/deployed.json, roles/stamp.py) on simulated hosts: written on every host by a
first deploy, left alone by a second (no change reported), written again on the hosts a deploy reaches once the
inventory changes, and not on a host whose deploy failed before its end."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from deploy.fakedeploy import NEW_PARTITION, SECRETS, TESTS, SimCluster, dump
from deploy.test_deploy_flow import ALL

from clusterforge import __version__

PATH = "/etc/clusterforge/deployed.json"


def stamps(cluster: SimCluster) -> dict[str, dict]:
    return {host: json.loads(sim.content(PATH)) for host, sim in cluster.sims().items() if sim.content(PATH)}


def digest_of(cluster: SimCluster) -> str:
    """The inventory's digest as `clusterforge check` computes it from the same file."""
    code = "from clusterforge.loader import load; print(load('hosts.py').valid.inventory_digest)"
    env = {**os.environ, "CLUSTERFORGE_SIM_DIR": str(cluster.directory),
           "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS / "deploy")])}
    return subprocess.run([sys.executable, "-c", code], cwd=cluster.directory, env=env, text=True, check=True,
                          capture_output=True).stdout.strip()


def test_every_host_is_stamped_once_and_again_only_when_the_inventory_changes(tmp_path):
    cluster = SimCluster(tmp_path / "sim")
    first = cluster.deploy()
    assert first.returncode == 0, dump(first)
    found = stamps(cluster)
    assert set(found) == set(ALL)
    digest = digest_of(cluster)
    assert {(s["schema"], s["clusterforge"], s["inventory"], s["cluster"]) for s in found.values()} == {
        (1, __version__, digest, "t")}
    assert len({s["deployed_at"] for s in found.values()}) == 1  # one time for the run
    assert found["ctl"]["deployed_at"].endswith("Z") and found["ctl"]["deployed_by"]
    meta = cluster.sims()["gpu01"].files[PATH]
    assert (meta["user"], meta["group"], meta["mode"]) == ("root", "root", "644")
    text = cluster.sims()["gpu01"].content(PATH)
    assert not any(secret in text for secret in SECRETS.values())

    again = cluster.deploy()
    assert again.returncode == 0, dump(again)
    assert again.operations() == [] and not any(sim.events for sim in again.sims.values()), dump(again)
    assert stamps(cluster) == found

    cluster.set_inventory(extra=NEW_PARTITION)
    # A plan names the stamp it would write, not its diff: its time is the deploy's, and a saved plan, planned again
    # just before it is applied, must read the same.
    planned = cluster.plan()
    assert planned.returncode == 0, dump(planned)
    assert f"{PATH}: changed: clusterforge {__version__}, inventory " in planned.output, planned.output
    assert "deployed_at" not in planned.output
    limited = cluster.deploy("--limit", "@fake/gpu01")
    assert limited.returncode == 0, dump(limited)
    changed = digest_of(cluster)
    assert changed != digest
    assert {host: s["inventory"] for host, s in stamps(cluster).items()} == {
        **dict.fromkeys(ALL, digest), "gpu01": changed}

    whole = cluster.deploy()
    assert whole.returncode == 0, dump(whole)
    assert {s["inventory"] for s in stamps(cluster).values()} == {changed}


def test_a_host_whose_deploy_failed_keeps_the_stamp_it_had(tmp_path):
    cluster = SimCluster(tmp_path / "sim")
    assert cluster.deploy().returncode == 0
    before = stamps(cluster)
    cluster.set_inventory(extra=NEW_PARTITION)
    failed = cluster.deploy(fail="gpu02:slurm.conf")
    assert failed.returncode != 0, dump(failed)
    after = stamps(cluster)
    assert after["gpu02"] == before["gpu02"]
    assert {after[h]["inventory"] for h in ALL if h != "gpu02"} == {digest_of(cluster)} != {before["gpu02"]["inventory"]}
