"""The deploy's profile (engine/profile.py): with CLUSTERFORGE_PROFILE=FILE, the real deploy on simulated hosts
writes when each operation ran on each host; the summary says which step took the time and who waited for it."""

from __future__ import annotations

import json

from deploy.fakedeploy import SimCluster

from clusterforge.engine.profile import summary

HOSTS = {"@fake/ctl", "@fake/gpu01", "@fake/gpu02", "@fake/gpu03", "@fake/gpu04", "@fake/login1"}


def test_the_deploy_writes_each_operation_in_order_with_each_hosts_time_and_a_slow_one_shows(tmp_path, monkeypatch):
    cluster = SimCluster(tmp_path / "sim")
    monkeypatch.setenv("CLUSTERFORGE_PROFILE", str(tmp_path / "profile.json"))
    assert cluster.deploy(slow={"mysql <": 2.0}).returncode == 0
    profile = json.loads((tmp_path / "profile.json").read_text())
    ops = profile["operations"]
    assert [op["start"] for op in ops] == sorted(op["start"] for op in ops)
    assert 0 < ops[0]["start"] < ops[-1]["end"] <= profile["ended"]
    assert all(op["start"] <= start <= end <= op["end"] for op in ops for start, end in op["hosts"].values())
    assert set().union(*(op["hosts"] for op in ops)) == HOSTS
    slow = [op for op in ops if op["end"] - op["start"] >= 2.0]
    assert [op["name"] for op in slow] == ["mariadb | database slurm_acct_db and user slurm with the password from "
                                           "Vault"]
    lines = summary(profile)
    top = lines[lines.index(next(line for line in lines if line.startswith("per step"))) + 1]
    assert top.split()[0] == "mariadb" and float(top.split()[1]) >= 2.0


def test_no_profile_is_written_unless_asked_for(tmp_path, monkeypatch):
    cluster = SimCluster(tmp_path / "sim")
    monkeypatch.delenv("CLUSTERFORGE_PROFILE", raising=False)
    assert cluster.deploy().returncode == 0
    assert not list(tmp_path.rglob("*profile*"))


def test_the_summary_counts_each_steps_wall_and_each_hosts_busy_and_waiting_time():
    # ctl builds for 30 s while the node waits; then both install for 10 and 4 s.
    profile = {"ended": 50.0, "operations": [
        {"name": "containers | Enroot built", "start": 5.0, "end": 35.0, "hosts": {"ctl": [5.0, 35.0],
                                                                                   "gpu01": [5.0, 5.5]}},
        {"name": "packages | installed", "start": 35.0, "end": 45.0, "hosts": {"ctl": [35.0, 39.0],
                                                                              "gpu01": [35.0, 45.0]}},
    ]}
    lines = summary(profile, top=1)
    assert lines[0].split()[-2:] == ["5.0", "s"] and lines[1].split()[-2:] == ["40.0", "s"]
    assert "  containers    30.0 s    1 ops" in lines and "  packages      10.0 s    1 ops" in lines
    assert "  ctl    busy   34.0 s  waiting    6.0 s" in lines
    assert "  gpu01  busy   10.5 s  waiting   29.5 s" in lines
    assert lines[-1] == "    30.0 s  containers | Enroot built  (slowest: ctl 30.0 s)"
