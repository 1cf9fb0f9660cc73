"""The rails of a rail-optimized fabric: which leaves the same HCA of every node is cabled to.

A scalable unit is a set of leaves that carry the same nodes (each node hangs off every one of them, once per
rail). A rail is keyed by the port label the HCAs' descriptions name after the host: the kernel's device
(`dgx-001 mlx5_3`), the DGX's port label (`dgx-001 HCA-4`), or a site's own (``Fabric.port_label``). Each leaf
takes the label most of its HCAs carry, and the leaves with one label are one rail, in the labels' order. Labels
of two kinds (`mlx5_N` on some nodes, `HCA-N` on others) are one rail where a leaf carries both.

Position is the last resort: a leaf whose HCAs carry no label (named through a GUID file, or a label no pattern
takes) joins the rail of its place among its unit's leaves, in name order, as SuperPODs are cabled and named; the
summary says so. A unit with fewer leaves than the others is named, with the rails it lacks; every HCA whose label
is not its leaf's rail's is named with both leaves and both cable ends, and so is every HCA on its own rail's leaf
of another unit than its node's: a cabling ticket is written from them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .. import hostlists
from ..model import Rail
from ..versions import SlurmVersion
from ..words import counted

DEVICE = "device"  # `mlx5_3`: the kernel's name, what NCCL takes
PORT_LABEL = "HCA-N"  # `HCA-4`: a DGX's port label, as its cables and UFM name them
SITE = "site"  # a label of the site's own, matched by Fabric.port_label
# The kinds of label, in the order one wins a tie of another (a device names the rail's HCA for NCCL).
KINDS = (DEVICE, PORT_LABEL, SITE)
_KIND_NAMES = {DEVICE: "mlx5_N", PORT_LABEL: "HCA-N", SITE: "the site's label"}
POSITION = "each leaf's place in its scalable unit (the leaves with the same nodes, in name order)"


@dataclass
class Rails:
    rails: tuple[Rail, ...] = ()
    how: str = ""  # how they were inferred, for the summary
    labels: dict[str, tuple[str, ...]] = field(default_factory=dict)  # rail name -> the labels its leaves carry
    off_rail: list[str] = field(default_factory=list)  # one line per HCA on another rail's leaf, with both leaves
    off_unit: list[str] = field(default_factory=list)  # one line per HCA on its rail's leaf of another unit
    short: list[str] = field(default_factory=list)  # one line per scalable unit with fewer leaves than the others


@dataclass(frozen=True)
class Hca:
    host: str
    leaf: str  # the leaf's Slurm name
    label: str | None  # the port label its description names (`mlx5_3`, `HCA-4`), if one
    kind: str | None = None  # one of KINDS, with a label
    port: int = 1  # the HCA's port
    leaf_port: int = 0  # the leaf's port it is cabled to


@dataclass
class _Rail:
    leaves: dict[int, str] = field(default_factory=dict)  # unit index -> its leaf on this rail
    labels: dict[str, str] = field(default_factory=dict)  # kind -> label
    name: str = ""

    def place(self, place: Mapping[str, int]) -> int:
        count = Counter(place[leaf] for leaf in self.leaves.values())
        return min(count, key=lambda p: (-count[p], p))


def infer_rails(hcas: Iterable[Hca], version: SlurmVersion) -> Rails:
    hcas = list(hcas)
    units = _units(hcas)
    if not units or max(len(unit) for unit in units) < 2:
        return Rails()
    unit_of = {leaf: i for i, unit in enumerate(units) for leaf in unit}
    place = {leaf: unit.index(leaf) for unit in units for leaf in unit}
    keys = _leaf_keys(hcas, units)
    rails = _by_label(keys, unit_of)
    placed = _by_place(rails, keys, units, unit_of, place)
    carried = Counter(kind for rail in rails for kind in rail.labels)
    kinds = sorted(carried, key=lambda k: (-carried[k], KINDS.index(k)))
    rails.sort(key=lambda r: _order(r, kinds, place))
    for i, rail in enumerate(rails, 1):
        rail.name = f"rail{i}"
    home = _home_units(hcas, unit_of)
    ordered = sorted(hcas, key=lambda h: (hostlists.natural_key(h.host), hostlists.natural_key(h.label or ""), h.port))
    found = tuple(Rail(r.name, hca=r.labels.get(DEVICE),
                       leaves=hostlists.compress(sorted(r.leaves.values(), key=hostlists.natural_key), version))
                  for r in rails)
    labels = {r.name: tuple(r.labels[k] for k in KINDS if k in r.labels) for r in rails}
    return Rails(found, _how(hcas, placed, keys), labels, _off_rail(ordered, rails, unit_of, home),
                 _off_unit(ordered, rails, unit_of, home), _short(units, rails, home, placed, version))


def _units(hcas: list[Hca]) -> list[list[str]]:
    """The scalable units, each its leaves in name order: the leaf sets of the most nodes first, so that a node
    with a rail cabled to another unit's leaf makes no unit of its own."""
    leaves_of: dict[str, set[str]] = {}
    for hca in hcas:
        leaves_of.setdefault(hca.host, set()).add(hca.leaf)
    count = Counter(frozenset(leaves) for leaves in leaves_of.values())
    taken: set[str] = set()
    units = []
    for leaves in sorted(count, key=lambda s: (-count[s], sorted(map(hostlists.natural_key, s)))):
        if not leaves & taken:
            taken |= leaves
            units.append(sorted(leaves, key=hostlists.natural_key))
    return sorted(units, key=lambda unit: hostlists.natural_key(unit[0]))


def _leaf_keys(hcas: list[Hca], units: list[list[str]]) -> dict[str, dict[str, str]]:
    """leaf -> kind -> the label most of its HCAs of that kind carry. A tie names none; so does a label two leaves
    of one unit carry, but for the leaf with clearly more of it (a unit has one leaf per rail)."""
    counts: dict[str, dict[str, Counter[str]]] = {}
    for hca in hcas:
        if hca.label is not None and hca.kind is not None:
            counts.setdefault(hca.leaf, {}).setdefault(hca.kind, Counter())[hca.label] += 1
    keys: dict[str, dict[str, str]] = {}
    for leaf, kinds in counts.items():
        for kind, count in kinds.items():
            (first, n), *rest = count.most_common(2)
            if not rest or rest[0][1] < n:
                keys.setdefault(leaf, {})[kind] = first
    for unit in units:
        holders: dict[tuple[str, str], list[str]] = {}
        for leaf in unit:
            for kind, label in keys.get(leaf, {}).items():
                holders.setdefault((kind, label), []).append(leaf)
        for (kind, label), leaves in holders.items():
            if len(leaves) > 1:
                most = max(counts[leaf][kind][label] for leaf in leaves)
                keep = [leaf for leaf in leaves if counts[leaf][kind][label] == most]
                for leaf in leaves:
                    if len(keep) > 1 or leaf != keep[0]:
                        del keys[leaf][kind]
    return keys


def _by_label(keys: Mapping[str, Mapping[str, str]], unit_of: Mapping[str, int]) -> list[_Rail]:
    """The rails the labels give: one per label of the kind most leaves carry; a label of another kind joins the
    rail of the leaves that carry both."""
    kinds = Counter(kind for labels in keys.values() for kind in labels)
    if not kinds:
        return []
    first = min(kinds, key=lambda k: (-kinds[k], KINDS.index(k)))
    rails: dict[str, _Rail] = {}
    for leaf in sorted(keys, key=hostlists.natural_key):
        label = keys[leaf].get(first)
        if label is not None:
            rail = rails.setdefault(label, _Rail(labels={first: label}))
            rail.leaves[unit_of[leaf]] = leaf
    out = list(rails.values())
    for kind in sorted(set(kinds) - {first}, key=lambda k: (-kinds[k], KINDS.index(k))):
        rail_of = _rail_of(out)
        by_label: dict[str, list[str]] = {}
        for leaf in sorted(keys, key=hostlists.natural_key):
            if kind in keys[leaf]:
                by_label.setdefault(keys[leaf][kind], []).append(leaf)
        for label, leaves in by_label.items():
            votes = Counter(id(rail_of[leaf]) for leaf in leaves if leaf in rail_of)
            rail = next((r for r in out if votes and id(r) == votes.most_common(1)[0][0]), None)
            if rail is None or kind in rail.labels:
                continue  # no leaf links it to a rail: its leaves are placed by position
            rail.labels[kind] = label
            for leaf in leaves:
                if leaf not in rail_of and unit_of[leaf] not in rail.leaves:
                    rail.leaves[unit_of[leaf]] = leaf
    return out


def _by_place(rails: list[_Rail], keys: Mapping[str, Mapping[str, str]], units: list[list[str]],
              unit_of: Mapping[str, int], place: Mapping[str, int]) -> list[str]:
    """The last resort: each leaf no label placed joins the rail at its place in its unit (the leaves of one
    label of their own together). Returns the leaves so placed."""
    on_rail = {leaf for rail in rails for leaf in rail.leaves.values()}
    groups: dict[object, list[str]] = {}
    for unit in units:
        for leaf in unit:
            if leaf in on_rail:
                continue
            groups.setdefault(_first_label(keys, leaf) or leaf, []).append(leaf)
    placed = []
    for leaves in groups.values():
        count = Counter(place[leaf] for leaf in leaves)
        at = min(count, key=lambda p: (-count[p], p))
        taken = {unit_of[leaf] for leaf in leaves}
        rail = next((r for r in rails if r.leaves and r.place(place) == at and not taken & set(r.leaves)), None)
        if rail is None:
            rail = _Rail()
            rails.append(rail)
        for leaf in leaves:
            if unit_of[leaf] in rail.leaves:  # two leaves of one label in one unit: the second alone
                rails.append(_Rail(leaves={unit_of[leaf]: leaf}))
            else:
                rail.leaves[unit_of[leaf]] = leaf
            placed.append(leaf)
        kind_label = _first_label(keys, leaves[0])
        if kind_label is not None and kind_label[0] not in rail.labels:
            rail.labels[kind_label[0]] = kind_label[1]
    return placed


def _first_label(keys: Mapping[str, Mapping[str, str]], leaf: str) -> tuple[str, str] | None:
    """(kind, label) of the first kind, in KINDS' order, the leaf is keyed by; None for a leaf with no label."""
    return next(((k, keys[leaf][k]) for k in KINDS if k in keys.get(leaf, {})), None)


def _rail_of(rails: Iterable[_Rail]) -> dict[str, _Rail]:
    """leaf -> the rail it is on."""
    return {leaf: rail for rail in rails for leaf in rail.leaves.values()}


def _order(rail: _Rail, kinds: list[str], place: Mapping[str, int]) -> tuple:
    """The order of the labels of the kind most rails carry, else of the next kind; else their place."""
    for rank, kind in enumerate(kinds):
        if kind in rail.labels:
            return (rank, hostlists.natural_key(rail.labels[kind]), rail.place(place))
    return (len(kinds), ("", 0, "", ""), rail.place(place))


def _home_units(hcas: list[Hca], unit_of: Mapping[str, int]) -> dict[str, int]:
    """host -> the unit most of its HCAs hang off."""
    count: dict[str, Counter[int]] = {}
    for hca in hcas:
        if hca.leaf in unit_of:
            count.setdefault(hca.host, Counter())[unit_of[hca.leaf]] += 1
    return {host: min(c, key=lambda u: (-c[u], u)) for host, c in count.items()}


def _how(hcas: list[Hca], placed: list[str], keys: Mapping[str, Mapping[str, str]]) -> str:
    kinds = {hca.kind for hca in hcas if hca.label is not None}
    word = "device" if kinds <= {DEVICE} else "port label"
    if not placed:
        return f"by the {word} each HCA's description names"
    unknown = sum(1 for hca in hcas if hca.label is None)
    keyed = [leaf for leaf in placed if keys.get(leaf)]
    if unknown and not keyed:
        return f"by {POSITION}, as {unknown} of {len(hcas)} HCAs name no {word} in their description"
    parts = []
    if keyed:
        alone = sorted({_KIND_NAMES[kind] for leaf in keyed for kind in keys[leaf]})
        parts.append(f"the {counted(len(keyed), 'leaf', 'leaves')} labelled {' or '.join(alone)} (no leaf carries "
                     "both kinds of label)")
    if len(placed) > len(keyed):
        parts.append(f"{counted(len(placed) - len(keyed), 'leaf', 'leaves')} whose HCAs name no label or disagree")
    return f"by the port label each HCA's description names, and by {POSITION} for {' and '.join(parts)}"


def _where(hca: Hca) -> str:
    return f"{hca.host} {hca.label} port {hca.port} is on {hca.leaf} port {hca.leaf_port}"


def _off_rail(ordered: list[Hca], rails: list[_Rail], unit_of: Mapping[str, int],
              home: Mapping[str, int]) -> list[str]:
    """Each HCA (``ordered``: by node, label and port) whose label is not its leaf's rail's: the cable's ends, and
    the leaf its label's rail has in its node's unit. Two HCAs of a node each on the other's leaf are crossed
    cables."""
    rail_of = _rail_of(rails)
    off: list[tuple[Hca, _Rail, _Rail | None, str | None]] = []
    for hca in ordered:
        rail = rail_of.get(hca.leaf)
        if hca.label is None or rail is None or hca.kind not in rail.labels or rail.labels[hca.kind] == hca.label:
            continue
        own = next((r for r in rails if r.labels.get(hca.kind) == hca.label), None)
        off.append((hca, rail, own, own.leaves.get(home.get(hca.host, unit_of[hca.leaf])) if own else None))
    out = []
    for hca, rail, own, belongs in off:
        line = f"{_where(hca)}, {rail.name}'s leaf ({rail.labels[hca.kind]}); "
        if own is None:
            line += f"no rail carries {hca.label}"
        elif belongs is None:
            line += f"{own.name} ({hca.label}) has no leaf in its unit"
        else:
            line += f"it belongs on {belongs} ({own.name})"
        crossed = next((other for other, _, _, there in off
                        if other.host == hca.host and other is not hca and other.leaf == belongs
                        and there == hca.leaf), None)
        if crossed is not None:
            line += f": crossed with {crossed.label}, on {crossed.leaf} port {crossed.leaf_port}"
        else:
            line += ": a cable on another rail's leaf"
        out.append(line)
    return out


def _off_unit(ordered: list[Hca], rails: list[_Rail], unit_of: Mapping[str, int],
              home: Mapping[str, int]) -> list[str]:
    """Each HCA (``ordered``: by node, label and port) on its own rail's leaf, but of another unit than the one most
    of its node's HCAs hang off: the cable's ends, and the rail's leaf in the node's unit."""
    rail_of = _rail_of(rails)
    out = []
    for hca in ordered:
        rail = rail_of.get(hca.leaf)
        if (hca.label is None or rail is None or rail.labels.get(hca.kind or "") != hca.label
                or hca.host not in home or unit_of[hca.leaf] == home[hca.host]):
            continue
        line = f"{_where(hca)}, {rail.name}'s leaf ({hca.label}) of another unit; "
        belongs = rail.leaves.get(home[hca.host])
        if belongs is None:
            line += f"{rail.name} has no leaf in its unit"
        else:
            line += f"it belongs on {belongs} ({rail.name})"
        out.append(line + ": a cable on another unit's leaf")
    return out


def _short(units: list[list[str]], rails: list[_Rail], home: Mapping[str, int], placed: list[str],
           version: SlurmVersion) -> list[str]:
    """Each unit with fewer leaves than the most any has, with the rails it lacks and the HCAs those would carry."""
    width = max(len(unit) for unit in units)
    out = []
    for index, unit in enumerate(units):
        if len(unit) == width:
            continue
        nodes = hostlists.compress(sorted((h for h, u in home.items() if u == index), key=hostlists.natural_key),
                                   version)
        leaves = hostlists.compress(unit, version)
        lacks = [r for r in rails if index not in r.leaves]
        line = f"the scalable unit of {nodes} has {len(unit)} leaves ({leaves}) where another has {width}"
        if set(unit) & set(placed):
            line += (f": its HCAs name no port label, so by {POSITION} it lacks "
                     f"{', '.join(r.name for r in lacks)}; a guess, as is the rail of each of its leaves after the gap")
        else:
            said = []
            for rail in lacks:
                label = next((rail.labels[k] for k in KINDS if k in rail.labels), None)
                said.append(f"{rail.name} ({label}): {nodes} {label} on no leaf" if label else rail.name)
            line += f": it lacks {'; '.join(said)}"
        out.append(line)
    return out
