"""Blocks from a profile's NVLink domain (Profile(nvlink_domain=72)): a block topology named after the profile, one
block per domain, cut from each of the profile's Nodes entries in hostlist order (Slurm 25.05+, topology.yaml).
tests/realslurm/test_rendered_configs.py loads the golden nvlink-26.05 in the real slurmctld 26.05, and
tests/realslurm/test_topology_placement.py shows a job kept within one such domain."""

from __future__ import annotations

from typing import Any

import yaml
from clusters import gpu_profile, only_problem, problems, small_cluster

from clusterforge.model import Block, BlockTopology, Fabric, Gpus, Leaf, Nodes, Partition, Profile, resolve
from clusterforge.render import render_all
from clusterforge.versions import SlurmVersion

GB200_GPUS = Gpus(type="gb200", count=4, files="/dev/nvidia[0-3]", sockets={0: [0, 1], 1: [2, 3]})


def gb200(name: str = "gb200", **fields: Any) -> Profile:
    return Profile(name, **{"sockets": 2, "cores_per_socket": 72, "real_memory": 860_000, "gpus": GB200_GPUS,
                               "nvlink_domain": 72, **fields})


# Two rows of GB200 NVL72 racks (72 GPUs on 18 nodes of 4 each): two racks, then one.
ROWS = (Nodes("gb[001-036]", profile="gb200"), Nodes("gb[101-118]", profile="gb200"))


def cluster(profile: Profile | None = None, nodes: tuple[Nodes, ...] = ROWS, **overrides: Any) -> Any:
    fields = {"slurm_version": "26.05", "profiles": (profile or gb200(),), "nodes": nodes, "fabric": None,
              "partitions": (Partition("gb200", profiles=("gb200",), default=True, topology="gb200"),), **overrides}
    return small_cluster(**fields)


def test_each_entry_is_cut_into_blocks_of_one_domain_in_order():
    [topology] = resolve(cluster()).topologies
    assert topology.name == "gb200" and topology.plugin == "block"
    assert [(b.name, b.nodes[0], b.nodes[-1], len(b.nodes)) for b in topology.blocks] == [
        ("gb200-nvlink1", "gb001", "gb018", 18),
        ("gb200-nvlink2", "gb019", "gb036", 18),
        ("gb200-nvlink3", "gb101", "gb118", 18),
    ]
    assert topology.block_sizes == (18, 36, 72)  # Slurm's default, written out: the base is one domain


def test_the_blocks_follow_the_hostlist_as_written():
    written = (Nodes("gb[019-036],gb[001-018]", profile="gb200"),)
    [topology] = resolve(cluster(nodes=written)).topologies
    assert [b.nodes[0] for b in topology.blocks] == ["gb019", "gb001"]


def test_the_topology_is_rendered_after_the_fabrics_and_a_partition_binds_to_it():
    fabric = Fabric(topology="ib", leaves=(Leaf("leaf1", nodes="gb[001-036],gb[101-118]"),))
    c = cluster(fabric=fabric)
    files = render_all(resolve(c))
    assert yaml.safe_load(files["topology.yaml"]) == [
        {"topology": "ib", "cluster_default": True,
         "tree": {"switches": [{"switch": "leaf1", "nodes": "gb[001-036,101-118]"}]}},
        {"topology": "gb200", "cluster_default": False,
         "block": {"block_sizes": [18, 36, 72], "blocks": [{"block": "gb200-nvlink1", "nodes": "gb[001-018]"},
                                                           {"block": "gb200-nvlink2", "nodes": "gb[019-036]"},
                                                           {"block": "gb200-nvlink3", "nodes": "gb[101-118]"}]}},
    ]
    assert "Topology=gb200 State=UP" in files["slurm.conf"]
    assert render_all(resolve(cluster(fabric=fabric))) == files  # the same inventory, the same bytes


def test_only_the_profiles_nodes_are_cut_and_other_topologies_come_first():
    other = Profile("cpu", sockets=1, cores_per_socket=8, real_memory=1000)
    explicit = BlockTopology("halves", blocks=(Block("h1", nodes="cpu[1-4]"),))
    parts = (Partition("cpu", profiles=("cpu",), default=True), Partition("gb200", profiles=("gb200",)))
    c = cluster(profiles=(other, gb200()), nodes=(Nodes("cpu[1-4]", profile="cpu"), *ROWS), topologies=(explicit,),
                partitions=parts)
    assert [(t.name, len(t.blocks)) for t in resolve(c).topologies] == [("halves", 1), ("gb200", 3)]


def test_a_profile_without_gpus_is_refused_at_its_line():
    profile = gb200(gpus=None)
    assert only_problem(cluster(profile)) == (
        "profiles[gb200].nvlink_domain: an NVLink domain of 72 GPUs needs the profile's GPUs: set gpus=, or remove "
        f"nvlink_domain ({profile.origin_of('nvlink_domain')})")


def test_a_domain_of_part_of_a_node_is_refused_at_its_line():
    profile = gb200(nvlink_domain=70)
    assert only_problem(cluster(profile)) == (
        "profiles[gb200].nvlink_domain: 70 GPUs is not a multiple of the profile's 4 GPUs a node (gpus.count): a "
        f"domain is whole nodes, such as 72 GPUs on 18 nodes of 4 ({profile.origin_of('nvlink_domain')})")
    assert problems(cluster(gb200(nvlink_domain=0)))[0].startswith(
        "profiles[gb200].nvlink_domain: must be a positive number of GPUs, not 0")


def test_an_entry_of_part_of_a_domain_is_refused_at_its_line():
    short = Nodes("gb[101-110]", profile="gb200")
    assert only_problem(cluster(nodes=(ROWS[0], short))) == (
        "nodes[gb[101-110]]: 10 nodes are not whole NVLink domains of profile gb200, 18 nodes each (72 GPUs, 4 a "
        "node): a domain is a rack's worth of nodes; write each rack as a Nodes entry of whole domains, or write the "
        f"blocks yourself with BlockTopology ({short.origin})")


def test_a_profile_with_a_domain_and_no_nodes_is_refused():
    profile = gb200()
    text = only_problem(cluster(profile, nodes=(Nodes("gpu[01-04]", profile="gpu"),),
                                profiles=(profile, gpu_profile()),
                                partitions=(Partition("batch", profiles=("gpu",), default=True),)))
    assert text.startswith("profiles[gb200].nvlink_domain: no Nodes entry has this profile, so its NVLink topology "
                           "would have no blocks"), text


def test_a_topology_of_the_profiles_name_is_refused_naming_both_lines():
    profile = gb200()
    fabric = Fabric(topology="gb200", leaves=(Leaf("leaf1", nodes="gb[001-036],gb[101-118]"),))
    assert only_problem(cluster(profile, fabric=fabric)) == (
        "profiles[gb200].nvlink_domain: its NVLink domains make a topology named after the profile, 'gb200', and a "
        f"topology of this name is already defined (at {fabric.origin_of('topology')}): rename one of them "
        f"({profile.origin_of('nvlink_domain')})")
    explicit = BlockTopology("gb200", blocks=(Block("rack1", nodes="gb[001-018]"),))
    assert only_problem(cluster(profile, topologies=(explicit,))) == (
        "profiles[gb200].nvlink_domain: its NVLink domains make a topology named after the profile, 'gb200', and a "
        f"topology of this name is already defined (at {explicit.origin}): rename one of them "
        f"({profile.origin_of('nvlink_domain')})")


def test_a_domain_is_refused_before_25_05_as_a_block_topology_is():
    profile = gb200()
    assert only_problem(cluster(profile, partitions=(Partition("gb200", profiles=("gb200",), default=True),)),
                        "24.11") == (
        "profiles[gb200].nvlink_domain: Slurm 24.11 has one topology, topology.conf's: a profile's NVLink domains "
        "are a topology of their own, which needs topology.yaml (Slurm 25.05+); write them as the fabric's blocks "
        f"(Fabric(plugin=\"block\")) instead ({profile.origin_of('nvlink_domain')})")


def test_25_05_takes_the_topology():
    valid = resolve(cluster(), SlurmVersion.parse("25.05"))
    assert [t.name for t in valid.topologies] == ["gb200"]
    assert "topology.yaml" in render_all(valid)


def test_a_block_name_longer_than_slurm_takes_is_refused():
    long = "g" * 57  # 57 + len("-nvlink1") = 65 characters
    profile = gb200(long)
    text = only_problem(cluster(profile, nodes=(Nodes("gb[001-018]", profile=long),),
                                partitions=(Partition("gb200", profiles=(long,), default=True),)))
    assert text.startswith(f"profiles[{long}].nvlink_domain: '{long}-nvlink1', the name of its last NVLink block, is "
                           "longer than 63 characters"), text
