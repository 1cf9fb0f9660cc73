"""repair.json, the repair loop's plan: the nodes of the profiles repaired with their BMCs (never a credential, only
the controller's file holding it), each profile's policy with every default filled in, the fleet's budget and
breaker; the same bytes for the same inventory, read back by the loop's own reader."""

from __future__ import annotations

import json

from clusters import gpu_profile, small_cluster

from clusterforge.model import Bmc, Breaker, Health, Nodes, Partition, Profile, Repair, Vault, resolve
from clusterforge.render import repair
from clusterforge.repair.plan import Bmc as PlanBmc
from clusterforge.repair.plan import NodePlan, Plan, Policy


def cluster(**overrides):
    """Four GPU nodes repaired (two with a BMC), and two CPU nodes of a profile that observes."""
    fields = dict(
        profiles=(gpu_profile(repair=Repair(mode="on", attempts=3)),
                  Profile("cpu", sockets=1, cores_per_socket=4, real_memory=2000,
                          repair=Repair(mode="observe", classes=("reboot",), reboot_timeout=600))),
        nodes=(Nodes("gpu[01-02]", address="10.9.1.[1-2]", profile="gpu", leaf="leaf1",
                     bmc=Bmc(address="10.9.2.[1-2]", protocol="ipmi", cipher_suite=3)),
               Nodes("gpu[03-04]", address="10.9.1.[3-4]", profile="gpu", leaf="leaf1"),
               Nodes("cpu[1-2]", address="10.9.3.[1-2]", profile="cpu", leaf="leaf1",
                     bmc=Bmc(address="bmc-cpu[1-2]", protocol="redfish", port=8443, system="1",
                             ca_file="/etc/ssl/bmc-ca.pem"))),
        partitions=(Partition("batch", profiles=("gpu", "cpu"), default=True),),
        health=Health(xid={48: "drain", 79: "reset", 13: "record"}),
        repair_budget=2, repair_breaker=Breaker(faults=4, window=1800), vault=Vault())
    fields.update(overrides)
    return small_cluster(**fields)


def test_no_profile_repaired_renders_nothing():
    assert repair.render(resolve(small_cluster())) is None
    assert repair.plan(resolve(small_cluster(profiles=(gpu_profile(repair=Repair()),)))) is None


def test_the_plan_of_a_small_cluster():
    rendered = repair.render(resolve(cluster()))
    assert rendered is not None and rendered.endswith("}\n")
    data = json.loads(rendered)
    assert data == {
        "version": 1,
        "budget": 2, "breaker_faults": 4, "breaker_window_s": 1800,
        "xid": {"13": "record", "48": "reboot", "79": "reset"},
        "profiles": {
            # Two of its nodes have a BMC: the profile power cycles, those two only.
            "gpu": {"mode": "on", "classes": ["reset", "reboot"], "power_cycle": True, "attempts": 3,
                    "window_s": 86400, "bounds_s": {"reset": 900, "reboot": 1500, "power_cycle": 1800},
                    "gate": False},
            "cpu": {"mode": "observe", "classes": ["reboot"], "power_cycle": True, "attempts": 2,
                    "window_s": 86400, "bounds_s": {"reset": 900, "reboot": 600, "power_cycle": 1800},
                    "gate": False},
        },
        "nodes": {
            "gpu01": {"profile": "gpu", "bmc": {"address": "10.9.2.1", "protocol": "ipmi", "port": 0,
                                                "system": "", "cipher_suite": 3, "verify_tls": True, "ca_file": "",
                                                "credentials": "/etc/clusterforge/bmc/gpu01.json"}},
            "gpu02": {"profile": "gpu", "bmc": {"address": "10.9.2.2", "protocol": "ipmi", "port": 0,
                                                "system": "", "cipher_suite": 3, "verify_tls": True, "ca_file": "",
                                                "credentials": "/etc/clusterforge/bmc/gpu02.json"}},
            "gpu03": {"profile": "gpu", "bmc": None},
            "gpu04": {"profile": "gpu", "bmc": None},
            "cpu1": {"profile": "cpu", "bmc": {"address": "bmc-cpu1", "protocol": "redfish", "port": 8443,
                                               "system": "1", "cipher_suite": None, "verify_tls": True,
                                               "ca_file": "/etc/ssl/bmc-ca.pem",
                                               "credentials": "/etc/clusterforge/bmc/cpu1.json"}},
            "cpu2": {"profile": "cpu", "bmc": {"address": "bmc-cpu2", "protocol": "redfish", "port": 8443,
                                               "system": "1", "cipher_suite": None, "verify_tls": True,
                                               "ca_file": "/etc/ssl/bmc-ca.pem",
                                               "credentials": "/etc/clusterforge/bmc/cpu2.json"}},
        },
    }
    assert repair.PATH == "/etc/clusterforge/repair.json"


def test_the_loop_reads_back_what_was_rendered():
    valid = resolve(cluster())
    rendered = repair.render(valid)
    assert rendered is not None
    read = Plan.from_json(rendered)
    assert read == repair.plan(valid)
    assert read.policy("gpu03") == Policy("on", ("reset", "reboot"), True, 3, 86400,
                                          {"reset": 900, "reboot": 1500, "power_cycle": 1800}, False)
    assert read.nodes["gpu01"] == NodePlan("gpu", PlanBmc("10.9.2.1", "ipmi", "/etc/clusterforge/bmc/gpu01.json",
                                                          0, "", 3))
    assert read.to_json() == rendered


def test_a_node_whose_profile_does_not_power_cycle_has_no_bmc_in_the_plan_and_no_credentials_named():
    valid = resolve(cluster(profiles=(gpu_profile(repair=Repair(mode="on", power_cycle=False)),
                                      Profile("cpu", sockets=1, cores_per_socket=4, real_memory=2000))))
    found = repair.plan(valid)
    assert found is not None and set(found.nodes) == {"gpu01", "gpu02", "gpu03", "gpu04"}  # cpu: no Repair
    assert all(n.bmc is None for n in found.nodes.values()) and found.profiles["gpu"].power_cycle is False
    assert "/etc/clusterforge/bmc" not in (repair.render(valid) or "")


def test_without_a_repair_budget_the_disruption_budget_is_the_plans():
    found = repair.plan(resolve(cluster(repair_budget=None, disruption_budget=6)))
    assert found is not None and found.budget == 6


def test_the_same_inventory_gives_the_same_bytes():
    # Two clusters built apart, entries in another order: the same plan, byte for byte.
    first = cluster()
    second = cluster(nodes=tuple(reversed(first.nodes)), profiles=tuple(reversed(first.profiles)),
                     health=Health(xid={79: "reset", 13: "record", 48: "drain"}))
    assert repair.render(resolve(first)) == repair.render(resolve(second))
    assert repair.render(resolve(first)) == repair.render(resolve(cluster()))


def test_no_credential_is_ever_in_the_plan():
    rendered = repair.render(resolve(cluster())) or ""
    assert "slurm/t/bmc" not in rendered and "slurm/{cluster}/bmc" not in rendered
    assert "password" not in rendered and "username" not in rendered
