"""Rules for the rails of a rail-optimized fabric: each names declared leaves, no leaf is on two rails, a rail has one
leaf per scalable unit, and names and HCAs are not given twice.

Rails given without ``rail_optimized=True`` are refused rather than taken to imply it: ``rail_optimized`` decides
how Slurm's tree is built (the leaves of one unit merged into one switch), and a change to topology.conf should be
seen in the inventory, not follow from a list added for NCCL's sake.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..fabric import Rail
from ..resolved import Switch
from .check import Check


def rail_units(check: Check, leaves: Sequence[Switch]) -> None:
    """rail_optimized says the leaves with the same nodes are one scheduling unit: leaves that share some nodes but
    not all are no rails of one unit (Slurm would place those nodes under two switches), and leaves that share none
    are no rails at all."""
    fabric = check.cluster.fabric
    if fabric is None or not fabric.rail_optimized or not leaves:
        return
    sets = [(leaf.name, frozenset(leaf.nodes)) for leaf in leaves if leaf.nodes]
    # With topology/block, a node in two units is the blocks' rule (blocks.py), named there per leaf.
    for index, (name, nodes) in enumerate(sets if fabric.plugin == "tree" else ()):
        other = next(((n, o) for n, o in sets[index + 1:] if nodes & o and nodes != o), None)
        if other is not None:
            shared = check.sample(sorted(nodes & other[1]))
            check.add("fabric.rail_optimized", f"leaves {name} and {other[0]} share {shared} but not all their nodes: "
                      "the rails of one scalable unit carry the same nodes, each on its own leaf", fabric,
                      "rail_optimized")
            return
    if len({nodes for _, nodes in sets}) == len(sets):
        check.add("fabric.rail_optimized", "no two leaves carry the same nodes, so no node hangs off one leaf per "
                  "rail: set rail_optimized=False, or give each rail's leaves", fabric, "rail_optimized")


def rails(check: Check, leaves: Sequence[Switch]) -> None:
    """``leaves``: the fabric's leaves with the nodes that hang off each, as the fabric rule found them."""
    rail_units(check, leaves)
    fabric = check.cluster.fabric
    if fabric is None or not fabric.rails:
        return
    if not fabric.rail_optimized:
        check.add("fabric.rails", "rails are given but rail_optimized is False: set rail_optimized=True (each node "
                                  "hangs off one leaf per rail)", fabric, "rails")
    check.duplicates([(r.name, r, f"fabric.rails[{r.name}]") for r in fabric.rails],
                     "a rail of this name is already defined ({at})")
    nodes_of = {leaf.name: leaf.nodes for leaf in leaves}
    spines = {spine.name for spine in fabric.spines}
    hca_of: dict[str, str] = {}
    rail_of: dict[str, str] = {}
    for rail in fabric.rails:
        where = f"fabric.rails[{rail.name}]"
        check.name(where, rail.name, rail, "rail")
        if rail.hca is not None and check.name(f"{where}.hca", rail.hca, rail, "HCA"):
            if rail.hca in hca_of and hca_of[rail.hca] != rail.name:
                check.add(f"{where}.hca", f"{rail.hca} is the HCA of rail {hca_of[rail.hca]} already", rail, "hca")
            hca_of.setdefault(rail.hca, rail.name)
        named = check.expand(f"{where}.leaves", rail.leaves, rail, "leaves")
        if named is None:
            continue
        if not named:
            check.add(f"{where}.leaves", "names no leaf", rail, "leaves")
        unknown = [n for n in named if n not in nodes_of]
        if unknown:
            what = ", ".join(f"{n} (a spine)" if n in spines else n for n in unknown)
            check.add(f"{where}.leaves", f"{what} {'is not a leaf' if len(unknown) == 1 else 'are not leaves'} of "
                                         "the fabric", rail, "leaves")
        twice = [n for n in dict.fromkeys(named) if rail_of.get(n, rail.name) != rail.name]
        for leaf in twice:
            check.add(f"{where}.leaves", f"{leaf} is on rail {rail_of[leaf]} already: a leaf carries one rail",
                      rail, "leaves")
        for leaf in named:
            rail_of.setdefault(leaf, rail.name)
        _one_leaf_per_unit(check, rail, [n for n in named if n in nodes_of], nodes_of)


def _one_leaf_per_unit(check: Check, rail: Rail, named: list[str], nodes_of: dict[str, tuple[str, ...]]) -> None:
    """Two leaves of one rail carrying the same node are two rails of one unit, not one rail."""
    seen: dict[str, str] = {}
    for leaf in dict.fromkeys(named):
        shared = next((n for n in nodes_of[leaf] if n in seen), None)
        if shared is not None:
            check.add(f"fabric.rails[{rail.name}].leaves", f"{seen[shared]} and {leaf} both carry {shared}: a rail "
                                                           "has one leaf per scalable unit", rail, "leaves")
            continue
        seen.update(dict.fromkeys(nodes_of[leaf], leaf))
