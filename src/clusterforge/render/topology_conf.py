"""topology.conf: for topology/tree, leaves with their nodes and spines with the switches below them; for
topology/block, one block per scheduling unit and the block sizes."""

from __future__ import annotations

from .. import hostlists
from ..model import Topology, ValidCluster
from ..versions import BLOCK_SIZES, SlurmVersion
from .text import fill, header, pairs


def render(valid: ValidCluster) -> str | None:
    """None when the cluster declares no fabric: Slurm then runs without topology.conf (never an empty one)."""
    topology = valid.topology
    if topology is None:
        return None
    lines = block_lines(topology, valid.version) if topology.plugin == "block" else _tree_lines(topology, valid)
    return fill("lines.conf.j2", header=header(valid), lines=lines)


def _tree_lines(topology: Topology, valid: ValidCluster) -> list[str]:
    lines = [pairs([("SwitchName", leaf.name), ("Nodes", hostlists.compress(leaf.nodes, valid.version))])
             for leaf in topology.leaves]
    lines += [pairs([("SwitchName", spine.name), ("Switches", hostlists.compress(spine.switches, valid.version))])
              for spine in topology.spines]
    return lines


def block_lines(topology: Topology, version: SlurmVersion) -> list[str]:
    """The lines of topology/block (the tests also write ones validation refuses, to see slurmctld refuse them)."""
    # Slurm aggregates neighbouring lines into larger blocks: the order is the inventory's, never sorted.
    lines = [pairs([("BlockName", block.name), ("Nodes", hostlists.compress(block.nodes, version))])
             for block in topology.blocks]
    sizes = topology.block_sizes
    if version >= BLOCK_SIZES:
        lines.append(pairs([("BlockSizes", ",".join(str(size) for size in sizes))]))
    else:
        # 23.11 knows only BlockLevels: level k is 2**k whole blocks (every block has the base size there).
        lines.append(pairs([("BlockLevels", ",".join(str((size // sizes[0]).bit_length() - 1) for size in sizes))]))
    return lines
