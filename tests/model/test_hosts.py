"""Rules for hosts and addresses: service hosts, node names and addresses, NFS."""

from __future__ import annotations

import pytest
from clusters import only_problem, problems, small_cluster

from clusterforge.model import Fabric, Host, Leaf, Nfs, NfsExport, NfsMount, Nodes, Partition, Profile, resolve
from clusterforge.model.base import deferring


def test_duplicate_node_names_across_entries():
    nodes = (Nodes("gpu[01-04]", profile="gpu", leaf="leaf1"), Nodes("gpu[04-05]", profile="gpu", leaf="leaf1"))
    text = only_problem(small_cluster(nodes=nodes))
    assert text.startswith("nodes[gpu[04-05]]: gpu04 already defined (at ")


def test_duplicate_addresses():
    nodes = (Nodes("gpu[01-02]", address="10.9.1.[1-2]", profile="gpu", leaf="leaf1"),
             Nodes("gpu03", address="10.9.1.2", profile="gpu", leaf="leaf1"))
    assert only_problem(small_cluster(nodes=nodes)).startswith(
        "nodes[gpu03].address: 10.9.1.2 of gpu03 is already the address of gpu02")


def test_two_service_hosts_at_one_address_are_named_with_it():
    found = only_problem(small_cluster(database=Host("db", address="10.9.0.1", memory=8192)))
    assert found.startswith("database.address: 10.9.0.1 of db is already the address of ctl (")


def test_a_login_host_listed_twice_is_one_problem_whatever_its_addresses():
    login = (Host("login1", address="10.9.0.5"), Host("login1", address="10.9.0.6"))
    assert only_problem(small_cluster(login=login)).startswith("login[login1]: listed twice (")


def test_a_node_defined_twice_is_one_problem_not_also_an_address_taken():
    nodes = (Nodes("gpu[01-04]", address="10.9.1.[1-4]", profile="gpu", leaf="leaf1"),
             Nodes("gpu04", address="10.9.1.2", profile="gpu", leaf="leaf1"))
    assert only_problem(small_cluster(nodes=nodes)).startswith("nodes[gpu04]: gpu04 already defined (at ")


def test_a_node_named_like_a_service_host_at_another_address_is_a_name_given_twice():
    login = (Host("gpu04", address="10.9.0.5"),)
    assert only_problem(small_cluster(login=login)).startswith(
        "nodes[gpu[01-04]]: gpu04 is already the name of login[gpu04], at 10.9.0.5: a name is one machine, with "
        "one address; give this one another name, or that address (")


def test_node_address_clashing_with_a_service_host():
    nodes = (Nodes("gpu[01-02]", address="10.9.0.[1-2]", profile="gpu", leaf="leaf1"),)
    assert only_problem(small_cluster(nodes=nodes)).startswith(
        "nodes[gpu[01-02]].address: 10.9.0.1 of gpu01 is already the address of ctl")


def test_address_range_must_match_the_names():
    nodes = (Nodes("gpu[01-04]", address="10.9.1.[1-3]", profile="gpu", leaf="leaf1"),)
    assert only_problem(small_cluster(nodes=nodes)).startswith(
        "nodes[gpu[01-04]].address: 10.9.1.[1-3] gives 3 addresses for 4 nodes")


def test_bad_hostlist_syntax():
    nodes = (Nodes("gpu[04-01]", profile="gpu", leaf="leaf1"),)
    assert "nodes[gpu[04-01]]: 'gpu[04-01]' is not a valid hostlist" in problems(small_cluster(nodes=nodes))[0]


def test_names_that_are_not_a_hostlist_are_the_one_problem_not_the_nodes_a_partition_or_a_leaf_then_lacks():
    nodes = (Nodes("gpu[01-02]", profile="gpu", leaf="leaf1"), Nodes("gpu[04-03]", profile="gpu", leaf="leaf1"))
    fabric = Fabric(leaves=(Leaf("leaf1"), Leaf("leaf2", nodes="gpu[03-04]")))
    parts = (Partition("batch", profiles=("gpu",), default=True), Partition("two", nodes="gpu[03-04]"))
    assert only_problem(small_cluster(nodes=nodes, fabric=fabric, partitions=parts)).startswith(
        "nodes[gpu[04-03]]: 'gpu[04-03]' is not a valid hostlist")


def test_the_only_node_entry_left_out_for_its_mistake_is_that_one_problem():
    with deferring():
        cluster = small_cluster(nodes=(Nodes("gpu[01-04]", profile="gpu", leaf=4),))
    assert [p.split(" (")[0] for p in problems(cluster)] == [
        "nodes[gpu[01-04]].leaf = 4: Input should be a valid string"]


def test_unknown_profile():
    nodes = (Nodes("gpu[01-04]", profile="dgx", leaf="leaf1"),)
    assert problems(small_cluster(nodes=nodes))[0].startswith(
        "nodes[gpu[01-04]].profile: 'dgx' is not a profile of this cluster (profiles: gpu)")


def test_a_misspelt_profile_is_named_with_the_profile_meant_and_is_the_only_problem():
    # Its nodes are in no partition only because of the typo: that is not a second problem.
    nodes = (Nodes("gpu[01-04]", profile="gpuu", leaf="leaf1"),)
    assert only_problem(small_cluster(nodes=nodes)).startswith(
        "nodes[gpu[01-04]].profile: 'gpuu' is not a profile of this cluster (did you mean 'gpu'?)")


def test_nodes_naming_a_profile_left_out_for_its_own_mistake_are_not_told_there_is_no_profile():
    # The profile's name is its mistake (left out): which profile the nodes name cannot be known, so the profile's
    # own problem is the only one, not "(profiles: none)" at every node entry and partition naming it.
    with deferring():
        cluster = small_cluster(profiles=(Profile(sockets=2, cores_per_socket=4, real_memory=4000),))
    assert [p.split(" (")[0] for p in problems(cluster)] == ["profiles[0].name: Field required"]


@pytest.mark.parametrize("name, message", [
    ("gpu 01", "'gpu 01' is not a valid node name"),
    ("default", "'default' is a reserved word in Slurm and cannot name a node"),
    ("n" * 64, "is longer than 63 characters"),
    ("-gpu1", "'-gpu1' is not a valid node name"),
])
def test_node_names_slurm_would_refuse(name, message):
    nodes = (Nodes(name, profile="gpu", leaf="leaf1"),)
    found = problems(small_cluster(nodes=nodes, partitions=(Partition("batch", profiles=("gpu",), default=True),)))
    assert any(message in p for p in found), found


def test_missing_controller():
    assert only_problem(small_cluster(controller=None)).startswith(
        "controller: missing: every cluster needs the host slurmctld runs on")


def test_database_needs_its_memory():
    assert only_problem(small_cluster(database=Host("db", address="10.9.0.2"))).startswith(
        "database.memory: missing: the host's RAM in MiB sizes MariaDB's buffer pool")


def test_nfs_mount_of_an_unexported_path():
    nfs = Nfs(server=Host("nfs", address="10.9.0.5"), exports=(NfsExport(path="/export/home"),),
              mounts=(NfsMount(export="/export/data", mount_point="/data"),))
    assert only_problem(small_cluster(nfs=nfs)).startswith(
        "nfs.mounts[/data].export: '/export/data' is not one of nfs.exports")


@pytest.mark.parametrize("name, refused", [("all", True), ("DEFAULT", True), ("none", False)])
def test_node_names_slurm_reserves(name, refused):
    # Checked against the real slurmctld in tests/realslurm.
    cluster = small_cluster(nodes=(Nodes(name, profile="gpu", leaf="leaf1"),),
                            partitions=(Partition("batch", profiles=("gpu",), default=True),))
    if refused:
        assert only_problem(cluster).startswith(f"nodes[{name}]: {name!r} is a reserved word in Slurm")
    else:
        resolve(cluster)


def test_a_controller_that_runs_jobs_is_one_machine_in_both_groups():
    valid = resolve(small_cluster(controller=Host("gpu01", address="10.9.1.1")))
    machines = [m for m in valid.machines if m.name == "gpu01"]
    assert len(machines) == 1
    assert machines[0].groups == ("controller", "compute") and machines[0].node is valid.nodes[0]
    assert machines[0].address == "10.9.1.1" and len(machines[0].device_files) == 4
