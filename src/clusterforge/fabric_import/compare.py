"""The imported fabric against the inventory's: which node sits under another leaf, which is missing either way,
which spine has other switches below it, which rail has other leaves or another HCA. Read from the entries as
written, not from the resolved cluster, so that an inventory whose fabric is wrong enough to be invalid can still be
compared (that is when it is needed most), and so that each leaf of a rail-optimized unit is compared, not the one
switch resolve merges them into. Which node hangs off which leaf is still decided in one place,
``model.fabric.leaves_by_node``, for resolve and for this.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .. import hostlists
from ..errors import ClusterforgeError
from ..model import Cluster, Fabric, Rail
from ..model.fabric import leaves_by_node
from ..versions import SlurmVersion


def _expand(expression: str, where: str) -> list[str]:
    try:
        return hostlists.expand(expression)
    except hostlists.HostlistError as error:
        raise ClusterforgeError(f"the inventory's {where}: {error}") from None


def inventory_nodes(cluster: Cluster) -> set[str]:
    """The compute nodes of the inventory: the HCAs the import looks for."""
    return {name for entry in cluster.nodes for name in _expand(entry.names, f"nodes[{entry.names}]")}


def inventory_leaves(cluster: Cluster) -> dict[str, set[str]]:
    """Each node's leaves in the inventory; a name a leaf lists that is no node is kept, to be compared too."""
    nodes = [(name, entry.leaf) for entry in cluster.nodes for name in _expand(entry.names, f"nodes[{entry.names}]")]
    listed = [(leaf.name, _expand(leaf.nodes, f"fabric.leaves[{leaf.name}]") if leaf.nodes else [])
              for leaf in (cluster.fabric.leaves if cluster.fabric is not None else ())]
    return {name: set(leaves) for name, leaves in leaves_by_node(nodes, listed).items()}


def _fabric_leaves(fabric: Fabric) -> dict[str, set[str]]:
    listed = [(leaf.name, hostlists.expand(leaf.nodes or "")) for leaf in fabric.leaves]
    return {name: set(leaves) for name, leaves in leaves_by_node((), listed).items()}


def _spines(fabric: Fabric | None) -> dict[str, set[str]]:
    return {s.name: set(_expand(s.switches, f"fabric.spines[{s.name}]")) for s in fabric.spines} if fabric else {}


def _list(names: Iterable[str], version: SlurmVersion) -> str:
    return hostlists.compress(sorted(names, key=hostlists.natural_key), version) or "none"


def differences(cluster: Cluster, imported: Fabric, missing: set[str], version: SlurmVersion) -> list[str]:
    """One line per difference; none when the inventory's fabric is the imported one. Hosts of the fabric that are
    no node of the inventory are listed apart, with the other hosts that are no compute node."""
    out = []
    written = inventory_leaves(cluster)
    found = _fabric_leaves(imported)
    for node in sorted(set(written) & set(found), key=hostlists.natural_key):
        if written[node] != found[node]:
            out.append(f"{node}: under {_list(found[node], version)} in the fabric, "
                       f"{_list(written[node], version) if written[node] else 'no leaf'} in the inventory")
    if missing:
        out.append(f"not in the fabric (no HCA on it): {_list(missing, version)}")
    mine, theirs = _spines(imported), _spines(cluster.fabric)
    for spine in sorted(set(mine) | set(theirs), key=hostlists.natural_key):
        if spine not in theirs:
            out.append(f"spine {spine}: in the fabric above {_list(mine[spine], version)}, not in the inventory")
        elif spine not in mine:
            out.append(f"spine {spine}: in the inventory, not in the fabric")
        elif mine[spine] != theirs[spine]:
            out.append(f"spine {spine}: above {_list(mine[spine], version)} in the fabric, "
                       f"{_list(theirs[spine], version)} in the inventory")
    rail = cluster.fabric.rail_optimized if cluster.fabric is not None else False
    if rail != imported.rail_optimized:
        out.append(f"rail_optimized: {imported.rail_optimized} in the fabric, {rail} in the inventory")
    if cluster.fabric is not None and cluster.fabric.rails:
        out += rail_differences(cluster.fabric.rails, imported.rails, version)
    return out


def rail_differences(written: Sequence[Rail], found: Sequence[Rail], version: SlurmVersion) -> list[str]:
    """The inventory's rails against the fabric's, matched by the leaves they share (rail names are the admin's
    labels, not facts of the fabric); an HCA the fabric does not know (named through a GUID file) is no difference.
    """
    leaves_of = {id(r): set(_expand(r.leaves, f"fabric.rails[{r.name}].leaves")) for r in written}
    theirs = {id(r): set(hostlists.expand(r.leaves)) for r in found}
    left = list(found)
    out = []
    for rail in written:
        mine = leaves_of[id(rail)]
        match = max(left, key=lambda r: len(theirs[id(r)] & mine), default=None)
        if match is None or not theirs[id(match)] & mine:
            out.append(f"rail {rail.name}: in the inventory on {_list(mine, version)}, no rail of the fabric has "
                       "those leaves")
            continue
        left.remove(match)
        if theirs[id(match)] - mine:
            out.append(f"rail {rail.name}: {_list(theirs[id(match)] - mine, version)} on it in the fabric, not in the "
                       "inventory")
        if mine - theirs[id(match)]:
            out.append(f"rail {rail.name}: {_list(mine - theirs[id(match)], version)} on it in the inventory, not in "
                       "the fabric")
        if rail.hca is not None and match.hca is not None and rail.hca != match.hca:
            out.append(f"rail {rail.name}: HCA {rail.hca} in the inventory, {match.hca} in the fabric")
    for rail in left:
        out.append(f"rail of {rail.hca or 'no known HCA'} on {_list(theirs[id(rail)], version)}: in the fabric, "
                   "not in the inventory")
    return out
