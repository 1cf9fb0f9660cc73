"""Rules for how hosts are prepared (Setup): apt proxy, /etc/hosts, the daemons' fixed ids."""

from __future__ import annotations

import pytest
from clusters import only_problem, small_cluster

from clusterforge.model import Host, Nodes, Setup, SystemUser, resolve


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
