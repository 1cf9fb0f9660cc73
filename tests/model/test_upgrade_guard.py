"""Slurm's rules for a change of the hosts' releases over a whole cluster (model/upgrades.py): every pair of releases
of the table moved at once, a daemon ahead of the one that serves it, one too far behind, and what is left alone
(hosts at the same release, a first install)."""

from __future__ import annotations

import pytest
from clusters import small_cluster

from clusterforge.model import Host, resolve
from clusterforge.model.upgrades import upgrade_problems
from clusterforge.versions import RELEASES, SUPPORTED, upgrade_path, v

HOSTS = ("db", "ctl", "login1", "gpu01", "gpu02", "gpu03", "gpu04")


def cluster(release: str = "22.05"):
    return resolve(small_cluster(slurm_version=release, database=Host("db", address="10.9.0.2", memory=8192),
                                 login=(Host("login1", address="10.9.0.3"),)))


def everywhere(release: str, hosts=HOSTS) -> dict:
    return dict.fromkeys(hosts, v(release))


@pytest.mark.parametrize("old", [r for r in RELEASES if r in SUPPORTED])
@pytest.mark.parametrize("new", [r for r in RELEASES if r in SUPPORTED])
def test_a_cluster_moved_at_once_is_refused_exactly_where_slurm_has_no_single_step(old, new):
    found = upgrade_problems(cluster(str(new)), everywhere(str(old)), everywhere(str(new)))
    path = upgrade_path(old, new)
    if new < old:
        assert len(found) == 1 and "gpu[01-04],login1,ctl,db: " in found[0] and "downgrade" in found[0], found
    elif path is not None and len(path) <= 2:
        assert found == []
    else:
        assert len(found) == 1, found
        assert f"Go through {' -> '.join(str(p) for p in path)}" in found[0]


def test_debian_12_to_13_is_refused_with_the_path_written_out():
    found = upgrade_problems(cluster("24.11"), everywhere("22.05"), everywhere("24.11"))
    assert found == [(
        "gpu[01-04],login1,ctl,db: Slurm 24.11 takes over only from 23.02, 23.11, 24.05, not from "
        "22.05: its daemons would refuse 22.05's state and slurmdbd its database, and running jobs "
        "would be lost. Go through 22.05 -> 23.02 -> 24.11, each release in Slurm's order (slurmdbd, "
        "then slurmctld, then the nodes)")]


def test_slurmd_ahead_of_slurmctld_is_refused_naming_both():
    found = upgrade_problems(cluster("23.02"), everywhere("22.05"), everywhere("23.02", ("gpu01", "gpu02")))
    assert found == [(
        "gpu[01-02]: slurmd would run 23.02, ahead of slurmctld 22.05 on ctl, which refuses a newer "
        "release: Slurm's order is slurmdbd, then slurmctld, then the nodes and the login hosts")]


def test_slurmctld_ahead_of_slurmdbd_is_refused():
    found = upgrade_problems(cluster("23.02"), everywhere("22.05"), everywhere("23.02", ("ctl", "login1")))
    assert found == [(
        "ctl: slurmctld would run 23.02, ahead of slurmdbd 22.05 on db, which refuses a newer release: "
        "Slurm's order is slurmdbd, then slurmctld, then the nodes and the login hosts")]


def test_a_login_host_ahead_of_slurmctld_is_refused():
    found = upgrade_problems(cluster("23.02"), everywhere("22.05"), everywhere("23.02", ("db", "login1")))
    assert found == [(
        "login1: Slurm's commands would run 23.02, ahead of slurmctld 22.05 on ctl, which refuses a "
        "newer release: Slurm's order is slurmdbd, then slurmctld, then the nodes and the login hosts")]


def test_slurms_order_one_step_at_a_time_passes():
    before = everywhere("23.11")
    assert upgrade_problems(cluster("24.11"), before, everywhere("24.11", ("db",))) == []
    assert upgrade_problems(cluster("24.11"), before, everywhere("24.11", ("db", "ctl"))) == []
    # Nodes behind slurmctld within its window: a roll in progress.
    assert upgrade_problems(cluster("24.11"), before, everywhere("24.11", ("db", "ctl", "gpu01"))) == []


def test_nodes_left_further_behind_than_slurmctlds_window_are_refused():
    before = {**everywhere("23.02", ("db", "ctl")), **everywhere("22.05", ("login1", "gpu01", "gpu02", "gpu03",
                                                              "gpu04"))}
    found = upgrade_problems(cluster("23.11"), before, everywhere("23.11", ("db", "ctl")))
    assert "ctl: slurmctld would run 23.11, too far behind" not in " ".join(found)
    assert ("gpu[01-04]: slurmd would run 22.05, too far behind slurmctld 23.11 on ctl, which talks to 22.05, 23.02 "
            "and 23.11 only") not in found   # 22.05 is within 23.11's window
    found = upgrade_problems(cluster("24.05"), before, everywhere("24.05", ("db", "ctl")))
    assert "gpu[01-04]: slurmd would run 22.05, too far behind slurmctld 24.05 on ctl, which talks to 23.02, 23.11 " \
           "and 24.05 only" in found
    assert "login1: Slurm's commands would run 22.05, too far behind slurmctld 24.05 on ctl, which talks to 23.02, " \
           "23.11 and 24.05 only" in found


def test_hosts_at_one_release_and_first_installs_pass():
    assert upgrade_problems(cluster("22.05"), everywhere("22.05"), everywhere("22.05")) == []
    assert upgrade_problems(cluster("24.11"), {}, everywhere("24.11")) == []
