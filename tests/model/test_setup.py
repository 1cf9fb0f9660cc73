"""Rules for how hosts are prepared (Setup): apt proxy, /etc/hosts, the daemons' fixed ids."""

from __future__ import annotations

import pytest
from clusters import only_problem, small_cluster

from clusterforge.model import Host, Monitoring, Nodes, Setup, SystemUser, resolve


def test_the_defaults_are_valid():
    resolve(small_cluster(setup=Setup()))


@pytest.mark.parametrize("proxy", ["10.0.0.1:3142", "ftp://proxy:21", "http://"])
def test_apt_proxy_must_be_an_http_address(proxy):
    assert "setup.apt_proxy" in only_problem(small_cluster(setup=Setup(apt_proxy=proxy)))


def test_munge_and_slurm_cannot_share_a_uid():
    problem = only_problem(small_cluster(setup=Setup(munge_user=SystemUser(uid=500, gid=500),
                                                     slurm_user=SystemUser(uid=500, gid=501))))
    assert "uid 500 is also the munge user's" in problem
    assert "test_setup.py" in problem  # the inventory line of the offending entry


def test_etc_hosts_needs_every_address():
    cluster = small_cluster(setup=Setup(etc_hosts=True), login=(Host("login1"),),
                            nodes=(Nodes("gpu[01-04]", profile="gpu", leaf="leaf1"),))
    problem = only_problem(cluster)
    assert "setup.etc_hosts" in problem and "login1" in problem and "gpu[01-04]" in problem


def test_etc_hosts_takes_a_host_named_twice_by_the_address_one_entry_gives():
    # The database and the monitoring on the controller, written by name alone: one machine, one address.
    cluster = small_cluster(setup=Setup(etc_hosts=True), controller=Host("ctl", address="10.0.0.1"),
                            database=Host("ctl", memory=4096), monitoring=Monitoring(host=Host("ctl")),
                            login=(Host("login1", address="10.0.0.2"),),
                            nodes=(Nodes("gpu[01-04]", address="10.0.1.[1-4]", profile="gpu", leaf="leaf1"),))
    machines = resolve(cluster).machines
    assert next(m for m in machines if m.name == "ctl").address == "10.0.0.1"
