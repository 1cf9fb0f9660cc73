"""What `scontrol show topology` must show for a topology/block cluster: each block of the inventory, and the
aggregated blocks Slurm builds from neighbours (src/plugins/topology/block/block_record.c, 24.05 to 25.11)."""

from __future__ import annotations

from clusterforge import hostlists
from clusterforge.model import Topology

Record = tuple[frozenset[str], frozenset[str], int]  # block names, nodes, BlockSize


def expected(topology: Topology) -> set[Record]:
    """Slurm's rule: level j groups ``sizes[j] / base`` neighbouring blocks, counted from the first; the levels
    stop at the first that covers every block; a last, partial group is made only where it is larger than a group
    of the level below."""
    blocks, base = topology.blocks, topology.block_sizes[0]
    records = {(frozenset({b.name}), frozenset(b.nodes), base) for b in blocks}
    widths: list[int] = []
    for size in topology.block_sizes:
        widths.append(size // base)
        if widths[-1] >= len(blocks):
            break
    for level in range(1, len(widths)):
        width, below = widths[level], widths[level - 1]
        for start in range(0, len(blocks), width):
            group = blocks[start:start + width]
            if width > len(group) and below >= len(group):
                continue
            records.add((frozenset(b.name for b in group), frozenset(n for b in group for n in b.nodes),
                         base * width))
    return records


def shown(records: dict[str, dict[str, str]]) -> set[Record]:
    """`harness.parse_topology` of topology/block, as the same records."""
    return {(frozenset(hostlists.expand(name)), frozenset(hostlists.expand(rec["Nodes"])), int(rec["BlockSize"]))
            for name, rec in records.items()}
