"""Several topologies in topology.yaml (Slurm 25.05+): the fabric's and the inventory's block topologies, and the
one each partition names. What each rule stands for was read in slurm-25.05's src/plugins/topology/block/ and
src/slurmctld/read_config.c ("Invalid partition topology"): tests/realslurm/test_rendered_configs.py loads the
golden topologies-26.05 in the real slurmctld 26.05."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from clusters import only_problem, problems, small_cluster

from clusterforge.model import Block, BlockTopology, Fabric, Leaf, Nodes, Partition, resolve
from clusterforge.render import render_all
from clusterforge.versions import SlurmVersion

NODES = (Nodes("gpu[01-08]", profile="gpu", leaf="leaf1"),)


def racks(*blocks: Block, **fields: Any) -> BlockTopology:
    return BlockTopology("nvl", blocks=blocks or (Block("r1", nodes="gpu[01-04]"), Block("r2", nodes="gpu[05-08]")),
                         **fields)


def cluster(*topologies: BlockTopology, **overrides: Any) -> Any:
    fields = {"slurm_version": "26.05", "nodes": NODES, "topologies": topologies, **overrides}
    return small_cluster(**fields)


def gpu_partition(**fields: Any) -> Partition:
    return Partition("batch", profiles=("gpu",), default=True, **fields)


def topology_yaml(c: Any) -> list[dict[str, Any]]:
    return yaml.safe_load(render_all(resolve(c))["topology.yaml"])


def test_the_fabric_is_the_default_and_a_block_topology_follows_it():
    c = cluster(racks(block_sizes=(4, 8)), partitions=(gpu_partition(topology="nvl"),))
    assert topology_yaml(c) == [
        {"topology": "default", "cluster_default": True,
         "tree": {"switches": [{"switch": "leaf1", "nodes": "gpu[01-08]"}]}},
        {"topology": "nvl", "cluster_default": False,
         "block": {"block_sizes": [4, 8], "blocks": [{"block": "r1", "nodes": "gpu[01-04]"},
                                                    {"block": "r2", "nodes": "gpu[05-08]"}]}},
    ]
    assert "Topology=nvl State=UP" in render_all(resolve(c))["slurm.conf"]


def test_a_block_topology_without_sizes_gets_slurms_default_written_out():
    [_, nvl] = topology_yaml(cluster(racks(Block("r1", nodes="gpu[01-02]"), Block("r2", nodes="gpu[03-08]"))))
    assert nvl["block"]["block_sizes"] == [2, 4]


def test_the_fabric_names_its_topology():
    c = cluster(fabric=Fabric(topology="ib", leaves=(Leaf("leaf1"),)), partitions=(gpu_partition(topology="ib"),))
    assert [t["topology"] for t in topology_yaml(c)] == ["ib"]


def test_a_partition_naming_an_unknown_topology_is_refused_at_its_line():
    part = gpu_partition(topology="nvl2")
    text = only_problem(cluster(racks(), partitions=(part,)))
    assert text == ("partitions[batch].topology: 'nvl2' is not a topology of this cluster (did you mean 'nvl'?) "
                    f"(its topologies: default, nvl); slurmctld would not start ({part.origin_of('topology')})")


def test_partition_topology_and_block_topologies_are_refused_before_25_05():
    part = gpu_partition(topology="default")
    text = only_problem(cluster(partitions=(part,)), "24.11")
    assert text.startswith("partitions[batch].topology: Slurm 24.11 has no Topology= on partitions (it arrived in "
                           "25.05)")
    assert text.endswith(f"({part.origin_of('topology')})")
    spec = racks()
    assert only_problem(cluster(spec), "24.11") == (
        "topologies[nvl]: Slurm 24.11 has one topology, topology.conf's: several need topology.yaml (Slurm 25.05+); "
        f"use Fabric(plugin=) for one ({spec.origin})")


@pytest.mark.parametrize("sizes, message", [
    ((4, 12), "12 is not the base block size (4) times a power of two: Slurm refuses it"),
    ((4, 4), "must increase, the base block size first: 4 after 4"),
    ((0, 4), "must be positive node counts, not 0"),
])
def test_block_sizes_slurm_refuses(sizes, message):
    spec = racks(block_sizes=sizes)
    text = only_problem(cluster(spec))
    assert text.startswith(f"topologies[nvl].block_sizes: {message}"), text
    assert text.endswith(f"({spec.origin_of('block_sizes')})")


def test_a_node_in_two_blocks_of_one_topology_is_refused_at_the_later_block():
    second = Block("r2", nodes="gpu[04-08]")
    text = only_problem(cluster(racks(Block("r1", nodes="gpu[01-04]"), second)))
    assert text == ("topologies[nvl].blocks[r2]: gpu04 is also in block r1: each node belongs to one block of a "
                    f"topology ({second.origin})")


def test_a_node_may_be_in_blocks_of_two_topologies():
    other = BlockTopology("halves", blocks=(Block("h1", nodes="gpu[01-08]"),))
    assert [t["topology"] for t in topology_yaml(cluster(racks(), other))] == ["default", "nvl", "halves"]


def test_names_slurm_refuses_and_unknown_nodes():
    twice = BlockTopology("default", blocks=(Block("b1", nodes="gpu[01-08]"),))
    c = cluster(twice)
    assert problems(c) == [f"topologies[default]: a topology of this name is already defined (at "
                           f"{c.fabric.origin}) ({twice.origin})"]
    unknown = Block("r1", nodes="gpu[01-04],gpu99")
    assert only_problem(cluster(racks(unknown, Block("r2", nodes="gpu[05-08]")))).startswith(
        "topologies[nvl].blocks[r1].nodes: gpu99 is not a node of this cluster")


def test_without_a_fabric_the_first_block_topology_is_the_default():
    bare = (Nodes("gpu[01-08]", profile="gpu"),)
    [nvl] = topology_yaml(cluster(racks(), fabric=None, nodes=bare))
    assert nvl["topology"] == "nvl" and nvl["cluster_default"] is True
    valid = resolve(cluster(racks(), fabric=None, nodes=bare), SlurmVersion.parse("25.05"))
    assert valid.slurm_conf["TopologyPlugin"] == "topology/flat"  # topology.yaml, where it exists, decides
