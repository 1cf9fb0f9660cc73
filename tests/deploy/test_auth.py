"""Which hosts authenticate how: the key each cluster needs, where sackd runs, and the test cluster's choice."""

from __future__ import annotations

from pathlib import Path

import pytest
from clusters import small_cluster

from clusterforge.cli.secrets import _NEXT_DEPLOY
from clusterforge.loader import load_cluster
from clusterforge.model import resolve
from clusterforge.roles.packages import runs_sackd
from deploy.steps import footprint
from clusterforge.secrets.cluster import DB_PASSWORD, MUNGE_KEY, SLURM_KEY, kinds_for

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("groups", "sackd"), [
    (("login",), True),
    (("login", "database"), True),      # slurmdbd's socket is /run/slurmdbd, no clash
    (("login", "compute"), False),      # slurmd serves /run/slurm/sack.socket itself
    (("controller", "login"), False),
    (("compute",), False),
    (("nfs",), False),
])
def test_sackd_only_where_no_slurm_daemon_hands_out_credentials(groups, sackd):
    assert runs_sackd(groups) is sackd


def test_each_cluster_needs_the_key_of_its_authentication_and_no_other():
    assert kinds_for(resolve(small_cluster(slurm_version="24.11", auth="slurm"))) == (SLURM_KEY, DB_PASSWORD)
    assert kinds_for(resolve(small_cluster())) == (MUNGE_KEY, DB_PASSWORD)


def test_auth_slurm_hosts_get_sackd_on_login_and_no_munge():
    valid = resolve(small_cluster(slurm_version="24.11", auth="slurm"))
    assert "munge" not in footprint(valid, ("compute",)).packages and "sackd" in footprint(valid, ("login",)).packages
    assert "munge" in footprint(resolve(small_cluster()), ("compute",)).packages


def test_the_cli_says_what_a_new_slurm_key_restarts():
    text = _NEXT_DEPLOY[SLURM_KEY.name]
    assert "/etc/slurm/slurm.key" in text and "slurmdbd, slurmctld, slurmd, sackd" in text


@pytest.mark.parametrize(("dist", "auth"), [("trixie", "slurm"), ("bookworm", "munge")])
def test_the_test_cluster_uses_auth_slurm_on_debian_13_and_munge_on_debian_12(monkeypatch, dist, auth):
    monkeypatch.setenv("CLUSTERFORGE_TESTBED_DIST", dist)
    monkeypatch.delenv("CLUSTERFORGE_TESTBED_AUTH", raising=False)
    assert resolve(load_cluster(REPO / "inventories" / "vagrant.py")).auth == auth


def test_the_test_cluster_auth_can_be_chosen(monkeypatch):
    monkeypatch.setenv("CLUSTERFORGE_TESTBED_DIST", "trixie")
    monkeypatch.setenv("CLUSTERFORGE_TESTBED_AUTH", "munge")
    assert resolve(load_cluster(REPO / "inventories" / "vagrant.py")).auth == "munge"
