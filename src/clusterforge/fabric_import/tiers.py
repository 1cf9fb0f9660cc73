"""The compute fabric among the fabrics of a dump, and its tiers, found from the links alone.

Switch names say nothing reliable (`IBLEAF` in one site, `L1-03` in the next), so tiers come from the graph: the
leaves are the switches the compute nodes' HCAs hang off; each switch above is one hop further from the nearest
leaf (spine = 1, core = 2, ...), and its children are its neighbours one tier below. Links within a tier (leaf to
leaf) are not part of Slurm's tree and are left out. SHARP aggregation nodes, which hang off every switch, are not
HCAs of nodes and make no switch a leaf.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from .parse import IbNode


@dataclass
class Component:
    """One connected fabric: its switches and CAs by id."""

    switches: set[str] = field(default_factory=set)
    cas: set[str] = field(default_factory=set)


def components(nodes: Mapping[str, IbNode]) -> list[Component]:
    """The disconnected fabrics of a dump (several dumps, one per fabric, may have been concatenated)."""
    parent = {node_id: node_id for node_id in nodes}

    def root(node_id: str) -> str:
        while parent[node_id] != node_id:
            parent[node_id] = parent[parent[node_id]]
            node_id = parent[node_id]
        return node_id

    for node in nodes.values():
        for link in node.links.values():
            parent[root(node.id)] = root(link.peer)
    found: dict[str, Component] = {}
    for node in nodes.values():
        part = found.setdefault(root(node.id), Component())
        (part.switches if node.kind == "switch" else part.cas).add(node.id)
    return list(found.values())


def compute_fabric(parts: list[Component], host_of: Mapping[str, str],
                   compute: Collection[str] | None) -> tuple[list[Component], list[Component]]:
    """(the compute fabric's parts, the other fabrics). The compute fabric is the one most of the compute nodes'
    HCAs are on; a storage fabric reaches the same nodes through fewer HCAs, so it loses. With an inventory, a
    fabric whose nodes are none of the chosen one's is an island of the same compute fabric (the inventory's
    `disconnected`); without one, such a fabric could as well be a storage cluster's, so only the largest is taken."""

    def hosts(part: Component) -> set[str]:
        return {host_of[c] for c in part.cas if c in host_of and (compute is None or host_of[c] in compute)}

    def weight(part: Component) -> tuple[int, int, int]:
        named = [c for c in part.cas if c in host_of and (compute is None or host_of[c] in compute)]
        return len(hosts(part)), len(named), len(part.switches)

    ranked = sorted(parts, key=weight, reverse=True)
    if not ranked or not hosts(ranked[0]):
        return [], ranked
    chosen, others = [ranked[0]], []
    taken = hosts(ranked[0])
    for part in ranked[1:]:
        mine = hosts(part)
        if compute is not None and mine and not mine & taken:
            chosen.append(part)
            taken |= mine
        else:
            others.append(part)
    return chosen, others


@dataclass
class Tiers:
    level: dict[str, int]  # switch id -> 0 for a leaf, 1 for a spine, 2 for a core, ...
    children: dict[str, list[str]]  # switch id -> its neighbours one tier below
    hosts_on: dict[str, set[str]]  # leaf id -> the compute hosts whose HCAs hang off it
    unplaced: list[str]  # switches no path from a leaf reaches (never in a tree)


def tiers(nodes: Mapping[str, IbNode], parts: list[Component], host_of: Mapping[str, str],
          compute: Collection[str] | None) -> Tiers:
    switches = set().union(*(p.switches for p in parts))
    hosts_on: dict[str, set[str]] = {}
    for ca_id in set().union(*(p.cas for p in parts)):
        host = host_of.get(ca_id)
        if host is None or (compute is not None and host not in compute):
            continue
        for link in nodes[ca_id].links.values():
            if link.peer in switches:
                hosts_on.setdefault(link.peer, set()).add(host)
    level = {leaf: 0 for leaf in hosts_on}
    queue = deque(sorted(hosts_on))
    while queue:
        here = queue.popleft()
        for link in sorted(nodes[here].links.values(), key=lambda k: k.port):
            if link.peer in switches and link.peer not in level:
                level[link.peer] = level[here] + 1
                queue.append(link.peer)
    children: dict[str, list[str]] = {}
    for switch_id, tier in level.items():
        if tier:
            below = {link.peer for link in nodes[switch_id].links.values() if level.get(link.peer) == tier - 1}
            children[switch_id] = sorted(below)
    return Tiers(level, children, hosts_on, sorted(switches - set(level)))
