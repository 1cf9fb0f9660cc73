"""The imported fabric as Python an admin pastes into the inventory, or as a module the inventory imports."""

from __future__ import annotations

import json

from ..model import Fabric, Rail


def _q(text: str) -> str:
    """A string literal in double quotes, as the inventories write them."""
    return json.dumps(text)


def fabric_expression(fabric: Fabric) -> str:
    """``Fabric(...)`` with one leaf, spine or rail a line, in the inventory's own spelling."""
    lines = ["Fabric(", "    leaves=("]
    lines += [f"        Leaf({_q(leaf.name)}, nodes={_q(leaf.nodes or '')})," for leaf in fabric.leaves]
    lines.append("    ),")
    if fabric.spines:
        lines.append("    spines=(")
        lines += [f"        Spine({_q(spine.name)}, switches={_q(spine.switches)})," for spine in fabric.spines]
        lines.append("    ),")
    if fabric.rails:
        lines.append("    rails=(")
        lines += [f"        {_rail(rail)}," for rail in fabric.rails]
        lines.append("    ),")
    if fabric.port_label is not None:
        lines.append(f"    port_label={_q(fabric.port_label)},")
    if fabric.rail_optimized:
        lines.append("    rail_optimized=True,  # each node is on one leaf per rail")
    if fabric.disconnected:
        lines.append("    disconnected=True,  # no switch is above every node")
    lines.append(")")
    return "\n".join(lines)


def nccl_proposal(fabric: Fabric) -> str | None:
    """The rails' HCAs as NCCL's, for the compute profile: a comment the admin copies into the profile. No port:
    NCCL then takes every port of each HCA (a DGX H100's compute HCAs have one)."""
    hcas = [rail.hca for rail in fabric.rails if rail.hca is not None]
    if not hcas:
        return None
    return (f"# NCCL over the rails, for the compute nodes' profile: "
            f"Profile(..., nccl=Nccl(ib_hca=({', '.join(_q(h) for h in hcas)},)))")


def fabric_module(fabric: Fabric, command: str) -> str:
    """A module defining ``fabric``; the inventory does ``from inventories.prod_fabric import fabric`` (the
    directory clusterforge and pyinfra run in is on the import path) and passes ``fabric=fabric`` to its Cluster."""
    return (f'"""The InfiniBand fabric as ibnetdiscover found it. Written by `{command}`;\n'
            'run it again (with --inventory) to check the cabling against the inventory."""\n\n'
            f"from clusterforge.model import {', '.join(_classes(fabric))}\n\n"
            f"fabric = {fabric_expression(fabric)}\n"
            + (f"\n{proposal}\n" if (proposal := nccl_proposal(fabric)) else ""))


def _rail(rail: Rail) -> str:
    hca = f"hca={_q(rail.hca)}, " if rail.hca is not None else ""
    return f"Rail({_q(rail.name)}, {hca}leaves={_q(rail.leaves)})"


def _classes(fabric: Fabric) -> list[str]:
    return ["Fabric", "Leaf", *(["Rail"] if fabric.rails else []), *(["Spine"] if fabric.spines else [])]
