"""Rules for the fabric: every node under a leaf, switch names, a tree Slurm accepts, a switch above every node
(topology/tree only; topology/block has its own rules in blocks.py)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping

from ... import hostlists
from ..base import Entry
from ..fabric import leaves_by_node
from ..nodes import Nodes
from ..resolved import Switch
from .check import Check

MAX_TREE_DEPTH = 20  # topology/tree refuses deeper trees ("Switch configuration is not a tree")


def fabric(check: Check, known_nodes: Mapping[str, Nodes]) -> tuple[list[Switch], list[Switch]]:
    """The leaves with their nodes (natural order) and the spines with the switches below them, as written."""
    fabric = check.cluster.fabric
    if fabric is None:
        for entry in {id(e): e for e in known_nodes.values() if e.leaf is not None}.values():
            check.add(f"nodes[{entry.names}].leaf", f"names leaf {entry.leaf!r} but the cluster declares no fabric",
                      entry)
        return [], []

    switches: list[tuple[str, Entry, str]] = [(s.name, s, f"fabric.leaves[{s.name}]") for s in fabric.leaves]
    switches += [(s.name, s, f"fabric.spines[{s.name}]") for s in fabric.spines]
    check.duplicates(switches, "a switch of this name is already defined ({at})")
    for name, switch, where in switches:
        check.name(where, name, switch, "switch")
    named = {name for name, _, _ in switches}
    leaf_names = {leaf.name for leaf in fabric.leaves}
    for entry in {id(e): e for e in known_nodes.values() if e.leaf is not None}.values():
        if entry.leaf not in leaf_names and not check.refers_to_left_out(f"fabric.leaves[{entry.leaf}]"):
            check.add(f"nodes[{entry.names}].leaf", f"{entry.leaf!r} is not a leaf of the fabric", entry)

    listed: list[tuple[str, list[str]]] = []
    for leaf in fabric.leaves:
        where = f"fabric.leaves[{leaf.name}].nodes"
        members = check.expand(where, leaf.nodes, leaf) if leaf.nodes is not None else []
        unknown = [n for n in members or () if n not in known_nodes and not check.node_left_out(n)]
        if unknown:
            check.unknown_nodes(where, unknown, known_nodes, leaf)
        listed.append((leaf.name, [n for n in members or () if n in known_nodes]))
    leaves_of = leaves_by_node(((name, entry.leaf) for name, entry in known_nodes.items()), listed)
    by_leaf: dict[str, list[str]] = defaultdict(list)
    for name, names in leaves_of.items():
        for leaf_name in names:
            by_leaf[leaf_name].append(name)
    leaves = []
    for leaf in fabric.leaves:
        members = sorted(by_leaf.get(leaf.name, ()), key=hostlists.natural_key)
        if not members and not check.lacks("nodes") and not check.nodes_left_out():
            check.add(f"fabric.leaves[{leaf.name}]", "no node hangs off this leaf", leaf)
        leaves.append(Switch(leaf.name, nodes=tuple(members)))
    _every_node_under_a_leaf(check, known_nodes, leaves_of)

    spines: list[Switch] = []
    children_of: dict[str, list[str]] = {}
    parents: Counter[str] = Counter()
    for spine in fabric.spines:
        where = f"fabric.spines[{spine.name}].switches"
        children = list(dict.fromkeys(check.expand(where, spine.switches, spine) or []))
        unknown = [c for c in children if c not in named]
        if unknown:
            check.add(where, f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not "
                             f"{'a switch' if len(unknown) == 1 else 'switches'} of the fabric", spine)
        children = [c for c in children if c in named]
        if not children:
            check.add(f"fabric.spines[{spine.name}]", "no switch is below this spine", spine)
        children_of.setdefault(spine.name, children)
        parents.update(children)
        spines.append(Switch(spine.name, switches=tuple(children)))
    # topology/block schedules on the blocks alone: the spines above them constrain no job there.
    tree = fabric.plugin == "tree"
    if _is_a_tree(check, children_of) and tree:
        _connected(check, leaves, children_of)
    if fabric.spines and tree:
        for leaf in fabric.leaves:
            if parents[leaf.name] == 0:
                check.add(f"fabric.leaves[{leaf.name}]", "is below no spine: an orphan switch, jobs could not span it "
                                                         "and the rest of the fabric", leaf)
    return leaves, spines


def _every_node_under_a_leaf(check: Check, known_nodes: Mapping[str, Nodes],
                             leaves_of: Mapping[str, list[str]]) -> None:
    fabric = check.cluster.fabric
    assert fabric is not None
    under_none: dict[int, tuple[Nodes, list[str]]] = {}
    under_many: dict[int, tuple[Nodes, list[str]]] = {}
    for name, entry in known_nodes.items():
        count = len(leaves_of.get(name, ()))
        if count == 0:
            under_none.setdefault(id(entry), (entry, []))[1].append(name)
        elif count > 1 and not fabric.rail_optimized:
            under_many.setdefault(id(entry), (entry, []))[1].append(name)
    # A node a leaf names misspelt, or in an entry left out, is under no leaf for that mistake alone.
    misspelt = any(check.found_at(f"fabric.leaves[{leaf.name}].nodes") for leaf in fabric.leaves)
    for entry, names in under_none.values() if not misspelt and not check.lacks("fabric.leaves") else ():
        check.add(f"nodes[{entry.names}]", f"{check.sample(names)} {'is' if len(names) == 1 else 'are'} under no leaf "
                                           "switch", entry)
    for entry, names in under_many.values():
        first = names[0]
        check.add(f"nodes[{entry.names}]", f"{check.sample(names)} {'is' if len(names) == 1 else 'are'} under "
                                           f"several leaves ({first}: {', '.join(leaves_of[first])}); set "
                                           "fabric.rail_optimized=True if each node is cabled to one leaf per rail",
                  entry)


def _connected(check: Check, leaves: list[Switch], children_of: Mapping[str, list[str]]) -> None:
    """topology/tree places a job only below one switch: some switch must be above every node."""
    fabric = check.cluster.fabric
    assert fabric is not None
    nodes_of: dict[str, frozenset[str]] = {leaf.name: frozenset(leaf.nodes) for leaf in leaves}

    def reach(name: str) -> frozenset[str]:
        if name not in nodes_of:
            nodes_of[name] = frozenset().union(*(reach(c) for c in children_of.get(name, ())))
        return nodes_of[name]

    everyone = frozenset().union(*(reach(name) for name in [*nodes_of, *children_of]))
    widest = max(nodes_of, key=lambda n: (len(nodes_of[n]), n), default=None)
    if fabric.disconnected or widest is None or len(nodes_of[widest]) == len(everyone):
        return
    check.add("fabric", f"no switch is above every node (the widest, {widest}, reaches {len(nodes_of[widest])} of "
                        f"{len(everyone)}): jobs could not span the cluster; add a spine above the others, or set "
                        "fabric.disconnected=True if that is intended", fabric)


def _is_a_tree(check: Check, children_of: Mapping[str, list[str]]) -> bool:
    """Whether the switches form a tree Slurm accepts (no cycle, not too deep); problems are recorded."""
    fabric = check.cluster.fabric
    assert fabric is not None
    before = len(check.problems)
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    depth: dict[str, int] = {}
    reported: set[str] = set()
    spines = {s.name: s for s in fabric.spines}

    def visit(name: str, path: list[str]) -> int:
        if state.get(name) == 1:
            cycle = path[path.index(name):] + [name]
            key = min(cycle[:-1])
            if key not in reported:
                reported.add(key)
                check.add(f"fabric.spines[{path[-1]}].switches", f"switch cycle {' -> '.join(cycle)}",
                          spines[path[-1]])
            return 0
        if state.get(name) == 2:
            return depth[name]
        state[name] = 1
        below = [visit(child, path + [name]) for child in children_of.get(name, ())]
        state[name] = 2
        depth[name] = 1 + max(below, default=0)
        return depth[name]

    for name in children_of:
        if visit(name, []) > MAX_TREE_DEPTH:
            check.add(f"fabric.spines[{name}]", f"the tree below is deeper than the {MAX_TREE_DEPTH} levels "
                                                "topology/tree accepts", fabric)
    return len(check.problems) == before
