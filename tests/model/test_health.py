"""The node health check in the inventory: refused where it cannot work, named at its line; what each node is
expected to have, rendered from the resolved node; the slurm.conf keys that run it."""

from __future__ import annotations

import json

import pytest
from clusters import gpu_profile, only_problem, problems, small_cluster

from clusterforge.health.expect import Expectations
from clusterforge.key_tables import slurm_conf_keys
from clusterforge.model import (
    Fabric, Health, Host, Leaf, Nfs, NfsExport, NfsMount, Nodes, Partition, Profile, Rail, resolve,
)
from clusterforge.model.settings import HEALTH_PROGRAM
from clusterforge.render import health


def test_by_default_every_node_is_checked_every_five_minutes_drained_ones_too():
    valid = resolve(small_cluster())
    assert (valid.slurm_conf["HealthCheckProgram"], valid.slurm_conf["HealthCheckInterval"],
            valid.slurm_conf["HealthCheckNodeState"]) == (HEALTH_PROGRAM, "300", "ANY,CYCLE")


def test_disabled_there_is_no_program_and_no_node_has_expectations():
    valid = resolve(small_cluster(health=Health(enabled=False)))
    assert "HealthCheckProgram" not in valid.slurm_conf and "HealthCheckInterval" not in valid.slurm_conf
    assert all(health.expectations(valid, m) is None for m in valid.machines)


def test_an_interval_shorter_than_the_checks_own_bound_is_refused_at_its_line():
    problem = only_problem(small_cluster(health=Health(interval=30)))
    assert "health.interval" in problem and "30 s is shorter than the check's own bound: at least 60" in problem
    assert "test_health.py" in problem


def test_an_unknown_probe_a_number_no_xid_has_and_a_probe_timeout_past_the_bound_are_each_named():
    found = problems(small_cluster(health=Health(probes=("gpus", "smart"), xid={79: "record", 0: "drain"},
                                                 probe_timeout=45)))
    assert any("unknown probe 'smart'" in p for p in found)
    assert any("health.xid[0]" in p and "Xid 0 is not an Xid number (1 to 65535)" in p for p in found)
    assert any("health.probe_timeout" in p and "45 s: 1 to 30" in p for p in found)
    assert len(found) == 3


def test_any_xid_may_be_classed_and_a_check_without_probes_is_refused():
    valid = resolve(small_cluster(health=Health(xid={8: "record", 999: "reset", 48: "drain"})))
    expect = next(e for m in valid.machines if (e := health.expectations(valid, m)))
    assert expect.xid_actions == {8: "record", 999: "reset", 48: "drain"}
    problem = only_problem(small_cluster(health=Health(probes=())))
    assert "health.probes" in problem and "no probe: the check would find nothing wrong" in problem


def test_the_link_error_limits_are_the_defaults_with_the_inventorys_over_them():
    valid = resolve(small_cluster(health=Health(link_errors={"symbol_error": 50, "port_rcv_errors": 1000,
                                                             "link_downed": None})))
    expect = next(e for m in valid.machines if (e := health.expectations(valid, m)))
    assert (expect.link_errors["symbol_error"], expect.link_errors["port_rcv_errors"],
            expect.link_errors["link_downed"], expect.link_errors["excessive_buffer_overrun_errors"]) == (50, 1000,
                                                                                                         None, 0)
    assert Expectations.from_json(expect.to_json()) == expect
    plain = resolve(small_cluster())
    default = next(e for m in plain.machines if (e := health.expectations(plain, m)))
    assert default.link_errors["link_downed"] == 0 and default.link_errors["port_xmit_discards"] is None


def test_an_unknown_counter_and_a_negative_limit_are_each_named_at_their_line():
    found = problems(small_cluster(health=Health(link_errors={"symbol_errors": 5, "link_downed": -1},
                                                 infiniband_sysfs="run/ib")))
    assert any("health.link_errors[symbol_errors]" in p and "'symbol_errors' is not an InfiniBand port error "
               "counter; they are symbol_error, link_error_recovery" in p and "test_health.py" in p for p in found)
    assert any("health.link_errors[link_downed]" in p and "-1: the most link_downed may rise" in p for p in found)
    assert any("'run/ib' is not an absolute path" in p for p in found)
    assert len(found) == 3


def test_by_default_a_reboot_through_slurm_runs_reboot_and_may_take_twenty_minutes():
    valid = resolve(small_cluster())
    # Through clusterforge's wrapper, which keeps the evidence of a node's hardware faults first (health/reboot.py).
    assert (valid.slurm_conf["RebootProgram"], valid.slurm_conf["ResumeTimeout"]) == (
        "/usr/sbin/clusterforge-reboot", "1200")
    expectations = [e for m in valid.machines if (e := health.expectations(valid, m))]
    assert expectations and all((e.reboot_wait_s, e.reboot_program) == (1200, "/usr/sbin/reboot") for e in expectations)
    assert "/usr/sbin/clusterforge-reboot" in health.launchers(valid)


def test_a_relative_reboot_program_and_a_reboot_timeout_out_of_range_are_each_named():
    found = problems(small_cluster(health=Health(reboot_program="reboot", reboot_timeout=70000)))
    assert any("health.reboot_program" in p and "'reboot': slurmd runs it without a PATH" in p for p in found)
    assert any("health.reboot_timeout" in p and "70000 s: 60 to 65535" in p for p in found)
    assert len(found) == 2


def test_a_relative_mount_is_refused():
    assert "'scratch' is not an absolute path" in only_problem(small_cluster(health=Health(mounts=("scratch",))))


def test_a_nodes_expectations_come_from_its_profile_the_fabric_and_the_mounts_of_compute_hosts():
    profile = gpu_profile().model_copy(update={"nvswitch": True, "ib_rate": 400})
    cluster = small_cluster(
        profiles=(profile,),
        fabric=Fabric(leaves=(Leaf("leaf1"), Leaf("leaf2", nodes="gpu[01-04]")), rail_optimized=True,
                      rails=(Rail("r0", hca="mlx5_0", leaves="leaf1"), Rail("r1", hca="mlx5_3", leaves="leaf2"))),
        nfs=Nfs(server=Host("ctl", address="10.9.0.1"), exports=(NfsExport(path="/srv/home"),),
                mounts=(NfsMount(export="/srv/home", mount_point="/home"),
                        NfsMount(export="/srv/home", mount_point="/login-only", on=("login",)))),
        health=Health(mounts=("/scratch",), xid={43: "drain"}))
    valid = resolve(cluster)
    machine = next(m for m in valid.machines if m.name == "gpu02")
    expect = health.expectations(valid, machine)
    assert expect is not None and expect.node == "gpu02"
    assert expect.gpu_count == profile.gpus.count and expect.device_files == machine.device_files
    assert [(h.name, h.min_rate) for h in expect.hcas] == [("mlx5_0", 400), ("mlx5_3", 400)]
    assert expect.mounts == ("/home", "/scratch") and expect.daemons == ("munge",)
    assert expect.fabric_manager and expect.xid_actions == {43: "drain"}
    # What the node reads back is what was rendered, byte for byte the same each time.
    text = expect.to_json()
    assert Expectations.from_json(text) == expect and text == health.expectations(valid, machine).to_json()
    assert json.loads(text)["xid_actions"] == {"43": "drain"}


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_the_keys_are_ones_each_release_accepts(version):
    valid = resolve(small_cluster(slurm_version=version))
    table = slurm_conf_keys(valid.version)
    for key in ("HealthCheckProgram", "HealthCheckInterval", "HealthCheckNodeState"):
        assert table.lookup(key) == key and not table.is_defunct(key)
        assert key in valid.slurm_conf


def test_a_reboot_program_with_arguments_is_what_the_wrapper_runs():
    from clusterforge.render import slurm_conf

    valid = resolve(small_cluster(health=Health(reboot_program="/usr/bin/systemctl --no-block restart slurmd")))
    assert "RebootProgram=/usr/sbin/clusterforge-reboot\n" in slurm_conf.render(valid)
    assert {e.reboot_program for m in valid.machines if (e := health.expectations(valid, m))} == {
        "/usr/bin/systemctl --no-block restart slurmd"}


def test_a_nodes_expectations_say_whether_its_profile_has_an_admission_gate():
    from clusterforge.model import Admission, Programs

    plain = gpu_profile()
    gated = Profile("gated", **{**plain.model_dump(exclude={"name"}),
                                "admission": Admission(programs=Programs(bin_dir="/opt/t"), tests=("dcgm",))})
    cluster = small_cluster(profiles=(plain, gated), nodes=(
        Nodes("gpu[01-02]", address="10.9.1.[1-2]", profile="gpu", leaf="leaf1"),
        Nodes("gpu[03-04]", address="10.9.1.[3-4]", profile="gated", leaf="leaf1")),
        partitions=(Partition("batch", profiles=("gpu", "gated"), default=True),))
    valid = resolve(cluster)
    expectations = [e for m in valid.machines if (e := health.expectations(valid, m))]
    assert {e.node: e.admission for e in expectations} == {"gpu01": False, "gpu02": False, "gpu03": True,
                                                           "gpu04": True}
    # As the node reads its file.
    assert [Expectations.from_json(e.to_json()).admission for e in expectations] == [False, False, True, True]
