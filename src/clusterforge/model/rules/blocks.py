"""Rules for topology/block: a release that has it, block sizes its slurmctld accepts, and blocks that hold what
the sizes promise. What slurmctld refuses, per release (src/plugins/topology/block/ on each branch):

- 23.11: BlockLevels= only; every block must have the same node count ("children count no equal").
- 24.05, 24.11: BlockSizes=; each block at least the base size ("children count lower than bblock_node_cnt").
- 25.05+: a block may hold fewer nodes than the base (gaps).
- every release: a size that is not the base times a power of two, at most 2^15, is "Invalid BlockSizes value".
"""

from __future__ import annotations

from collections import defaultdict

from ...versions import BLOCK_GAPS, BLOCK_SIZES, TOPOLOGY_BLOCK
from ..resolved import Switch, Topology
from .check import Check

MAX_LEVEL = 15  # the highest aggregation level Slurm keeps (MAX_BLOCK_LEVELS is 16)


def blocks(check: Check, topology: Topology | None) -> None:
    """``topology`` is the fabric with its rail-optimized units merged, or None where the fabric has problems of
    its own (its blocks are then not worth checking)."""
    fabric = check.cluster.fabric
    if fabric is None:
        return
    if fabric.plugin != "block":
        if fabric.block_sizes:
            check.add("fabric.block_sizes", "only topology/block has block sizes: set plugin=\"block\" or remove "
                                            "them", fabric, "block_sizes")
        return
    if check.version < TOPOLOGY_BLOCK:
        check.add("fabric.plugin", f"Slurm {check.version} has no topology/block (it arrived in 23.11): use "
                                   "plugin=\"tree\", or Slurm 23.11 or newer", fabric, "plugin")
        return
    sizes_ok = _sizes(check)
    if topology is None or not topology.blocks:
        return
    _one_block_per_node(check, topology)
    if sizes_ok:
        _blocks_fit(check, topology)


def _sizes(check: Check) -> bool:
    """Whether the inventory's block sizes are ones Slurm accepts; problems are recorded."""
    fabric = check.cluster.fabric
    assert fabric is not None
    found = size_problems(fabric.block_sizes)
    for message in found:
        check.add("fabric.block_sizes", message, fabric, "block_sizes")
    return not found


def size_problems(sizes: tuple[int, ...]) -> list[str]:
    """What Slurm refuses in these block sizes (the fabric's, or a BlockTopology's): none for Slurm's default."""
    if any(size <= 0 for size in sizes):
        return [f"must be positive node counts, not {', '.join(str(s) for s in sizes if s <= 0)}"]
    found = []
    base = sizes[0] if sizes else 0
    for previous, size in zip(sizes, sizes[1:]):
        if size <= previous:
            found.append(f"must increase, the base block size first: {size} after {previous}")
    for size in (s for s in sizes[1:] if s > base):  # a smaller one is out of order, reported above
        multiple, remainder = divmod(size, base)
        if remainder or multiple & (multiple - 1):
            found.append(f"{size} is not the base block size ({base}) times a power of two: Slurm refuses it "
                         "(\"Invalid BlockSizes value\")")
        elif multiple > 1 << MAX_LEVEL:
            found.append(f"{size} is {multiple} base blocks; Slurm aggregates at most {1 << MAX_LEVEL}")
    return found


def _one_block_per_node(check: Check, topology: Topology) -> None:
    """A rail-optimized node whose rails are cabled to different units would land in two blocks. Slurm (24.11)
    takes overlapping blocks silently, yet places each node by the first block listing it: not what was cabled."""
    fabric = check.cluster.fabric
    assert fabric is not None
    entries = {leaf.name: leaf for leaf in fabric.leaves}
    for name, first, nodes in shared_nodes(topology.blocks):
        check.add(f"fabric.leaves[{name}]", f"{check.sample(nodes)} {'is' if len(nodes) == 1 else 'are'} also "
                                            f"in block {first}: with topology/block each node belongs to one "
                                            "block (a rail cabled to another unit?)", entries[name])


def shared_nodes(blocks: tuple[Switch, ...]) -> list[tuple[str, str, list[str]]]:
    """Each block holding nodes an earlier block holds: (its name, the earlier block's, those nodes)."""
    block_of: dict[str, str] = {}
    shared: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for block in blocks:
        for node in block.nodes:
            first = block_of.setdefault(node, block.name)
            if first != block.name:
                shared[block.name][first].append(node)
    return [(name, first, nodes) for name, others in shared.items() for first, nodes in others.items()]


def _blocks_fit(check: Check, topology: Topology) -> None:
    fabric = check.cluster.fabric
    assert fabric is not None
    entries = {leaf.name: leaf for leaf in fabric.leaves}
    base = topology.block_sizes[0]
    first = topology.blocks[0]
    if check.version < BLOCK_SIZES:
        # 23.11 counts aggregation levels in whole blocks (BlockLevels), so the base is the one size of them all.
        for block in topology.blocks[1:]:
            if len(block.nodes) != len(first.nodes):
                check.add(f"fabric.leaves[{block.name}]", f"block {block.name} has {len(block.nodes)} nodes and "
                                                          f"{first.name} {len(first.nodes)}: Slurm {check.version} "
                                                          "needs every block the same size", entries[block.name])
        if fabric.block_sizes and base != len(first.nodes):
            check.add("fabric.block_sizes", f"the base block size {base} is not the blocks' size, "
                                            f"{len(first.nodes)}: Slurm {check.version} has no base block size of "
                                            "its own, the blocks are the base", fabric, "block_sizes")
    elif check.version < BLOCK_GAPS:
        for block in topology.blocks:
            if len(block.nodes) < base:
                check.add(f"fabric.leaves[{block.name}]", f"block {block.name} has {len(block.nodes)} nodes, fewer "
                                                          f"than the base block size {base}: Slurm {check.version} "
                                                          "refuses it (gaps are allowed from 25.05)",
                          entries[block.name])
