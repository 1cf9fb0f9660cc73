"""The rails of a rail-optimized fabric: which leaves the same HCA of every node is cabled to.

A scalable unit is a set of leaves that carry the same nodes (each node hangs off every one of them, once per
rail). Where every leaf's HCAs say their device (`dgx-001 mlx5_3`), a rail is the leaves that one device hangs off,
in the devices' order. Where they do not (the HCAs were named through a GUID file, or as `HCA-1`), a rail is the
i-th leaf of each unit in name order, as SuperPODs are cabled and named; the devices known on a rail's leaves still
give it its HCA. Either way an HCA whose device differs from its rail's is reported: a cable on the wrong leaf.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .. import hostlists
from ..model import Rail
from ..versions import SlurmVersion


@dataclass
class Rails:
    rails: tuple[Rail, ...] = ()
    how: str = ""  # how they were inferred, for the summary
    off_rail: list[str] = field(default_factory=list)  # one line per HCA on another rail's leaf


@dataclass(frozen=True)
class Hca:
    host: str
    leaf: str  # the leaf's Slurm name
    device: str | None


def infer_rails(hcas: Iterable[Hca], version: SlurmVersion) -> Rails:
    hcas = list(hcas)
    units = _units(hcas)
    if not units or max(len(unit) for unit in units) < 2:
        return Rails()
    seen: dict[str, Counter[str]] = {leaf: Counter() for unit in units for leaf in unit}
    for hca in hcas:
        if hca.device is not None and hca.leaf in seen:
            seen[hca.leaf][hca.device] += 1
    device_of = {leaf: _most_common(count) for leaf, count in seen.items()}
    by_device = all(device_of[leaf] is not None for leaf in seen) and all(
        len({device_of[leaf] for leaf in unit}) == len(unit) for unit in units)
    if by_device:
        devices = sorted({d for d in device_of.values() if d is not None}, key=hostlists.natural_key)
        groups = [([leaf for unit in units for leaf in unit if device_of[leaf] == d], d) for d in devices]
        how = "by the device each HCA's description names"
    else:
        width = max(len(unit) for unit in units)
        places = [[unit[i] for unit in units if i < len(unit)] for i in range(width)]
        groups = [(leaves, _one_device(leaves, device_of)) for leaves in places]
        groups = _drop_shared(groups)
        unknown = sum(1 for hca in hcas if hca.device is None)
        how = (f"by each leaf's place in its scalable unit (the leaves with the same nodes, in name order), as "
               f"{unknown} of {len(hcas)} HCAs name no device in their description")
    rails = tuple(Rail(f"rail{i}", hca=device, leaves=hostlists.compress(leaves, version))
                  for i, (leaves, device) in enumerate(groups, 1))
    return Rails(rails, how, _off_rail(hcas, groups))


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


def _most_common(count: Counter[str]) -> str | None:
    return min(count, key=lambda d: (-count[d], hostlists.natural_key(d))) if count else None


def _one_device(leaves: list[str], device_of: Mapping[str, str | None]) -> str | None:
    """The device every leaf of a rail that knows one agrees on, or None."""
    known = {device_of[leaf] for leaf in leaves} - {None}
    return known.pop() if len(known) == 1 else None


def _drop_shared(groups: list[tuple[list[str], str | None]]) -> list[tuple[list[str], str | None]]:
    """A device two rails claim names neither: the name order and the cabling disagree, and the HCAs on the
    wrong leaves are reported."""
    claims = Counter(device for _, device in groups if device is not None)
    return [(leaves, device if device is None or claims[device] == 1 else None) for leaves, device in groups]


def _off_rail(hcas: list[Hca], groups: list[tuple[list[str], str | None]]) -> list[str]:
    rail_of = {leaf: (f"rail{i}", device) for i, (leaves, device) in enumerate(groups, 1) for leaf in leaves}
    out = []
    for hca in sorted(hcas, key=lambda h: (hostlists.natural_key(h.host), hostlists.natural_key(h.device or ""))):
        rail, device = rail_of.get(hca.leaf, (None, None))
        if hca.device is not None and device is not None and hca.device != device:
            out.append(f"{hca.host} {hca.device} hangs off {hca.leaf}, a leaf of {rail} ({device}): a cable on "
                       "another rail's leaf")
    return out
