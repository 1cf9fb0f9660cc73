"""Rules for the topologies of topology.yaml (Slurm 25.05+): the inventory's block topologies, and the one each
partition names. What slurmctld refuses (slurm-25.05, src/plugins/topology/block/block_record.c,
src/slurmctld/read_config.c):

- a topology name given twice, a block name given twice in one topology ("Block (%s) has already been defined");
- block sizes that are not the base times a power of two ("Invalid BlockSizes value", fatal from 26.05.3);
- a partition whose Topology= names no topology ("Invalid partition topology": slurmctld does not start).

A node in two blocks of one topology is taken silently, and placed by the first block listing it: refused here, as
the fabric's blocks are (blocks.py). Before 25.05 there is no topology.yaml, and PartitionName has no Topology=.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...versions import PARTITION_TOPOLOGY, TOPOLOGY_YAML
from ..fabric import Block, BlockTopology
from ..nodes import Nodes
from ..resolved import Switch
from .blocks import shared_nodes, size_problems
from .check import Check


def topologies(check: Check, known_nodes: Mapping[str, Nodes]) -> list[tuple[BlockTopology, tuple[Switch, ...]]]:
    """The inventory's block topologies, each with its blocks' nodes; one with problems is left out (they are
    recorded)."""
    specs = check.cluster.topologies
    if specs and check.version < TOPOLOGY_YAML:
        for spec in specs:
            check.add(f"topologies[{spec.name}]", f"Slurm {check.version} has one topology, topology.conf's: "
                                                  "several need topology.yaml (Slurm 25.05+); use Fabric(plugin=) "
                                                  "for one", spec)
        return []
    fabric = check.cluster.fabric
    named = [(fabric.topology, fabric, "fabric.topology")] if fabric is not None else []
    named += [(spec.name, spec, f"topologies[{spec.name}]") for spec in specs]
    check.duplicates(named, "a topology of this name is already defined ({at})")
    for name, entry, where in named:
        check.name(where, name, entry, "topology")
    out = []
    for spec in specs:
        before = len(check.problems)
        blocks = _blocks(check, spec, known_nodes)
        if len(check.problems) == before:
            out.append((spec, blocks))
    return out


def _blocks(check: Check, spec: BlockTopology, known_nodes: Mapping[str, Nodes]) -> tuple[Switch, ...]:
    where = f"topologies[{spec.name}]"
    if not spec.blocks:
        check.add(where, "has no blocks: slurmctld refuses a block topology without them", spec)
    for message in size_problems(spec.block_sizes):
        check.add(f"{where}.block_sizes", message, spec, "block_sizes")
    check.duplicates(((b.name, b, f"{where}.blocks[{b.name}]") for b in spec.blocks),
                     "a block of this name is already in this topology ({at})")
    blocks = tuple(Switch(block.name, nodes=_members(check, f"{where}.blocks[{block.name}]", block, known_nodes))
                   for block in spec.blocks)
    entries = {block.name: block for block in spec.blocks}
    for name, first, nodes in shared_nodes(blocks):
        check.add(f"{where}.blocks[{name}]", f"{check.sample(nodes)} {'is' if len(nodes) == 1 else 'are'} also in "
                                             f"block {first}: each node belongs to one block of a topology",
                  entries[name])
    return blocks


def _members(check: Check, where: str, block: Block, known_nodes: Mapping[str, Nodes]) -> tuple[str, ...]:
    check.name(where, block.name, block, "block")
    listed = check.expand(f"{where}.nodes", block.nodes, block) or []
    unknown = [n for n in listed if n not in known_nodes and not check.node_left_out(n)]
    if unknown:
        check.unknown_nodes(f"{where}.nodes", unknown, known_nodes, block)
    return tuple(dict.fromkeys(n for n in listed if n in known_nodes))


def partition_topologies(check: Check, names: tuple[str, ...]) -> None:
    """Each partition's Topology= names one of ``names``, on a release that has the key."""
    for part in check.cluster.partitions:
        if part.topology is None:
            continue
        where = f"partitions[{part.name}].topology"
        if check.version < PARTITION_TOPOLOGY:
            check.add(where, f"Slurm {check.version} has no Topology= on partitions (it arrived in 25.05): every "
                             "partition is placed by topology.conf's topology", part, "topology")
        elif part.topology not in names and not check.refers_to_left_out(f"topologies[{part.topology}]"):
            known = ", ".join(names) or "none: the cluster has no fabric and no topologies"
            check.add(where, f"{part.topology!r} is not a topology of this cluster{check.meant(part.topology, names)}"
                             f" (its topologies: {known}); slurmctld would not start", part, "topology")
