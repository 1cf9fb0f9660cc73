"""slurmrestd with JWT authentication through the whole deploy on simulated hosts: the key where slurmctld and
slurmdbd load it and nowhere else, the drop-in, the daemon after slurmctld; a quiet second run; a new key restarts
slurmdbd and slurmctld alone, and never shows."""

from __future__ import annotations

import pytest
from deploy.fakedeploy import RELEASES, SECRETS, SimCluster, dump
from vault.vault_cases import assert_no_leak

KEY = "/etc/slurm/jwt_hs256.key"
DROPIN = "/etc/systemd/system/slurmrestd.service.d/clusterforge.conf"
NEW_KEY = bytes(range(100, 164))


def restarts(run) -> list[tuple[str, str]]:
    return [(h, c.split()[-1]) for h, c in run.order if c.startswith("systemctl restart")]


@pytest.fixture(params=RELEASES, ids=[f"{v}-{a}" for v, a in RELEASES])
def rest_cluster(request, tmp_path):
    version, auth = request.param
    sim = SimCluster(tmp_path / "sim", version=version, auth=auth, extra="rest=Rest()")
    sim.version, sim.auth = version, auth
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    sim.first = first
    return sim


def test_a_first_deploy_puts_the_key_on_the_controller_alone_and_starts_slurmrestd_after_slurmctld(rest_cluster):
    first = rest_cluster.first
    ctl = first.sims["ctl"]  # the controller and the database host
    assert {k: ctl.files[KEY][k] for k in ("user", "group", "mode")} == {"user": "slurm", "group": "slurm",
                                                                         "mode": "600"}
    assert ctl.content(KEY) == SECRETS["jwt-key"]
    for name in ("gpu01", "login1"):
        assert KEY not in first.sims[name].files, name
        assert DROPIN not in first.sims[name].files and "slurmrestd" not in first.sims[name].users, name
        assert not {"slurmrestd", "slurm-wlm-jwt-plugin"} & set(first.sims[name].packages), name
    assert {"slurmrestd", "slurm-wlm-jwt-plugin"} <= set(ctl.packages)
    assert ctl.users["slurmrestd"] == 989 and ctl.groups["slurmrestd"] == 989
    dropin = ctl.content(DROPIN).decode()
    assert "User=slurmrestd" in dropin and "-a rest_auth/jwt" in dropin and "0.0.0.0:6820" in dropin
    assert ctl.units["slurmrestd.service"] == {"active": True, "enabled": True}
    conf = ctl.content("/etc/slurm/slurm.conf").decode()
    assert "AuthAltTypes=auth/jwt" in conf and f"AuthAltParameters=jwt_key={KEY}" in conf
    assert f"AuthAltParameters=jwt_key={KEY}" in ctl.content("/etc/slurm/slurmdbd.conf").decode()
    order = [f"{h} {c}" for h, c in first.order]
    assert order.index(f"ctl upload {KEY}") < order.index("ctl systemctl start slurmdbd.service")
    assert order.index("ctl systemctl daemon-reload") < order.index("ctl systemctl start slurmrestd.service")
    assert order.index("ctl systemctl start slurmctld.service") < order.index("ctl systemctl start slurmrestd.service")

    again = rest_cluster.deploy()
    assert again.returncode == 0 and again.operations() == [], dump(again)


def test_a_new_key_restarts_slurmdbd_and_slurmctld_alone_and_never_shows(rest_cluster):
    rest_cluster.set_inventory(rest_cluster.version, rest_cluster.auth, extra="rest=Rest()",
                               secrets={"jwt-key": NEW_KEY})
    plan = rest_cluster.plan("--detailed-exitcode")
    assert plan.returncode == 2, plan.output[-3000:]
    assert f"{KEY}: changed; it holds a secret (JWT key (jwt_hs256.key)), which is not shown" in plan.output
    assert "slurmd: restarted" not in plan.output and "slurmrestd: restarted" not in plan.output
    assert_no_leak(plan.output, NEW_KEY)
    run = rest_cluster.deploy("-vvv")
    assert run.returncode == 0, dump(run)
    assert restarts(run) == [("ctl", "slurmdbd.service"), ("ctl", "slurmctld.service")], restarts(run)
    assert run.sims["ctl"].content(KEY) == NEW_KEY
    for secret in (NEW_KEY, SECRETS["jwt-key"]):
        assert_no_leak(run.output, secret)
    assert rest_cluster.deploy().operations() == []


def test_a_restart_the_new_key_owes_is_made_by_the_next_run(tmp_path):
    sim = SimCluster(tmp_path / "sim", extra="rest=Rest()")
    assert sim.deploy().returncode == 0
    sim.set_inventory(extra="rest=Rest()", secrets={"jwt-key": NEW_KEY})
    stopped = sim.deploy(fail="ctl:systemctl restart slurmctld")  # the key is in place, slurmctld not restarted
    assert stopped.returncode != 0 and stopped.sims["ctl"].content(KEY) == NEW_KEY
    again = sim.deploy()
    assert again.returncode == 0, dump(again)
    assert ("ctl", "slurmctld.service") in restarts(again)
    assert sim.deploy().operations() == []


def test_a_limited_run_refuses_to_change_the_key(tmp_path):
    sim = SimCluster(tmp_path / "sim", extra="rest=Rest()")
    assert sim.deploy().returncode == 0
    sim.set_inventory(extra="rest=Rest()", secrets={"jwt-key": NEW_KEY})
    run = sim.deploy("--limit", "@fake/ctl")
    assert run.returncode != 0
    assert f"{KEY} differs from the JWT key (jwt_hs256.key) in Vault, and this run is limited" in run.output
    assert run.sims["ctl"].content(KEY) == SECRETS["jwt-key"]


def test_slurmrestd_moved_to_a_login_host_leaves_the_controller(tmp_path):
    sim = SimCluster(tmp_path / "sim", extra='rest=Rest(host=Host("login1"), port=8080)')
    first = sim.deploy()
    assert first.returncode == 0, dump(first)
    login, ctl = first.sims["login1"], first.sims["ctl"]
    assert login.units["slurmrestd.service"]["active"] and "10.9.0.7" not in login.content(DROPIN).decode()
    assert KEY not in login.files and KEY in ctl.files  # the key stays where it is loaded
    assert "slurmrestd" not in ctl.packages and "slurm-wlm-jwt-plugin" in ctl.packages

    sim.set_inventory(extra="rest=Rest()")
    moved = sim.deploy()
    assert moved.returncode == 0, dump(moved)
    assert not moved.sims["login1"].units["slurmrestd.service"]["active"] and DROPIN not in moved.sims["login1"].files
    assert moved.sims["ctl"].units["slurmrestd.service"]["active"]
    assert sim.deploy().operations() == []

    # Back on login1, the same drop-in as before its removal: systemd must read it again.
    sim.set_inventory(extra='rest=Rest(host=Host("login1"), port=8080)')
    back = sim.deploy()
    assert back.returncode == 0, dump(back)
    order = [c for h, c in back.order if h == "login1"]
    assert order.index("systemctl daemon-reload") < order.index("systemctl start slurmrestd.service")
    assert back.sims["login1"].units["slurmrestd.service"]["active"]


def test_no_secret_file_is_readable_by_others_for_a_moment_first_deploy_new_host_or_rotation(rest_cluster):
    # A file uploaded into a new path is created 0644 and chmod'ed after: a run that stopped between would leave the
    # key readable by every local user. Each secret file exists with its own mode before its content arrives.
    first = rest_cluster.first
    private = {(h, p) for h, s in first.sims.items() for p, f in s.files.items() if not int(f["mode"], 8) & 0o044}
    assert ("ctl", KEY) in private and ("ctl", "/etc/slurm/slurmdbd.conf") in private
    assert any(p in ("/etc/munge/munge.key", "/etc/slurm/slurm.key") for _, p in private)
    assert {(h, p) for h, s in first.sims.items() for p in s.exposed} & private == set()
    rest_cluster.set_inventory(rest_cluster.version, rest_cluster.auth, extra="rest=Rest()",
                               secrets={"jwt-key": NEW_KEY})
    rotated = rest_cluster.deploy()
    assert rotated.returncode == 0 and rotated.sims["ctl"].content(KEY) == NEW_KEY
    assert {(h, p) for h, s in rotated.sims.items() for p in s.exposed} & private == set()
