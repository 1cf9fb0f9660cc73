"""topology.conf for topology/tree: leaves with their nodes, spines with the switches below them."""

from __future__ import annotations

from .. import hostlists
from ..model import Switch, ValidCluster
from .text import fill, header, pairs


def merged_leaves(valid: ValidCluster) -> tuple[list[Switch], dict[str, str]]:
    """Leaves as Slurm should see them, and what each inventory leaf became.

    On a rail-optimized fabric every node hangs off one leaf per rail; those leaves carry the same nodes and are
    one scheduling unit, so they become one switch named after the first of them.
    """
    if not valid.spec.fabric or not valid.spec.fabric.rail_optimized:
        return list(valid.leaves), {leaf.name: leaf.name for leaf in valid.leaves}
    by_nodes: dict[tuple[str, ...], Switch] = {}
    renamed: dict[str, str] = {}
    for leaf in valid.leaves:
        kept = by_nodes.setdefault(leaf.nodes, leaf)
        renamed[leaf.name] = kept.name
    return list(by_nodes.values()), renamed


def render(valid: ValidCluster) -> str | None:
    """None when the cluster declares no fabric: Slurm then runs without topology.conf (never an empty one)."""
    if not valid.has_fabric:
        return None
    leaves, renamed = merged_leaves(valid)
    lines = [pairs([("SwitchName", leaf.name), ("Nodes", hostlists.compress(leaf.nodes, valid.version))])
             for leaf in leaves]
    for spine in valid.spines:
        below = list(dict.fromkeys(renamed.get(name, name) for name in spine.switches))
        lines.append(pairs([("SwitchName", spine.name), ("Switches", hostlists.compress(below, valid.version))]))
    return fill("lines.conf.j2", header=header(valid), lines=lines)
