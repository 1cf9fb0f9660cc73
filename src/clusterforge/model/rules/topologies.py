"""Rules for the topologies of topology.yaml (Slurm 25.05+): the inventory's block topologies, and the one each
partition names. What slurmctld refuses (slurm-25.05, src/plugins/topology/block/block_record.c,
src/slurmctld/read_config.c):

- a topology name given twice, a block name given twice in one topology ("Block (%s) has already been defined");
- block sizes that are not the base times a power of two ("Invalid BlockSizes value", fatal from 26.05.3);
- a partition whose Topology= names no topology ("Invalid partition topology": slurmctld does not start).

A node in two blocks of one topology is taken silently, and placed by the first block listing it: refused here, as
the fabric's blocks are (blocks.py). Before 25.05 there is no topology.yaml, and PartitionName has no Topology=.

A profile's NVLink domain (``Profile(nvlink_domain=72)``) is a block topology too, named after the profile, its
blocks cut from the profile's Nodes entries. Its release, its name and its blocks' names meet the rules above; the
others hold by construction: Slurm's default block sizes written out, every block one domain's nodes (the base), and
a node in two of its blocks only where the node is written twice, which is refused as such (hosts.node_identity).
Block names are hostlist-friendly (``gb200-nvlink1``): Slurm joins neighbouring blocks' names with commas into an
aggregate's name and reads that as a hostlist ("Invalid BlockName").
"""

from __future__ import annotations

from collections.abc import Mapping

from ...versions import PARTITION_TOPOLOGY, TOPOLOGY_YAML
from ..fabric import Block, BlockTopology
from ..hardware import Profile
from ..nodes import Nodes
from ..resolved import Switch
from .blocks import shared_nodes, size_problems
from .check import MAX_NAME, Check
from .hosts import Expanded


def topologies(check: Check, known_nodes: Mapping[str, Nodes]) -> list[tuple[BlockTopology, tuple[Switch, ...]]]:
    """The inventory's block topologies, each with its blocks' nodes; one with problems is left out (they are
    recorded)."""
    specs = check.cluster.topologies
    if specs and check.version < TOPOLOGY_YAML:
        for spec in specs:
            check.add(f"topologies[{spec.name}]", f"Slurm {check.version} has one topology, topology.conf's: "
                                                  "several need topology.yaml (Slurm 25.05+); use Fabric(plugin=) "
                                                  "for one", spec)
        return []
    fabric = check.cluster.fabric
    named = [(fabric.topology, fabric, "fabric.topology")] if fabric is not None else []
    named += [(spec.name, spec, f"topologies[{spec.name}]") for spec in specs]
    check.duplicates(named, "a topology of this name is already defined ({at})")
    for name, entry, where in named:
        check.name(where, name, entry, "topology")
    out = []
    for spec in specs:
        before = len(check.problems)
        blocks = _blocks(check, spec, known_nodes)
        if len(check.problems) == before:
            out.append((spec, blocks))
    return out


def _blocks(check: Check, spec: BlockTopology, known_nodes: Mapping[str, Nodes]) -> tuple[Switch, ...]:
    where = f"topologies[{spec.name}]"
    if not spec.blocks:
        check.add(where, "has no blocks: slurmctld refuses a block topology without them", spec)
    for message in size_problems(spec.block_sizes):
        check.add(f"{where}.block_sizes", message, spec, "block_sizes")
    check.duplicates(((b.name, b, f"{where}.blocks[{b.name}]") for b in spec.blocks),
                     "a block of this name is already in this topology ({at})")
    blocks = tuple(Switch(block.name, nodes=_members(check, f"{where}.blocks[{block.name}]", block, known_nodes))
                   for block in spec.blocks)
    entries = {block.name: block for block in spec.blocks}
    for name, first, nodes in shared_nodes(blocks):
        check.add(f"{where}.blocks[{name}]", f"{check.sample(nodes)} {'is' if len(nodes) == 1 else 'are'} also in "
                                             f"block {first}: each node belongs to one block of a topology",
                  entries[name])
    return blocks


def _members(check: Check, where: str, block: Block, known_nodes: Mapping[str, Nodes]) -> tuple[str, ...]:
    check.name(where, block.name, block, "block")
    listed = check.expand(f"{where}.nodes", block.nodes, block) or []
    unknown = [n for n in listed if n not in known_nodes and not check.node_left_out(n)]
    if unknown:
        check.unknown_nodes(f"{where}.nodes", unknown, known_nodes, block)
    return tuple(dict.fromkeys(n for n in listed if n in known_nodes))


def partition_topologies(check: Check, names: tuple[str, ...]) -> None:
    """Each partition's Topology= names one of ``names``, on a release that has the key."""
    for part in check.cluster.partitions:
        if part.topology is None:
            continue
        where = f"partitions[{part.name}].topology"
        if check.version < PARTITION_TOPOLOGY:
            check.add(where, f"Slurm {check.version} has no Topology= on partitions (it arrived in 25.05): every "
                             "partition is placed by topology.conf's topology", part, "topology")
        elif part.topology not in names and not any(check.refers_to_left_out(f"{kind}[{part.topology}]")
                                                     for kind in ("topologies", "profiles")):
            known = ", ".join(names) or "none: the cluster has no fabric and no topologies"
            check.add(where, f"{part.topology!r} is not a topology of this cluster{check.meant(part.topology, names)}"
                             f" (its topologies: {known}); slurmctld would not start", part, "topology")


def nvlink_topologies(check: Check, profiles: Mapping[str, Profile],
                      expanded: Expanded) -> list[tuple[Profile, tuple[Switch, ...]]]:
    """The block topology of each profile with an NVLink domain, with its blocks' nodes; one with problems is left
    out (they are recorded)."""
    with_domains = [p for p in profiles.values() if p.nvlink_domain is not None]
    if with_domains and check.version < TOPOLOGY_YAML:
        for profile in with_domains:
            check.add(_where(profile), f"Slurm {check.version} has one topology, topology.conf's: a profile's NVLink "
                                       "domains are a topology of their own, which needs topology.yaml (Slurm "
                                       "25.05+); write them as the fabric's blocks (Fabric(plugin=\"block\")) "
                                       "instead", profile, "nvlink_domain")
        return []
    defined = _defined_topologies(check)
    entries = _entries_by_profile(expanded)
    out = []
    for profile in with_domains:
        before = len(check.problems)
        _named_apart(check, profile, defined)
        per_domain = _nodes_per_domain(check, profile)
        blocks = _domains(check, profile, per_domain, entries.get(profile.name, [])) if per_domain else ()
        if len(check.problems) == before:
            out.append((profile, blocks))
    return out


def _where(profile: Profile) -> str:
    return f"profiles[{profile.name}].nvlink_domain"


def _defined_topologies(check: Check) -> dict[str, str | None]:
    """The topologies the inventory names itself, the fabric's and each BlockTopology: name -> where written."""
    fabric = check.cluster.fabric
    defined = {fabric.topology: fabric.origin_of("topology")} if fabric is not None else {}
    for spec in check.cluster.topologies:
        defined.setdefault(spec.name, str(spec.origin) if spec.origin else None)
    return defined


def _named_apart(check: Check, profile: Profile, defined: Mapping[str, str | None]) -> None:
    """The topology takes the profile's name, which no other topology may have: slurmctld refuses a name twice."""
    if profile.name in defined:
        at = f"at {defined[profile.name]}" if defined[profile.name] else "earlier"
        check.add(_where(profile), f"its NVLink domains make a topology named after the profile, {profile.name!r}, "
                                   f"and a topology of this name is already defined ({at}): rename one of them",
                  profile, "nvlink_domain")


def _nodes_per_domain(check: Check, profile: Profile) -> int | None:
    """How many of the profile's nodes one NVLink domain spans, or None with the problem recorded."""
    domain = profile.nvlink_domain
    assert domain is not None
    if domain <= 0:
        check.add(_where(profile), f"must be a positive number of GPUs, not {domain}", profile, "nvlink_domain")
        return None
    if profile.gpus is None:
        check.add(_where(profile), f"an NVLink domain of {domain} GPUs needs the profile's GPUs: set gpus=, or "
                                   "remove nvlink_domain", profile, "nvlink_domain")
        return None
    count = profile.gpus.count
    if count <= 0:
        return None  # reported at gpus.count
    if domain % count:
        check.add(_where(profile), f"{domain} GPUs is not a multiple of the profile's {count} GPUs a node "
                                   "(gpus.count): a domain is whole nodes, such as 72 GPUs on 18 nodes of 4",
                  profile, "nvlink_domain")
        return None
    return domain // count


Entries = dict[str, list[tuple[Nodes, list[str]]]]  # profile name -> each of its Nodes entries with its names


def _entries_by_profile(expanded: Expanded) -> Entries:
    """Each profile's Nodes entries in inventory order, each with its names in hostlist order."""
    by_entry: dict[int, tuple[Nodes, list[str]]] = {}
    for entry, name, _ in expanded:
        by_entry.setdefault(id(entry), (entry, []))[1].append(name)
    out: Entries = {}
    for entry, names in by_entry.values():
        out.setdefault(entry.profile, []).append((entry, names))
    return out


def _domains(check: Check, profile: Profile, per_domain: int,
             entries: list[tuple[Nodes, list[str]]]) -> tuple[Switch, ...]:
    """The profile's NVLink domains as blocks, named ``<profile>-nvlink<N>`` with N counted from 1: each Nodes entry
    cut into runs of ``per_domain`` nodes. A domain never spans two entries: one entry is one rack, or a row of
    them, as the admin wrote it, and nothing says the next entry's first node is cabled to the same NVLink
    switches."""
    blocks: list[Switch] = []
    for entry, names in entries:
        if len(names) % per_domain:
            check.add(f"nodes[{entry.names}]", f"{len(names)} nodes are not whole NVLink domains of profile "
                                               f"{profile.name}, {per_domain} nodes each ({profile.nvlink_domain} "
                                               f"GPUs, {profile.gpu_count} a node): a domain is a rack's worth of "
                                               "nodes; write each rack as a Nodes entry of whole domains, or write "
                                               "the blocks yourself with BlockTopology", entry)
            continue
        for start in range(0, len(names), per_domain):
            blocks.append(Switch(f"{profile.name}-nvlink{len(blocks) + 1}",
                                 nodes=tuple(names[start:start + per_domain])))
    if not entries and not (check.lacks("nodes") or check.nodes_left_out()):
        check.add(_where(profile), "no Nodes entry has this profile, so its NVLink topology would have no blocks: "
                                   "slurmctld refuses a block topology without them", profile, "nvlink_domain")
    elif blocks and len(longest := blocks[-1].name) > MAX_NAME:
        check.add(_where(profile), f"{longest!r}, the name of its last NVLink block, is longer than {MAX_NAME} "
                                   "characters: shorten the profile's name", profile, "nvlink_domain")
    return tuple(blocks)
