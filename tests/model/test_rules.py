"""One test per inventory rule: the message names the offending entry, says what is wrong, and where it was written."""

from __future__ import annotations

import re

import pytest
from clusters import gpu_profile, only_problem, problems, small_cluster

from clusterforge.errors import InventoryError
from clusterforge.model import (
    Accounting, Fabric, Gpus, Host, Leaf, Nfs, NfsExport, NfsMount, Nodes, Partition, Qos, Spine, resolve,
)
from clusterforge.versions import SlurmVersion

def at_line(text: str) -> int:
    match = re.search(r"\(tests/\S+\.py:(\d+)\)$", text)
    assert match, f"no file:line origin in {text!r}"
    return int(match.group(1))


def test_the_small_cluster_is_valid():
    valid = resolve(small_cluster())
    assert [n.name for n in valid.nodes] == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert [n.address for n in valid.nodes] == ["10.9.1.1", "10.9.1.2", "10.9.1.3", "10.9.1.4"]


def test_partition_naming_an_unknown_node_points_at_the_partition_line():
    partition = Partition("batch", nodes="gpu[01-05]", default=True)
    line = partition.origin
    text = only_problem(small_cluster(partitions=(partition,)))
    assert text.startswith("partitions[batch].nodes: gpu05 is not a node of this cluster (")
    assert text.endswith(f"({line})") and "test_rules.py" in line


def test_duplicate_node_names_across_entries():
    nodes = (Nodes("gpu[01-04]", profile="gpu", leaf="leaf1"), Nodes("gpu[04-05]", profile="gpu", leaf="leaf1"))
    text = only_problem(small_cluster(nodes=nodes))
    assert text.startswith("nodes[gpu[04-05]]: gpu04 already defined (at ")


def test_duplicate_addresses():
    nodes = (Nodes("gpu[01-02]", address="10.9.1.[1-2]", profile="gpu", leaf="leaf1"),
             Nodes("gpu03", address="10.9.1.2", profile="gpu", leaf="leaf1"))
    assert only_problem(small_cluster(nodes=nodes)).startswith(
        "nodes[gpu03].address: 10.9.1.2 of gpu03 is already the address of gpu02")


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


def test_unknown_profile():
    nodes = (Nodes("gpu[01-04]", profile="dgx", leaf="leaf1"),)
    assert problems(small_cluster(nodes=nodes))[0].startswith(
        "nodes[gpu[01-04]].profile: 'dgx' is not a profile of this cluster (profiles: gpu)")


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


def test_leaf_naming_an_unknown_node():
    fabric = Fabric(leaves=(Leaf("leaf1", nodes="gpu[01-06]"),))
    assert only_problem(small_cluster(fabric=fabric)).startswith(
        "fabric.leaves[leaf1].nodes: gpu[05-06] are not nodes of this cluster")


def test_node_under_no_leaf():
    nodes = (Nodes("gpu[01-04]", profile="gpu"),)
    fabric = Fabric(leaves=(Leaf("leaf1", nodes="gpu[01-03]"),))
    assert only_problem(small_cluster(nodes=nodes, fabric=fabric)).startswith(
        "nodes[gpu[01-04]]: gpu04 is under no leaf switch")


def test_node_under_two_leaves_unless_rail_optimized():
    leaves = (Leaf("rail1", nodes="gpu[01-04]"), Leaf("rail2", nodes="gpu[01-04]"))
    nodes = (Nodes("gpu[01-04]", profile="gpu"),)
    text = only_problem(small_cluster(nodes=nodes, fabric=Fabric(leaves=leaves)))
    assert text.startswith("nodes[gpu[01-04]]: gpu[01-04] are under several leaves (gpu01: rail1, rail2); "
                           "set fabric.rail_optimized=True")
    valid = resolve(small_cluster(nodes=nodes, fabric=Fabric(leaves=leaves, rail_optimized=True)))
    # The rails carry the same nodes: one scheduling unit, one switch for Slurm.
    assert [(s.name, s.nodes[:1]) for s in valid.topology.leaves] == [("rail1", ("gpu01",))]


def test_node_naming_an_unknown_leaf():
    nodes = (Nodes("gpu[01-04]", profile="gpu", leaf="leaf9"),)
    found = problems(small_cluster(nodes=nodes))
    assert found[0].startswith("nodes[gpu[01-04]].leaf: 'leaf9' is not a leaf of the fabric")


def test_switch_cycle():
    fabric = Fabric(leaves=(Leaf("leaf1"),), spines=(
        Spine("s1", switches="leaf1,s2"), Spine("s2", switches="s3"), Spine("s3", switches="s1")))
    found = problems(small_cluster(fabric=fabric))
    assert any("switch cycle s1 -> s2 -> s3 -> s1" in p for p in found), found


def test_orphan_switches():
    fabric = Fabric(leaves=(Leaf("leaf1"), Leaf("leaf2")), spines=(Spine("spine1", switches="leaf1"),))
    found = problems(small_cluster(fabric=fabric))
    assert found[0].startswith("fabric.leaves[leaf2]: no node hangs off this leaf")
    assert found[1].startswith("fabric.leaves[leaf2]: is below no spine: an orphan switch")


def test_spine_naming_an_unknown_switch():
    fabric = Fabric(leaves=(Leaf("leaf1"),), spines=(Spine("spine1", switches="leaf[1-2]"),))
    assert only_problem(small_cluster(fabric=fabric)).startswith(
        "fabric.spines[spine1].switches: leaf2 is not a switch of the fabric")


def test_duplicate_switch_names():
    fabric = Fabric(leaves=(Leaf("leaf1"),), spines=(Spine("leaf1", switches="leaf1"),))
    assert any(p.startswith("fabric.spines[leaf1]: a switch of this name is already defined")
               for p in problems(small_cluster(fabric=fabric)))


def test_no_default_partition():
    parts = (Partition("batch", profiles=("gpu",)),)
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions: no partition is the default: set default=True on one")


def test_two_default_partitions():
    parts = (Partition("a", profiles=("gpu",), default=True), Partition("b", profiles=("gpu",), default=True))
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions: 2 partitions are the default (a, b): keep one")


def test_gpu_count_must_match_device_files():
    profile = gpu_profile(gpus=Gpus(type="h100", count=4, files="/dev/nvidia[0-2]"))
    assert only_problem(small_cluster(profiles=(profile,))).startswith(
        "profiles[gpu].gpus.files: /dev/nvidia[0-2] names 3 device files but count is 4")


def test_typed_gpus_need_files_unless_autodetected():
    profile = gpu_profile(gpus=Gpus(type="h100", count=4))
    assert only_problem(small_cluster(profiles=(profile,))).startswith(
        "profiles[gpu].gpus.files: missing: typed GPUs need their device files unless autodetect is on")
    resolve(small_cluster(profiles=(gpu_profile(gpus=Gpus(type="h100", count=4, autodetect="nvml")),)))


def test_gpu_on_a_socket_the_profile_lacks():
    gpus = Gpus(type="h100", count=4, files="/dev/nvidia[0-3]", sockets={0: [0, 1], 2: [2, 3]})
    assert only_problem(small_cluster(profiles=(gpu_profile(gpus=gpus),))).startswith(
        "profiles[gpu].gpus.sockets: socket 2 does not exist: the profile has 2 sockets (0-1)")


def test_gpu_index_outside_the_profile_and_gpu_on_two_sockets():
    gpus = Gpus(type="h100", count=4, files="/dev/nvidia[0-3]", sockets={0: [0, 1, 7], 1: [1, 2, 3]})
    found = problems(small_cluster(profiles=(gpu_profile(gpus=gpus),)))
    assert found[0].startswith("profiles[gpu].gpus.sockets: GPU 7 on socket 0 does not exist: the profile has 4 GPUs")
    assert found[1].startswith("profiles[gpu].gpus.sockets: GPU 1 is placed on socket 0 and on socket 1")


def test_autodetect_nvidia_needs_24_11():
    profile = gpu_profile(gpus=Gpus(type="h100", count=4, files="/dev/nvidia[0-3]", autodetect="nvidia"))
    assert only_problem(small_cluster(profiles=(profile,))).startswith(
        "profiles[gpu].gpus.autodetect: AutoDetect=nvidia needs Slurm 24.11 or newer")
    resolve(small_cluster(profiles=(profile,), slurm_version="24.11"))


@pytest.mark.parametrize("field", ["sockets", "cores_per_socket", "threads_per_core", "real_memory"])
def test_non_positive_cores_and_memory(field):
    profile = gpu_profile(**{field: 0})
    found = problems(small_cluster(profiles=(profile,)))
    assert f"profiles[gpu].{field}: must be positive, not 0" in found[0]


def test_missing_controller():
    assert only_problem(small_cluster(controller=None)).startswith(
        "controller: missing: every cluster needs the host slurmctld runs on")


def test_database_needs_its_memory():
    assert only_problem(small_cluster(database=Host("db", address="10.9.0.2"))).startswith(
        "database.memory: missing: the host's RAM in MiB sizes MariaDB's buffer pool")


def test_unknown_override_key_for_the_release_with_a_suggestion():
    cluster = small_cluster(slurm_conf_extra={"ReturnToServce": 1})
    assert only_problem(cluster).startswith(
        "slurm_conf_extra[ReturnToServce]: not a slurm.conf key in Slurm 22.05: the daemons would refuse to start; "
        "did you mean ReturnToService?")


def test_override_key_valid_only_from_a_later_release():
    cluster = small_cluster(slurm_conf_extra={"PrologTimeout": 60})
    assert only_problem(cluster, "24.11").startswith("slurm_conf_extra[PrologTimeout]: not a slurm.conf key in Slurm 24.11")
    assert resolve(cluster, SlurmVersion.parse("25.05")).slurm_conf["PrologTimeout"] == "60"


def test_cgroup_key_removed_in_a_release():
    cluster = small_cluster(cgroup_conf_extra={"ConstrainKmemSpace": "yes"})
    resolve(cluster)  # 22.05 still has the Kmem keys
    assert only_problem(cluster, "23.11").startswith("cgroup_conf_extra[ConstrainKmemSpace]: not a cgroup.conf key "
                                                     "in Slurm 23.11")


def test_defunct_key():
    cluster = small_cluster(cgroup_conf_extra={"CgroupAutomount": "yes"}, slurm_version="24.11")
    assert only_problem(cluster).startswith("cgroup_conf_extra[CgroupAutomount]: defunct in Slurm 24.11")


def test_key_the_model_owns():
    cluster = small_cluster(slurm_conf_extra={"gRestypes": "gpu,shard"})
    assert only_problem(cluster).startswith(
        "slurm_conf_extra[gRestypes]: set by the inventory (profiles[].gpus); change that instead")


def test_override_keys_take_slurms_spelling_and_none_removes():
    valid = resolve(small_cluster(slurm_conf_extra={"returntoservice": 1, "KillOnBadExit": None}))
    assert valid.slurm_conf["ReturnToService"] == "1" and "KillOnBadExit" not in valid.slurm_conf


def test_preemption_needs_a_higher_tier():
    parts = (Partition("batch", profiles=("gpu",), default=True),
             Partition("urgent", profiles=("gpu",), preempts=("batch",)))
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions[urgent].preempts: preempting batch needs a higher priority_tier than its 1; this partition has 1")


def test_higher_tier_partition_must_declare_what_it_would_preempt():
    parts = (Partition("batch", profiles=("gpu",), default=True),
             Partition("urgent", profiles=("gpu",), preempts=("batch",), priority_tier=5),
             Partition("vip", profiles=("gpu",), priority_tier=9))
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions[vip]: priority_tier 9 is above preemptable batch's and they share nodes")


def test_partition_time_limits():
    parts = (Partition("batch", profiles=("gpu",), default=True, max_time="2 days", default_time="1:00:00"),)
    found = problems(small_cluster(partitions=parts))
    assert found[0].startswith("partitions[batch].max_time: '2 days' is not a Slurm time")
    parts = (Partition("batch", profiles=("gpu",), default=True, max_time="1:00:00", default_time="1-0"),)
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions[batch].default_time: 1-0 is longer than max_time 1:00:00")


def test_partition_qos_must_be_defined():
    parts = (Partition("batch", profiles=("gpu",), default=True, qos="gold"),)
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions[batch].qos: 'gold' is not a QOS of accounting.qos")
    resolve(small_cluster(partitions=parts, accounting=Accounting(qos=(Qos("gold"),))))


def test_auth_slurm_needs_23_11():
    assert only_problem(small_cluster(auth="slurm")).startswith(
        "auth: auth/slurm needs Slurm 23.11 or newer; this cluster runs 22.05")


def test_unsupported_slurm_version():
    with pytest.raises(InventoryError) as raised:
        resolve(small_cluster(slurm_version="20.11"))
    assert str(raised.value.problems[0]).startswith("slurm_version: Slurm 20.11 is not supported")


def test_nfs_mount_of_an_unexported_path():
    nfs = Nfs(server=Host("nfs", address="10.9.0.5"), exports=(NfsExport(path="/export/home"),),
              mounts=(NfsMount(export="/export/data", mount_point="/data"),))
    assert only_problem(small_cluster(nfs=nfs)).startswith(
        "nfs.mounts[/data].export: '/export/data' is not one of nfs.exports")


def test_every_problem_is_reported_at_once():
    cluster = small_cluster(
        controller=None,
        profiles=(gpu_profile(real_memory=-1),),
        nodes=(Nodes("gpu[01-04]", profile="gpu", leaf="leaf1"), Nodes("gpu04", profile="gpu", leaf="leaf1")),
        partitions=(Partition("batch", nodes="gpu[01-09]"),),
        slurm_conf_extra={"NoSuchKey": 1},
    )
    found = problems(cluster)
    assert [p.split(":")[0] for p in found] == [
        "controller", "profiles[gpu].real_memory", "nodes[gpu04]", "partitions[batch].nodes", "partitions",
        "slurm_conf_extra[NoSuchKey]",
    ]
    for text in found:
        assert at_line(text) > 0


def test_a_copied_cluster_is_validated_afresh():
    original = small_cluster()
    assert "MaxJobCount" not in resolve(original).slurm_conf
    copy = original.model_copy(update={"slurm_conf_extra": {"MaxJobCount": 5}})
    assert resolve(copy).slurm_conf["MaxJobCount"] == "5"
    assert "MaxJobCount" not in resolve(original).slurm_conf


def test_a_fabric_no_switch_spans_unless_declared_disconnected():
    nodes = (Nodes("gpu[01-02]", profile="gpu", leaf="leaf1"), Nodes("gpu[03-04]", profile="gpu", leaf="leaf2"))
    leaves = (Leaf("leaf1"), Leaf("leaf2"))
    assert only_problem(small_cluster(nodes=nodes, fabric=Fabric(leaves=leaves))).startswith(
        "fabric: no switch is above every node (the widest, leaf2, reaches 2 of 4): jobs could not span the cluster")
    resolve(small_cluster(nodes=nodes, fabric=Fabric(leaves=leaves, disconnected=True)))
    spines = (Spine("s1", switches="leaf1"), Spine("s2", switches="leaf2"))
    assert only_problem(small_cluster(nodes=nodes, fabric=Fabric(leaves=leaves, spines=spines))).startswith(
        "fabric: no switch is above every node (the widest, s2, reaches 2 of 4)")
    resolve(small_cluster(nodes=nodes, fabric=Fabric(leaves=leaves, spines=(Spine("core", switches="leaf[1-2]"),))))
