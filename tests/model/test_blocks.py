"""Rules for topology/block: the releases that have it, the block sizes each accepts, blocks from the scalable
units. What each rule stands for was seen in the real slurmctld 24.11 (tests/realslurm) and read in Slurm's
src/plugins/topology/block/ for 23.11, 24.05 and 25.05."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from clusters import only_problem, problems, small_cluster

from clusterforge.model import Fabric, Leaf, Nodes, Spine, resolve
from clusterforge.render import render_all
from clusterforge.versions import SlurmVersion

NODES = (Nodes("gpu[01-16]", profile="gpu"),)


def units(*counts: int, **fields: Any) -> Fabric:
    """One leaf per unit, the units holding ``counts`` nodes in a row."""
    leaves, first = [], 1
    for index, count in enumerate(counts, 1):
        leaves.append(Leaf(f"su{index}", nodes=f"gpu[{first:02d}-{first + count - 1:02d}]"))
        first += count
    return Fabric(plugin="block", leaves=tuple(leaves), **fields)


def block_cluster(fabric: Fabric, **overrides: Any) -> Any:
    return small_cluster(**{"nodes": NODES, "fabric": fabric, **overrides})


def topology_conf(fabric: Fabric, version: str) -> list[str]:
    valid = resolve(block_cluster(fabric), SlurmVersion.parse(version))
    return render_all(valid)["topology.conf"].splitlines()[2:]


def topology_yaml(fabric: Fabric, version: str) -> list[dict[str, Any]]:
    valid = resolve(block_cluster(fabric), SlurmVersion.parse(version))
    return yaml.safe_load(render_all(valid)["topology.yaml"])


def test_block_on_a_release_without_it_is_refused_with_the_line():
    fabric = units(4, 4, 4, 4)
    text = only_problem(block_cluster(fabric), "22.05")
    assert text == ("fabric.plugin: Slurm 22.05 has no topology/block (it arrived in 23.11): use plugin=\"tree\", or "
                    f"Slurm 23.11 or newer ({fabric.origin_of('plugin')})")
    assert "test_blocks.py" in text
    assert only_problem(block_cluster(fabric), "23.02").startswith("fabric.plugin: Slurm 23.02 has no topology/block")


def test_the_units_are_the_blocks_in_inventory_order_and_slurm_conf_names_the_plugin():
    fabric = units(4, 4, 4, 4, block_sizes=(4, 8, 16))
    valid = resolve(block_cluster(fabric), SlurmVersion.parse("24.11"))
    assert valid.slurm_conf["TopologyPlugin"] == "topology/block"
    assert topology_conf(fabric, "24.11") == [
        "BlockName=su1 Nodes=gpu[01-04]", "BlockName=su2 Nodes=gpu[05-08]", "BlockName=su3 Nodes=gpu[09-12]",
        "BlockName=su4 Nodes=gpu[13-16]", "BlockSizes=4,8,16"]


def test_rail_optimized_leaves_of_one_unit_are_one_block_named_after_the_first():
    leaves = tuple(Leaf(f"su{u}-rail{r}", nodes=f"gpu[{u * 8 - 7:02d}-{u * 8:02d}]") for u in (1, 2) for r in (1, 2))
    fabric = Fabric(plugin="block", rail_optimized=True, leaves=leaves,
                    spines=(Spine("spine1", switches="su[1-2]-rail[1-2]"),))
    valid = resolve(block_cluster(fabric), SlurmVersion.parse("24.11"))
    assert [(b.name, len(b.nodes)) for b in valid.topology.blocks] == [("su1-rail1", 8), ("su2-rail1", 8)]
    # The spines are no part of topology/block.
    assert topology_conf(fabric, "24.11") == [
        "BlockName=su1-rail1 Nodes=gpu[01-08]", "BlockName=su2-rail1 Nodes=gpu[09-16]", "BlockSizes=8,16"]


def test_without_block_sizes_slurms_default_is_written_out_from_the_smallest_block():
    # Slurm's own base would be the first block (8), fatal for the smaller su2 on 24.11.
    assert topology_conf(units(8, 4, 4), "24.11")[-1] == "BlockSizes=4,8,16"
    assert topology_conf(units(2, 2, 2, 2, 2, 2, 2, 2), "24.11")[-1] == "BlockSizes=2,4,8,16"
    assert topology_conf(units(16), "24.11")[-1] == "BlockSizes=16"


def test_23_11_writes_block_levels_24_11_block_sizes_and_25_05_topology_yaml():
    fabric = units(4, 4, 4, 4, block_sizes=(4, 16))
    assert topology_conf(fabric, "23.11")[-1] == "BlockLevels=0,2"
    assert topology_conf(fabric, "24.11")[-1] == "BlockSizes=4,16"
    [topology] = topology_yaml(fabric, "25.05")
    assert topology["block"]["block_sizes"] == [4, 16]


@pytest.mark.parametrize("sizes, message", [
    ((4, 12), "12 is not the base block size (4) times a power of two: Slurm refuses it"),
    ((4, 4), "must increase, the base block size first: 4 after 4"),
    ((8, 4), "must increase, the base block size first: 4 after 8"),
    ((0, 4), "must be positive node counts, not 0"),
    ((1, 1 << 16), "65536 is 65536 base blocks; Slurm aggregates at most 32768"),
])
def test_block_sizes_slurm_refuses(sizes, message):
    fabric = units(4, 4, 4, 4, block_sizes=sizes)
    text = only_problem(block_cluster(fabric), "24.11")
    assert text.startswith(f"fabric.block_sizes: {message}"), text
    assert text.endswith(f"({fabric.origin_of('block_sizes')})")


def test_a_block_smaller_than_the_base_is_refused_until_25_05():
    fabric = units(4, 2, 4, 6, block_sizes=(4, 8))
    text = only_problem(block_cluster(fabric), "24.11")
    assert text == ("fabric.leaves[su2]: block su2 has 2 nodes, fewer than the base block size 4: Slurm 24.11 refuses "
                    f"it (gaps are allowed from 25.05) ({fabric.leaves[1].origin})")
    assert only_problem(block_cluster(fabric), "24.05").startswith("fabric.leaves[su2]: block su2 has 2 nodes")
    [topology] = topology_yaml(fabric, "25.05")
    assert topology["block"]["blocks"][1] == {"block": "su2", "nodes": "gpu[05-06]"}


def test_23_11_needs_every_block_the_same_size_and_the_base_equal_to_it():
    found = problems(block_cluster(units(4, 4, 8, block_sizes=(4, 8))), "23.11")
    assert found == [p for p in found if p.startswith("fabric.leaves[su3]: block su3 has 8 nodes and su1 4: "
                                                     "Slurm 23.11 needs every block the same size")]
    assert len(found) == 1
    assert topology_conf(units(4, 4, 8, block_sizes=(4, 8)), "24.11")[-1] == "BlockSizes=4,8"
    assert only_problem(block_cluster(units(4, 4, 4, 4, block_sizes=(2, 4))), "23.11").startswith(
        "fabric.block_sizes: the base block size 2 is not the blocks' size, 4: Slurm 23.11 has no base block size")


def test_a_node_in_two_units_is_refused():
    leaves = (Leaf("su1-rail1", nodes="gpu[01-08]"), Leaf("su1-rail2", nodes="gpu[01-08]"),
              Leaf("su2-rail1", nodes="gpu[09-16]"), Leaf("su2-rail2", nodes="gpu[08-16]"))
    fabric = Fabric(plugin="block", rail_optimized=True, leaves=leaves)
    # su2-rail2 is a unit of its own, overlapping both others.
    assert problems(block_cluster(fabric), "24.11") == [
        f"fabric.leaves[su2-rail2]: {nodes} also in block {other}: with topology/block each node belongs to one block "
        f"(a rail cabled to another unit?) ({leaves[3].origin})"
        for nodes, other in (("gpu08 is", "su1-rail1"), ("gpu[09-16] are", "su2-rail1"))]


def test_block_sizes_without_the_block_plugin():
    fabric = Fabric(leaves=(Leaf("leaf1"),), block_sizes=(4,))
    assert only_problem(small_cluster(fabric=fabric)).startswith(
        "fabric.block_sizes: only topology/block has block sizes: set plugin=\"block\" or remove them")


def test_spines_above_blocks_need_not_span_the_cluster():
    # topology/tree would refuse it (no switch above every node); topology/block has no use for the spines.
    spines = (Spine("s1", switches="su1"), Spine("s2", switches="su2"))
    resolve(block_cluster(units(8, 8, spines=spines)), SlurmVersion.parse("24.11"))


def test_a_fabric_with_problems_of_its_own_gets_no_block_problems():
    fabric = units(4, 4, 4, 2, block_sizes=(4, 8))
    found = problems(block_cluster(fabric, nodes=(Nodes("gpu[01-15]", profile="gpu"),)), "24.11")
    # su4 is smaller than the base, but the fabric's own problem comes first and alone.
    assert len(found) == 1 and found[0].startswith("nodes[gpu[01-15]]: gpu15 is under no leaf switch"), found
