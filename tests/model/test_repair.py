"""Automatic repair in the inventory: a profile's Repair, the fleet's budget and breaker, the nodes' BMCs. Off unless
written; what cannot work refused at its line, naming the entry; every default resolved once."""

from __future__ import annotations

from typing import Any

import pytest
from clusters import gpu_profile, only_problem, problems, small_cluster

from clusterforge.errors import InventoryError
from clusterforge.model import Admission, Bmc, Breaker, Health, Nodes, Programs, Repair, Vault, resolve
from clusterforge.model.base import deferring
from clusterforge.model.cluster import Cluster


def bmc(**overrides: Any) -> Bmc:
    return Bmc(**{"address": "10.9.2.[1-4]", "protocol": "ipmi", **overrides})


def nodes(bmc: Bmc | None = None, names: str = "gpu[01-04]", address: str = "10.9.1.[1-4]") -> Nodes:
    return Nodes(names, address=address, profile="gpu", leaf="leaf1", bmc=bmc)


def repaired(repair: Repair | None = None, *, node_bmc: Bmc | None = None, **overrides: Any) -> Cluster:
    """The small cluster with its profile repaired (on, by default), its nodes' BMCs where given, and Vault."""
    fields: dict[str, Any] = dict(profiles=(gpu_profile(repair=repair or Repair(mode="on")),),
                                  nodes=(nodes(node_bmc),), vault=Vault())
    fields.update(overrides)
    return small_cluster(**fields)


def test_by_default_no_profile_is_repaired_and_no_node_has_a_bmc():
    valid = resolve(small_cluster())
    assert valid.repair is None and all(n.bmc is None for n in valid.nodes)
    assert Repair().mode == "off" and Repair().classes == ("reset", "reboot")
    assert (Repair().attempts, Repair().window, Repair().reset_timeout, Repair().reboot_timeout,
            Repair().power_cycle_timeout, Repair().power_cycle) == (2, 86400, 900, None, 1800, None)
    assert (Breaker().faults, Breaker().window) == (3, 3600)
    assert small_cluster().repair_budget is None and bmc().credentials == "slurm/{cluster}/bmc"


def test_a_profile_whose_repair_is_off_is_not_in_the_resolved_repair():
    assert resolve(repaired(Repair())).repair is None
    assert resolve(repaired(Repair(mode="off"), node_bmc=bmc())).repair is None


def test_a_repaired_profile_resolves_every_default_once():
    valid = resolve(repaired(Repair(mode="observe"), node_bmc=bmc(port=8443, cipher_suite=3),
                             health=Health(reboot_timeout=1000, xid={48: "drain", 13: "reset", 8: "record"})))
    assert valid.repair is not None
    (policy,) = valid.repair.policies
    assert (policy.profile, policy.spec.mode, policy.nodes) == ("gpu", "observe", ("gpu01", "gpu02", "gpu03", "gpu04"))
    # The reboot's bound is Slurm's ResumeTimeout and 300 s; every node has a BMC, so the nodes are power cycled.
    assert dict(policy.bounds) == {"reset": 900, "reboot": 1300, "power_cycle": 1800}
    assert policy.power_cycle is True and policy.gate is False
    # The budget is the disruption budget's unless given; 'drain' is read as 'reboot'.
    assert (valid.repair.budget, valid.repair.breaker.faults, valid.repair.breaker.window) == (4, 3, 3600)
    assert dict(valid.repair.xid) == {8: "record", 13: "reset", 48: "reboot"}
    node = valid.nodes[2]
    assert node.bmc is not None and (node.bmc.address, node.bmc.spec.port, node.bmc.spec.cipher_suite) == (
        "10.9.2.3", 8443, 3)


def test_the_inventorys_budget_bounds_and_breaker_are_kept_and_a_profile_with_admission_gates_its_repairs():
    profile = gpu_profile(repair=Repair(mode="on", reboot_timeout=2400, power_cycle=False),
                          admission=Admission(programs=Programs(bin_dir="/opt/tests"), tests=("dcgm",)))
    valid = resolve(repaired(profiles=(profile,), node_bmc=bmc(), repair_budget=2,
                             repair_breaker=Breaker(faults=5, window=600)))
    assert valid.repair is not None
    (policy,) = valid.repair.policies
    assert (policy.bounds["reboot"], policy.power_cycle, policy.gate) == (2400, False, True)
    assert (valid.repair.budget, valid.repair.breaker.faults, valid.repair.breaker.window) == (2, 5, 600)


def test_a_power_cycle_left_to_the_bmcs_happens_where_any_node_has_one():
    without = resolve(repaired())
    assert without.repair is not None and without.repair.policies[0].power_cycle is False
    some = repaired(nodes=(nodes(bmc(address="10.9.2.[1-2]"), "gpu[01-02]", "10.9.1.[1-2]"),
                           nodes(None, "gpu[03-04]", "10.9.1.[3-4]")))
    valid = resolve(some)
    assert valid.repair is not None and valid.repair.policies[0].power_cycle is True
    assert [n.bmc.address if n.bmc else None for n in valid.nodes] == ["10.9.2.1", "10.9.2.2", None, None]


def test_a_power_cycle_required_where_some_nodes_have_no_bmc_is_refused_naming_them():
    some = repaired(Repair(mode="on", power_cycle=True),
                    nodes=(nodes(bmc(address="10.9.2.[1-2]"), "gpu[01-02]", "10.9.1.[1-2]"),
                           nodes(None, "gpu[03-04]", "10.9.1.[3-4]")))
    problem = only_problem(some)
    assert problem.startswith("profiles[gpu].repair.power_cycle: True needs every node's BMC, and gpu[03-04] have "
                              "none") and "test_repair.py" in problem


def test_on_with_no_node_allowed_in_repair_is_refused_observe_is_not():
    problem = only_problem(repaired(repair_budget=0))
    assert problem.startswith("repair_budget: 0: at least 1 while a profile's repair is on (gpu)")
    assert resolve(repaired(Repair(mode="observe"), repair_budget=0)).repair.budget == 0
    assert "repair_budget: -1: not negative" in only_problem(repaired(Repair(mode="observe"), repair_budget=-1))


def test_attempts_below_one_and_bounds_below_a_minute_are_each_named():
    found = problems(repaired(Repair(mode="on", attempts=0, reset_timeout=30, reboot_timeout=59,
                                     power_cycle_timeout=0)))
    assert sorted(p.split(":", 1)[0] for p in found) == [
        "profiles[gpu].repair.attempts", "profiles[gpu].repair.power_cycle_timeout",
        "profiles[gpu].repair.reboot_timeout", "profiles[gpu].repair.reset_timeout"]
    assert any("attempts: 0: at least 1" in p for p in found)
    assert any("reset_timeout: 30 s: at least 60" in p for p in found)


def test_a_window_shorter_than_one_action_is_refused_naming_the_action():
    problem = only_problem(repaired(Repair(mode="on", window=1000)))
    # No BMC: no power cycle; the reboot (1200 + 300 s) is the longest action.
    assert problem.startswith("profiles[gpu].repair.window: 1000 s is shorter than one reboot (1500 s)")
    with_bmc = only_problem(repaired(Repair(mode="on", window=1700), node_bmc=bmc()))
    assert with_bmc.startswith("profiles[gpu].repair.window: 1700 s is shorter than one power cycle (1800 s)")
    assert resolve(repaired(Repair(mode="on", window=1500))).repair is not None
    # Off, with no class: no action, and still no window shorter than a minute.
    assert "repair.window: 30 s: at least 60" in only_problem(repaired(Repair(classes=(), window=30)))


def test_no_class_and_a_class_twice_are_refused():
    assert "classes: no fault class: nothing would be repaired" in only_problem(repaired(Repair(mode="on",
                                                                                               classes=())))
    assert "classes: reboot is listed 2 times" in only_problem(repaired(Repair(mode="on",
                                                                               classes=("reboot", "reboot"))))


def test_repair_with_the_health_check_off_is_refused():
    problem = only_problem(repaired(Repair(mode="observe", classes=("reset",)), health=Health(enabled=False)))
    assert problem.startswith("profiles[gpu].repair.mode: 'observe' with the health check off")
    assert resolve(repaired(Repair(mode="off"), health=Health(enabled=False))).repair is None


def test_a_breaker_that_opens_at_once_or_counts_over_less_than_a_minute_is_refused():
    found = problems(repaired(repair_breaker=Breaker(faults=0, window=10)))
    assert [p.rsplit(" (", 1)[0] for p in found] == [
        ("repair_breaker.faults: 0: at least 1 (with 0, the first node to fault opens the breaker and no node is "
         "ever repaired)"), "repair_breaker.window: 10 s: at least 60"]


def test_a_bmc_hostlist_of_another_count_is_refused_like_a_nodes_address():
    problem = only_problem(repaired(node_bmc=bmc(address="10.9.2.[1-3]")))
    assert problem.startswith("nodes[gpu[01-04]].bmc.address: 10.9.2.[1-3] gives 3 addresses for 4 nodes")
    assert "test_repair.py" in problem
    assert "is not a valid hostlist" in only_problem(repaired(node_bmc=bmc(address="10.9.2.[1-")))
    assert "'bad_name!' is neither an IP address nor a DNS name" in only_problem(repaired(node_bmc=bmc(
        address="bad_name!,10.9.2.[2-4]")))


def test_one_bmc_for_two_nodes_is_refused():
    problem = only_problem(repaired(node_bmc=bmc(address="10.9.2.1,10.9.2.[1-3]")))
    assert problem.startswith("nodes[gpu[01-04]].bmc.address: 10.9.2.1, the BMC of gpu02, is already the BMC of "
                              "gpu01")


def test_a_bmc_without_vault_is_refused():
    problem = only_problem(repaired(node_bmc=bmc(), vault=None))
    assert problem.startswith("nodes[gpu[01-04]].bmc.credentials: the BMCs' credentials come from Vault, and this "
                              "cluster has none")


def test_a_port_out_of_range_and_a_system_id_for_ipmi_or_a_bad_one_are_refused():
    assert "bmc.port: 70000: a port is 1 to 65535" in only_problem(repaired(node_bmc=bmc(port=70000)))
    assert "bmc.system: 'Self': a Redfish system's id, and these BMCs speak ipmi" in only_problem(
        repaired(node_bmc=bmc(protocol="ipmi", system="Self")))
    found = str(problems(repaired(node_bmc=bmc(protocol="redfish", system="a/b"))))
    assert "bmc.system: 'a/b' is not a Redfish system id" in found


def test_redfish_bmcs_are_accepted_with_their_ca_file_or_unchecked_tls():
    for spec in (bmc(protocol="redfish"), bmc(protocol="redfish", ca_file="/etc/ssl/bmc-ca.pem", system="1"),
                 bmc(protocol="redfish", verify_tls=False, port=8443)):
        assert resolve(repaired(node_bmc=spec)).repair is not None


def test_a_setting_of_the_other_protocol_is_refused_not_ignored():
    assert "bmc.ca_file: '/etc/ssl/bmc-ca.pem': a Redfish setting, and these BMCs speak ipmi" in only_problem(
        repaired(node_bmc=bmc(ca_file="/etc/ssl/bmc-ca.pem")))
    assert "bmc.verify_tls: a Redfish setting, and these BMCs speak ipmi" in only_problem(
        repaired(node_bmc=bmc(verify_tls=False)))
    assert "bmc.cipher_suite: 17: an IPMI setting, and these BMCs speak redfish" in only_problem(
        repaired(node_bmc=bmc(protocol="redfish", cipher_suite=17)))


def test_a_ca_file_must_be_an_absolute_path_and_checked_against():
    for path in ("bmc-ca.pem", "/etc/../tmp/ca.pem", "/etc/ssl/my ca.pem", "/etc/ssl/"):
        assert f"bmc.ca_file: {path!r} is not an absolute path on the controller" in only_problem(
            repaired(node_bmc=bmc(protocol="redfish", ca_file=path)))
    assert ("bmc.ca_file: '/etc/ssl/bmc-ca.pem': certificates to check against, and verify_tls=False checks none"
            in only_problem(repaired(node_bmc=bmc(protocol="redfish", ca_file="/etc/ssl/bmc-ca.pem",
                                                  verify_tls=False))))


def test_the_credentials_path_is_checked_as_every_vault_path_is():
    with pytest.raises(InventoryError, match="the only placeholder a path may hold is"):
        bmc(credentials="bmc/{site}")
    with pytest.raises(InventoryError, match="without leading or trailing"):
        bmc(credentials="/bmc/")


def test_a_wrong_type_in_a_repair_entry_is_named_by_its_place_in_the_cluster():
    with deferring():
        cluster = repaired(Repair(mode="sometimes"), node_bmc=Bmc(address="10.9.2.[1-4]", protocol="snmp"))
    found = problems(cluster)
    assert any(p.startswith("profiles[gpu].repair.mode = 'sometimes'") for p in found)
    assert any(p.startswith("nodes[gpu[01-04]].bmc.protocol = 'snmp'") for p in found)


def test_a_bmc_left_out_for_a_type_mistake_is_not_called_missing():
    with deferring():
        cluster = repaired(Repair(mode="on", power_cycle=True), node_bmc=Bmc(address="10.9.2.[1-4]", protocol="snmp"))
    assert [p.split(" = ")[0] for p in problems(cluster)] == ["nodes[gpu[01-04]].bmc.protocol"]
