"""topology.conf for topology/tree: leaves with their nodes, spines with the switches below them."""

from __future__ import annotations

from .. import hostlists
from ..model import ValidCluster
from .text import fill, header, pairs


def render(valid: ValidCluster) -> str | None:
    """None when the cluster declares no fabric: Slurm then runs without topology.conf (never an empty one)."""
    topology = valid.topology
    if topology is None:
        return None
    lines = [pairs([("SwitchName", leaf.name), ("Nodes", hostlists.compress(leaf.nodes, valid.version))])
             for leaf in topology.leaves]
    lines += [pairs([("SwitchName", spine.name), ("Switches", hostlists.compress(spine.switches, valid.version))])
              for spine in topology.spines]
    return fill("lines.conf.j2", header=header(valid), lines=lines)
