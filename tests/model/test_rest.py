"""Rules for Rest: where slurmrestd runs, its port and address, its user's ids; the keys it adds to slurm.conf."""

from __future__ import annotations

import pytest
from clusters import only_problem, problems, small_cluster

from clusterforge.key_tables import slurm_conf_keys
from clusterforge.model import Host, Monitoring, Rest, Setup, SystemUser, resolve
from clusterforge.versions import SUPPORTED


def test_without_rest_nothing_of_it_is_there():
    valid = resolve(small_cluster())
    assert valid.rest is None
    assert "AuthAltTypes" not in valid.slurm_conf and all("rest" not in m.groups for m in valid.machines)


def test_slurmrestd_runs_on_the_controller_unless_the_inventory_names_another_slurm_host():
    valid = resolve(small_cluster(rest=Rest()))
    assert valid.rest is not None and valid.rest.host.name == "ctl" and valid.rest.port == 6820
    assert [m.name for m in valid.machines if "rest" in m.groups] == ["ctl"]
    login = resolve(small_cluster(login=(Host("login1", address="10.9.0.7"),), rest=Rest(host=Host("login1"))))
    assert (login.rest.host.name, login.rest.host.address) == ("login1", "10.9.0.7")  # as the cluster gives it
    assert next(m for m in login.machines if m.name == "login1").groups == ("login", "rest")


def test_both_jwt_keys_go_to_slurm_conf_with_the_key_path():
    conf = resolve(small_cluster(rest=Rest())).slurm_conf
    assert conf["AuthAltTypes"] == "auth/jwt"
    assert conf["AuthAltParameters"] == "jwt_key=/etc/slurm/jwt_hs256.key"


@pytest.mark.parametrize("version", SUPPORTED, ids=str)
def test_every_supported_release_takes_auth_jwt_so_none_is_refused(version):
    # auth/jwt came with Slurm 20.02 and AuthAltParameters with 20.11: older than every release rendered for.
    table = slurm_conf_keys(version)
    assert table.lookup("AuthAltTypes") == "AuthAltTypes" and table.lookup("AuthAltParameters") == "AuthAltParameters"
    resolve(small_cluster(rest=Rest()), version)


def test_slurmrestd_needs_a_host_with_slurm_conf():
    problem = only_problem(small_cluster(rest=Rest(host=Host("elsewhere"))))
    assert problem.startswith("rest.host: elsewhere is not a host of this cluster that has slurm.conf")
    assert "test_rest.py" in problem  # the inventory line


def test_its_host_takes_the_address_the_cluster_gives_that_name():
    assert "rest.host.address: ctl is 10.9.0.1 where the cluster names it" in only_problem(
        small_cluster(rest=Rest(host=Host("ctl", address="10.9.9.9"))))


@pytest.mark.parametrize(("rest", "message"), [
    (Rest(port=0), "rest.port: 0 is not a TCP port (1 to 65535)"),
    (Rest(port=70000), "rest.port: 70000 is not a TCP port"),
    (Rest(port=6817), "rest.port: 6817 is already Slurm's SlurmctldPort"),
    (Rest(port=6819), "rest.port: 6819 is already Slurm's AccountingStoragePort"),
    (Rest(listen="every"), "rest.listen: 'every' is not an IP address"),
])
def test_port_and_address(rest, message):
    assert only_problem(small_cluster(rest=rest)).startswith(message)


def test_a_port_the_inventory_moves_slurm_to_or_monitoring_takes_is_refused():
    assert only_problem(small_cluster(rest=Rest(port=7000), slurm_conf_extra={"SlurmdPort": 7000})).startswith(
        "rest.port: 7000 is already Slurm's SlurmdPort")
    assert only_problem(small_cluster(rest=Rest(port=9100), monitoring=Monitoring(host=Host("ctl")))).startswith(
        "rest.port: 9100 is already node exporter")
    resolve(small_cluster(rest=Rest(port=9100)))  # no monitoring: free


def test_its_user_has_ids_of_its_own():
    found = problems(small_cluster(rest=Rest(), setup=Setup(slurmrestd_user=SystemUser(uid=990, gid=64030))))
    assert found[0].startswith("setup.slurmrestd_user: uid 990 is also the munge user's")
    assert found[1].startswith("setup.slurmrestd_user: gid 64030 is also the slurm group's")


def test_with_rest_the_jwt_keys_are_the_inventorys_and_without_a_sites_own():
    extra = {"AuthAltTypes": "auth/jwt", "AuthAltParameters": "jwt_key=/srv/key"}
    found = problems(small_cluster(rest=Rest(), slurm_conf_extra=extra))
    assert [p.split(" (")[0] for p in found] == ["slurm_conf_extra[AuthAltTypes]: set by the inventory",
                                                 "slurm_conf_extra[AuthAltParameters]: set by the inventory"]
    assert resolve(small_cluster(slurm_conf_extra=extra)).slurm_conf["AuthAltParameters"] == "jwt_key=/srv/key"
