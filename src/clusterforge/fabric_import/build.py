"""From a parsed dump to the inventory's ``Fabric``, with a report of everything left out and why.

The result never silently drops anything: every CA is a node's HCA, a SHARP aggregation node (counted), an HCA of a
host that is no compute node (listed apart, with the reason), or listed as unnamed with its GUIDs and the switch
port it hangs on; every fabric other than the compute one is listed too.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from .. import hostlists
from ..model import Cluster, Fabric, Leaf, Spine
from ..model.rules.check import MAX_NAME, NAME
from ..versions import SlurmVersion, v
from ..words import counted
from .apart import DEFAULT_NAME, Apart, by_name, guess, strangers
from .compare import differences, inventory_nodes
from .hosts import Naming, name_hcas
from .parse import DumpError, IbNode, parse_dump
from .rails import Hca, Rails, infer_rails
from .tiers import Component, Tiers, components, compute_fabric, tiers

TIER_NAMES = (("leaf", "leaves"), ("spine", "spines"), ("core", "cores"))  # one, several


@dataclass
class Imported:
    fabric: Fabric | None  # None when the dump holds no HCA of a compute node
    version: SlurmVersion  # the release the hostlists are written for
    summary: list[str] = field(default_factory=list)  # what was found and left out: informative, one line each
    # The import is not clean while any of these three is not empty: one line per HCA, node, HCA.
    unnamed: list[str] = field(default_factory=list)  # HCAs of the compute fabric no host is known for
    miscabled: list[str] = field(default_factory=list)  # nodes whose leaves are not their peers'
    off_rail: list[str] = field(default_factory=list)  # HCAs on another rail's leaf: both cable ends, both leaves
    off_unit: list[str] = field(default_factory=list)  # HCAs on their rail's leaf of another unit: the same
    short_units: list[str] = field(default_factory=list)  # scalable units with fewer leaves than another, and why
    elsewhere: list[str] = field(default_factory=list)  # unnamed HCAs on other fabrics: informative
    conflicts: list[str] = field(default_factory=list)  # the GUID file and a description disagree: the file wins
    apart: list[Apart] = field(default_factory=list)  # hosts on the compute fabric that are no compute node
    rails_how: str = ""  # how the rails were inferred
    rail_labels: dict[str, tuple[str, ...]] = field(default_factory=dict)  # rail name -> its port labels
    differences: list[str] = field(default_factory=list)  # against the inventory
    # Against an inventory, whose nodes decide: a host apart is then a difference too, unless its name says it is a
    # UFM or management server (every fabric has one, and no inventory lists it as a node).
    compared: bool = False

    @property
    def problems(self) -> list[str]:
        return self.unnamed + self.miscabled + self.cabling

    @property
    def cabling(self) -> list[str]:
        """What a cabling ticket is written from: each cable on another rail's leaf or another unit's, each unit
        short of a leaf."""
        return self.off_rail + self.off_unit + self.short_units

    @property
    def unnamed_on_compute(self) -> int:
        return len(self.unnamed)

    @property
    def outsiders(self) -> list[Apart]:
        """The hosts apart that count against the inventory compared with: all but UFM and management servers."""
        return [a for a in self.apart if by_name(a.host) is None] if self.compared else []

    @property
    def clean(self) -> bool:
        return self.fabric is not None and not self.problems and not self.differences and not self.outsiders


def import_fabric(text: str, source: str = "the dump", guids: Mapping[str, str] | None = None,
                  cluster: Cluster | None = None) -> Imported:
    nodes = parse_dump(text, source)
    compute = inventory_nodes(cluster) if cluster is not None else None
    written = cluster.fabric if cluster is not None else None
    site = re.compile(written.port_label) if written is not None and written.port_label else None
    naming = name_hcas(nodes, guids or {}, compute, site)
    # Hostlists for the inventory's release; without one in the oldest grammar, valid for every release.
    version = SlurmVersion.parse(cluster.slurm_version) if cluster is not None else v("22.05")
    parts = components(nodes)
    # A UFM server alone on a fabric makes it no compute fabric; its name is all there is to go by before tiers.
    candidates = {ca: host for ca, host in naming.host_of.items() if compute is not None or by_name(host) is None}
    chosen, others = compute_fabric(parts, candidates, compute)
    result = Imported(None, version, compared=cluster is not None)
    if naming.sharp:
        result.summary.append(f"skipped {len(naming.sharp)} SHARP aggregation node"
                              f"{'s' if len(naming.sharp) != 1 else ''}")
    result.conflicts = [f"GUID file: {c} (the file wins)" for c in naming.conflicts]
    if naming.by_guid_file:
        result.summary.append(f"{naming.by_guid_file} HCA(s) named through the GUID file")
    in_compute = set().union(*(p.cas for p in chosen), *(p.switches for p in chosen)) if chosen else set()
    apart = _apart(naming, in_compute, compute)
    host_of = {ca: host for ca, host in naming.host_of.items() if host not in apart}
    found = tiers(nodes, chosen, host_of, compute) if chosen else Tiers({}, {}, {}, [])
    names = _switch_names(nodes, found.level)
    result.apart = [Apart(host, reason, tuple(_located(nodes[ca], nodes, names)[1] for ca in cas))
                    for host, (reason, cas) in sorted(apart.items(), key=lambda a: hostlists.natural_key(a[0]))]
    located = sorted(((_located(ca, nodes, names), ca) for ca in naming.unnamed), key=lambda pair: pair[0][0])
    for (_, where), ca in located:
        on = "the compute fabric" if ca.id in in_compute else "another fabric"
        ports = ", ".join(f"0x{g}" for g in sorted(ca.port_guids)) or "-"
        line = (f"unnamed HCA on {on}: node GUID 0x{ca.guid}, port GUID {ports}, description "
                f"{ca.description!r}, on {where}")
        if ca.id in in_compute:
            result.unnamed.append(line + " (name it on the host with rdma-ndd, or list it with --guids)")
        else:
            result.elsewhere.append(line)
    for part in others:
        result.summary.append(_other_fabric(part, naming.host_of, compute))
    if not chosen:
        what = "of the inventory's nodes" if compute is not None else "that names its host"
        # A count and the first, not every one: a dump with no host named may hold hundreds.
        unnamed = []
        if located:
            first = result.elsewhere[0].split(": ", 1)[1]
            unnamed.append(f"{len(located)} unnamed HCA{'s' if len(located) != 1 else ''} (the first: {first}; "
                           "name them with --guids)")
        seen = "; ".join(unnamed + result.summary) or "nothing else"
        raise DumpError(f"{source}: no HCA {what} is in the dump, so there is no compute fabric to import "
                        f"(found: {seen})")
    rails = _rails(found, names, host_of, naming.label_of, nodes, version)
    result.fabric = _fabric(found, names, version, len(chosen) > 1, rails,
                            written.port_label if written is not None else None)
    result.rails_how, result.rail_labels = rails.how, rails.labels
    result.off_rail, result.off_unit, result.short_units = rails.off_rail, rails.off_unit, rails.short
    result.summary[:0] = [_found(found, chosen, host_of), *_rail_lines(result.fabric, rails)]
    result.miscabled = _miscabled(found, names, version)
    if cluster is not None and compute is not None:
        fabric_hosts = {h for hosts in found.hosts_on.values() for h in hosts}
        result.differences = differences(cluster, result.fabric, compute - fabric_hosts, version)
    return result


def _apart(naming: Naming, in_compute: set[str], compute: Collection[str] | None) -> dict[str, tuple[str, list[str]]]:
    """host -> (why it is no compute node, its HCAs on the compute fabric)."""
    hcas_of: dict[str, list[str]] = {}
    for ca, host in naming.host_of.items():
        if ca in in_compute:
            hcas_of.setdefault(host, []).append(ca)
    why = guess(hcas_of) if compute is None else strangers(hcas_of, set(compute))
    out = {host: (reason, sorted(hcas_of[host])) for host, reason in why.items()}
    for ca, name in naming.defaulted.items():
        if ca in in_compute:
            out.setdefault(name, (DEFAULT_NAME, []))[1].append(ca)
    return out


def _rails(found: Tiers, names: Mapping[str, str], host_of: Mapping[str, str],
           label_of: Mapping[str, tuple[str, str]], nodes: Mapping[str, IbNode], version: SlurmVersion) -> Rails:
    hcas = []
    for ca, host in host_of.items():
        kind, label = label_of.get(ca, (None, None))
        hcas += [Hca(host, names[link.peer], label, kind, port=link.port, leaf_port=link.peer_port)
                 for link in nodes[ca].links.values()
                 if link.peer in found.hosts_on and host in found.hosts_on[link.peer]]
    return infer_rails(hcas, version)


def _located(ca: IbNode, nodes: Mapping[str, IbNode], names: Mapping[str, str]) -> tuple[tuple, str]:
    """(a sort key, "leaf03 port 4"): where an HCA hangs."""
    ends = [(names.get(k.peer) or _plain_name(nodes[k.peer]), k.peer_port) for k in ca.links.values()]
    key = tuple((hostlists.natural_key(name), port) for name, port in ends)
    return key, ", ".join(f"{name} port {port}" for name, port in ends) or "no link"


def _plain_name(node: IbNode) -> str:
    name = node.description.split(";", 1)[-1].split(":", 1)[0].strip()
    if NAME.match(name) and len(name) <= MAX_NAME and "mellanox" not in name.lower() and "quantum" not in name.lower():
        return name
    return f"ibsw-{node.guid}"


def _switch_names(nodes: Mapping[str, IbNode], level: Mapping[str, int]) -> dict[str, str]:
    """A switch's Slurm name from its description (`MF0;A09-P1-IBLEAF-04-04:MQM9701/U1` -> A09-P1-IBLEAF-04-04,
    as NVIDIA's topograph reads it); from its GUID where the description is a vendor default, not a name Slurm
    takes, or shared with another switch."""
    names = {switch_id: _plain_name(nodes[switch_id]) for switch_id in level}
    counts = Counter(names.values())
    return {s: (n if counts[n] == 1 else f"ibsw-{nodes[s].guid}") for s, n in names.items()}


def _rail_lines(fabric: Fabric, rails: Rails) -> list[str]:
    if not fabric.rails:
        return []
    lines = [f"{counted(len(fabric.rails), 'rail')}, {rails.how}:"]
    for rail in fabric.rails:
        others = [label for label in rails.labels.get(rail.name, ()) if label != rail.hca]
        if rail.hca is not None:
            said = rail.hca + (f" (labelled {', '.join(others)})" if others else "")
        else:
            said = f"{', '.join(others)} (device not known)" if others else "HCA not known"
        lines.append(f"  {rail.name} = {said} on {rail.leaves}")
    return lines


def _fabric(found: Tiers, names: Mapping[str, str], version: SlurmVersion, islands: bool, rails: Rails,
            port_label: str | None) -> Fabric:
    leaves = sorted((names[s] for s in found.hosts_on), key=hostlists.natural_key)
    by_name = {names[s]: s for s in found.level}
    kept = set(leaves)
    spines = []
    for switch_id in sorted(found.children, key=lambda s: (found.level[s], hostlists.natural_key(names[s]))):
        below = [names[c] for c in found.children[switch_id] if names[c] in kept]
        if below:  # a spine only above switches without compute nodes has no place in Slurm's tree
            kept.add(names[switch_id])
            spines.append(Spine(names[switch_id], switches=hostlists.compress(
                sorted(below, key=hostlists.natural_key), version)))
    hosts_of = {name: found.hosts_on[by_name[name]] for name in leaves}
    leaf_count = Counter(h for hosts in hosts_of.values() for h in hosts)
    return Fabric(
        leaves=tuple(Leaf(name, nodes=hostlists.compress(sorted(hosts_of[name], key=hostlists.natural_key), version))
                     for name in leaves),
        spines=tuple(spines),
        rails=rails.rails,
        port_label=port_label,
        rail_optimized=any(count > 1 for count in leaf_count.values()),
        disconnected=islands or not _one_root(found, names, kept),
    )


def _one_root(found: Tiers, names: Mapping[str, str], kept: set[str]) -> bool:
    """Whether some switch is above every compute node (topology/tree places a job below one switch)."""
    everyone = set().union(*found.hosts_on.values())
    reach: dict[str, set[str]] = {s: set(h) for s, h in found.hosts_on.items()}
    for switch_id in sorted(found.children, key=lambda s: found.level[s]):
        reach[switch_id] = set().union(*(reach.get(c, set()) for c in found.children[switch_id]))
    return any(reach[s] == everyone for s in reach if names[s] in kept)


def _tier_count(tier: int, count: int) -> str:
    one, several = TIER_NAMES[tier] if tier < len(TIER_NAMES) else (f"tier-{tier} switch", f"tier-{tier} switches")
    return counted(count, one, several)


def _found(found: Tiers, chosen: list[Component], host_of: Mapping[str, str]) -> str:
    per_tier = Counter(found.level.values())
    tiers_text = ", ".join(_tier_count(t, per_tier[t]) for t in sorted(per_tier))
    hosts = set().union(*found.hosts_on.values())
    hcas = sum(1 for p in chosen for c in p.cas if host_of.get(c) in hosts)
    islands = f" in {len(chosen)} disconnected parts" if len(chosen) > 1 else ""
    return (f"compute fabric{islands}: {tiers_text}; {counted(len(hosts), 'node')} with "
            f"{counted(hcas, 'HCA')}")


def _other_fabric(part: Component, host_of: Mapping[str, str], compute: Collection[str] | None) -> str:
    hosts = sorted({host_of[c] for c in part.cas if c in host_of}, key=hostlists.natural_key)
    sample = ", ".join(hosts[:3]) + (", ..." if len(hosts) > 3 else "") if hosts else "no named host"
    ours = [h for h in hosts if compute is None or h in compute]
    why = ("its nodes are on the compute fabric through more HCAs" if ours else
           "none of its hosts is a node of the inventory" if hosts else "no HCA on it names a host")
    return (f"another fabric, left out ({why}): {counted(len(part.switches), 'switch', 'switches')}, "
            f"{counted(len(part.cas), 'CA')} ({sample})")


def _miscabled(found: Tiers, names: Mapping[str, str], version: SlurmVersion) -> list[str]:
    """Nodes sharing a leaf but not all their leaves: on a rail-optimized fabric a rail cabled to another scalable
    unit's leaf, or a link down; Slurm would split the unit. Reported per node, against its peers' leaves."""
    leaves_of: dict[str, set[str]] = {}
    for switch_id, hosts in found.hosts_on.items():
        for host in hosts:
            leaves_of.setdefault(host, set()).add(names[switch_id])
    if not any(len(leaves) > 1 for leaves in leaves_of.values()):
        return []
    ids = {name: switch_id for switch_id, name in names.items()}
    out = []
    for host in sorted(leaves_of, key=hostlists.natural_key):
        peers = Counter(frozenset(leaves_of[p]) for s in leaves_of[host] for p in found.hosts_on[ids[s]])
        usual, _ = peers.most_common(1)[0]
        if frozenset(leaves_of[host]) != usual:
            mine = hostlists.compress(sorted(leaves_of[host], key=hostlists.natural_key), version)
            theirs = hostlists.compress(sorted(usual, key=hostlists.natural_key), version)
            out.append(f"{host} is on leaves {mine}, the nodes it shares a leaf with mostly on {theirs}: a rail "
                       "cabled elsewhere or a link down")
    return out

