"""topology/block as the real slurmctld 24.11 takes it: `scontrol show topology` shows exactly the inventory's
blocks (the scalable units, rail-optimized leaves merged) and the aggregates the block sizes ask for; and what
validation refuses, slurmctld refuses too, while what it lets through, slurmctld starts on."""

from __future__ import annotations

import time

import pytest
from clusters import small_cluster
from fabric_import.cases import CAPTURED, gpu_cluster
from realslurm import blocks, harness

from clusterforge.errors import InventoryError
from clusterforge.fabric_import import import_fabric
from clusterforge.model import Fabric, Leaf, Nodes, Spine, Switch, Topology, resolve
from clusterforge.render import render_all
from clusterforge.render.topology_conf import block_lines
from clusterforge.versions import SlurmVersion

V24_11 = SlurmVersion.parse("24.11")


def units(counts: tuple[int, ...], sizes: tuple[int, ...] = ()) -> Fabric:
    leaves, first = [], 1
    for index, count in enumerate(counts, 1):
        leaves.append(Leaf(f"su{index}", nodes=f"gpu[{first:02d}-{first + count - 1:02d}]"))
        first += count
    return Fabric(plugin="block", leaves=tuple(leaves), block_sizes=sizes)


def unit_cluster(counts: tuple[int, ...], sizes: tuple[int, ...] = ()):
    return small_cluster(nodes=(Nodes(f"gpu[01-{sum(counts):02d}]", profile="gpu"),), fabric=units(counts, sizes))


def imported_rails():
    fabric = import_fabric(CAPTURED["rail-sharp"].text(), "rail-sharp").fabric
    return gpu_cluster("gpu-node-[001-008]", fabric.model_copy(update={"plugin": "block"}))


INVENTORIES = {
    "four units, sizes 4,8,16": lambda: unit_cluster((4, 4, 4, 4), (4, 8, 16)),
    # Slurm's own default base, the first block (8), would be fatal for su2: the smallest is written out.
    "uneven units, default sizes": lambda: unit_cluster((8, 4, 4)),
    "five units, a partial group": lambda: unit_cluster((4, 4, 4, 2, 2), (2, 4, 8, 16)),
    "imported rail-optimized DGX fabric": imported_rails,
}


@pytest.mark.realslurm
@pytest.mark.parametrize("name", sorted(INVENTORIES))
def test_slurmctld_shows_exactly_the_inventorys_blocks(name):
    runtime = harness.require("24.11")
    valid = resolve(INVENTORIES[name](), V24_11)
    assert valid.slurm_conf["TopologyPlugin"] == "topology/block"
    nodes = [node.name for node in valid.nodes]
    with harness.topology_slurmctld(runtime, nodes, "topology/block", render_all(valid)["topology.conf"]) as ctld:
        shown = harness.parse_topology(ctld.scontrol("show", "topology"))
        errors = ctld.errors()
    assert errors == []
    assert blocks.shown(shown) == blocks.expected(valid.topology)
    base_blocks = [rec["BlockName"] for rec in shown.values() if "BlockName" in rec]
    assert base_blocks == [block.name for block in valid.topology.blocks]  # in the inventory's order


# Each verdict of validation, for 24.11, beside the topology.conf clusterforge would write for it.
CASES = [
    ((4, 4, 4, 4), (4, 8, 16), None),
    ((4, 4, 8), (4, 8), None),  # a block larger than the base is fine
    ((4, 4, 4, 4), (4, 12), "12 is not the base block size (4) times a power of two"),
    ((4, 4, 4, 4), (8, 4), "must increase"),
    ((4, 4, 4, 4), (1, 1 << 16), "Slurm aggregates at most 32768"),
    ((4, 2, 4, 6), (4, 8), "block su2 has 2 nodes, fewer than the base block size 4"),
]


@pytest.mark.realslurm
@pytest.mark.parametrize("counts, sizes, refused", CASES, ids=[f"{c}-{s}" for c, s, _ in CASES])
def test_slurmctld_refuses_what_validation_refuses(counts, sizes, refused):
    runtime = harness.require("24.11")
    cluster = unit_cluster(counts, sizes)
    try:
        resolve(cluster, V24_11)
        problem = None
    except InventoryError as error:
        problem = "; ".join(str(p) for p in error.problems)
    assert (problem is None) == (refused is None) and (refused is None or refused in problem), problem
    names = [f"gpu{i:02d}" for i in range(1, sum(counts) + 1)]
    leaves, first = [], 0
    for index, count in enumerate(counts, 1):
        leaves.append(Switch(f"su{index}", nodes=tuple(names[first:first + count])))
        first += count
    text = "\n".join(block_lines(Topology(tuple(leaves), (), False, "block", sizes), V24_11)) + "\n"
    try:
        with harness.topology_slurmctld(runtime, names, "topology/block", text):
            started = True
    except harness.DaemonFailed as failure:
        started = False
        assert "fatal: Invalid BlockSizes value" in str(failure) or "children count lower" in str(failure)
    assert started == (refused is None), f"validation: {problem}, slurmctld started: {started}"


@pytest.mark.realslurm
def test_validation_is_stricter_than_slurm_on_a_size_written_twice():
    """Slurm 24.11 takes a size written twice (it sets the same level again); validation asks for increasing
    sizes, as topology.conf(5) describes them ("Successive BlockSizes must be a power of two larger")."""
    runtime = harness.require("24.11")
    with pytest.raises(InventoryError, match="must increase"):
        resolve(unit_cluster((4, 4), (4, 4)), V24_11)
    names = [f"gpu{i:02d}" for i in range(1, 9)]
    text = "BlockName=su1 Nodes=gpu[01-04]\nBlockName=su2 Nodes=gpu[05-08]\nBlockSizes=4,4\n"
    with harness.topology_slurmctld(runtime, names, "topology/block", text) as ctld:
        assert ctld.errors() == []


@pytest.mark.realslurm
def test_scontrol_reconfigure_moves_a_running_slurmctld_from_tree_to_block():
    """What restarts.py plans for a TopologyPlugin change from 23.11 (a reconfigure, no restart) holds for the
    move to topology/block: 24.11's reconfigure starts a new slurmctld, which loads the new plugin."""
    runtime = harness.require("24.11")
    tree_fabric = Fabric(leaves=units((4, 4)).leaves, spines=(Spine("top", switches="su[1-2]"),))
    tree = resolve(unit_cluster((4, 4)).model_copy(update={"fabric": tree_fabric}), V24_11)
    block = resolve(unit_cluster((4, 4), (4, 8)), V24_11)
    nodes = [node.name for node in block.nodes]
    with harness.topology_slurmctld(runtime, nodes, "topology/tree", render_all(tree)["topology.conf"]) as ctld:
        assert "SwitchName=su1" in ctld.scontrol("show", "topology")
        ctld.conf.write_text(ctld.conf.read_text().replace("topology/tree", "topology/block"))
        (ctld.conf.parent / "topology.conf").write_text(render_all(block)["topology.conf"])
        ctld.scontrol("reconfigure")
        deadline, text = time.monotonic() + 30, ""
        while "BlockName" not in text and time.monotonic() < deadline:  # the old process answers a while
            time.sleep(0.2)
            text = ctld.scontrol("show", "topology") if ctld.ping() else ""
        errors = ctld.errors()
    assert errors == []
    assert blocks.shown(harness.parse_topology(text)) == blocks.expected(block.topology)
