"""topology.yaml (Slurm 25.05+): every topology of the cluster, the default first. The fabric is a tree (leaves
with their nodes, spines with the switches below them) or, with plugin="block", blocks; each BlockTopology of the
inventory is blocks. Keys as slurm-25.05's data_parser reads them (TOPOLOGY_CONF, SWITCH_CONFIG, BLOCK_CONFIG in
src/plugins/data_parser/v0.0.43/parsers.c): an unknown key is no place for a guess.

Which release gets this file instead of topology.conf is decided in model/resolve.py (_topology_file)."""

from __future__ import annotations

from .. import hostlists
from ..model import Topology, ValidCluster
from ..versions import SlurmVersion
from .text import fill, header


def render(valid: ValidCluster) -> str | None:
    """None when the cluster has no topology: Slurm then runs on topology/flat (never an empty file)."""
    if not valid.topologies:
        return None
    # slurmctld takes the first topology marked cluster_default for partitions naming none: the fabric's.
    topologies = [_topology(t, index == 0, valid.version) for index, t in enumerate(valid.topologies)]
    return fill("topology.yaml.j2", header=header(valid), topologies=topologies)


def _topology(topology: Topology, default: bool, version: SlurmVersion) -> dict[str, object]:
    out: dict[str, object] = {"name": topology.name, "default": "true" if default else "false"}
    if topology.plugin == "block":
        # Slurm aggregates neighbouring blocks into larger ones: the order is the inventory's, never sorted.
        out["block_sizes"] = topology.block_sizes
        out["blocks"] = [{"name": b.name, "nodes": hostlists.compress(b.nodes, version)} for b in topology.blocks]
        out["switches"] = []
    else:
        out["switches"] = _switches(topology, version)
    return out


def _switches(topology: Topology, version: SlurmVersion) -> list[dict[str, str]]:
    """Leaves with ``nodes``, spines with ``children``: Slurm refuses a switch with both."""
    leaves = [{"name": leaf.name, "key": "nodes", "value": hostlists.compress(leaf.nodes, version)}
              for leaf in topology.leaves]
    spines = [{"name": spine.name, "key": "children", "value": hostlists.compress(spine.switches, version)}
              for spine in topology.spines]
    return leaves + spines
