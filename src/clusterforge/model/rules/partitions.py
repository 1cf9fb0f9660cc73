"""Rules for partitions: members, limits, QOS, the default partition, preemption the tiers can express, and the
memory and CPUs a job gets when it asks for none."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ... import hostlists
from ..base import closest
from ..hardware import Profile
from ..nodes import Nodes
from ..partitions import Partition
from .accounting import known_qos, qos_names
from .accounts import ROOT
from .check import RESERVED_PARTITION_NAMES, Check
from .times import slurm_time_seconds

Members = list[tuple[Partition, tuple[str, ...]]]


def partitions(check: Check, known_nodes: Mapping[str, Nodes],
               profiles: Mapping[str, Profile]) -> tuple[Members, set[str]]:
    """Each partition with its member nodes in natural order, and the partitions another one preempts."""
    parts = check.cluster.partitions
    qos = qos_names(check.cluster.accounting)
    node_profile = {name: entry.profile for name, entry in known_nodes.items()}
    check.duplicates(((p.name, p, f"partitions[{p.name}]") for p in parts),
                     "a partition of this name is already defined ({at})")
    out: Members = []
    for part in parts:
        where = f"partitions[{part.name}]"
        check.name(where, part.name, part, "partition", RESERVED_PARTITION_NAMES)
        members: list[str] = []
        if part.nodes is not None:
            listed = check.expand(f"{where}.nodes", part.nodes, part) or []
            unknown = [n for n in listed if n not in known_nodes and not check.node_left_out(n)]
            if unknown:
                check.unknown_nodes(f"{where}.nodes", unknown, known_nodes, part)
            members.extend(n for n in listed if n in known_nodes)
        for profile in part.profiles:
            if check.refers_to_left_out(f"profiles[{profile}]"):
                continue
            if profile not in profiles:
                check.add(f"{where}.profiles", f"{profile!r} is not a profile of this cluster"
                                               f"{check.meant(profile, profiles)}", part)
            else:
                members.extend(n for n, p in node_profile.items() if p == profile)
        members = sorted(dict.fromkeys(members), key=hostlists.natural_key)
        if not members:
            if part.nodes is None and not part.profiles:
                check.add(where, "has no nodes: give nodes= or profiles=", part)
            elif not check.found_at(where) and not _names_left_out(check, part) and not (
                    part.profiles and _profile_unknown(check)):
                check.add(where, "has no nodes", part)
        _limits(check, where, part, qos)
        member_profiles = dict.fromkeys(node_profile[n] for n in members)
        _job_defaults(check, where, part, [profiles[p] for p in member_profiles if p in profiles])
        out.append((part, tuple(members)))
    _the_default(check, parts)
    _in_no_partition(check, known_nodes, profiles, out)
    return out, _preemption(check, parts, {part.name: set(members) for part, members in out})


def _in_no_partition(check: Check, known_nodes: Mapping[str, Nodes], profiles: Mapping[str, Profile],
                     members: Members) -> None:
    """Every node is in a partition: Slurm takes one in none, but never runs a job on it. Not judged where the
    partitions' members are not known for a mistake already reported (a partition left out, one naming an unknown
    node or profile, one given no members at all), nor for a node whose profile is unknown or left out: that
    mistake is the one problem."""
    parts = check.cluster.partitions
    if not parts or check.lacks("partitions") or any(
            check.found_at(f"partitions[{p.name}].nodes") or check.found_at(f"partitions[{p.name}].profiles")
            or (p.nodes is None and not p.profiles) for p in parts):
        return
    taken = {name for _, names in members for name in names}
    left: dict[int, tuple[Nodes, list[str]]] = {}
    for name, entry in known_nodes.items():
        if name not in taken and entry.profile in profiles:
            left.setdefault(id(entry), (entry, []))[1].append(name)
    for entry, names in left.values():
        them = "it" if len(names) == 1 else "them"
        check.add(f"nodes[{entry.names}]", f"{check.sample(names)} {'is' if len(names) == 1 else 'are'} in no "
                  f"partition: Slurm would never run a job on {them}; add {them} to a partition's nodes= or "
                  "profiles=", entry)


def _profile_unknown(check: Check) -> bool:
    """Whether a node entry names a profile that is not one (reported): its nodes may be the ones a partition of
    the profile meant was to take."""
    return any(p.where.startswith("nodes[") and p.where.endswith("].profile") for p in check.problems)


def _names_left_out(check: Check, part: Partition) -> bool:
    """Whether the partition's members may have been given only by entries left out for a mistake: nodes it names,
    profiles it names, or node entries (of any profile) whose names are not known."""
    listed = hostlists.expand(part.nodes) if part.nodes is not None and not check.found_at(
        f"partitions[{part.name}].nodes") else []
    return (any(check.node_left_out(n) for n in listed)
            or (bool(part.profiles) and (check.lacks("nodes") or check.nodes_left_out()))
            or any(check.refers_to_left_out(f"profiles[{p}]") for p in part.profiles))


def _limits(check: Check, where: str, part: Partition, qos: set[str]) -> None:
    for field in ("max_time", "default_time"):
        value = getattr(part, field)
        if value is not None and slurm_time_seconds(value) is None:
            check.add(f"{where}.{field}", f"{value!r} is not a Slurm time (minutes, 'HH:MM:SS', 'D-HH:MM:SS' or "
                                          "'UNLIMITED')", part)
    if part.max_time and part.default_time:
        longest, default = slurm_time_seconds(part.max_time), slurm_time_seconds(part.default_time)
        if longest is not None and default is not None and default > longest:
            check.add(f"{where}.default_time", f"{part.default_time} is longer than max_time {part.max_time}", part)
    for field in ("max_nodes", "def_mem_per_cpu", "def_mem_per_gpu", "def_cpu_per_gpu"):
        check.positive(f"{where}.{field}", getattr(part, field), part)
    if part.qos is not None:
        known_qos(check, f"{where}.qos", part.qos, qos, part, "qos")
    for name in part.allow_qos:
        known_qos(check, f"{where}.allow_qos", name, qos, part, "allow_qos")
    _allowed_accounts(check, where, part)


def _allowed_accounts(check: Check, where: str, part: Partition) -> None:
    """Where the inventory manages the accounts, a partition may only allow one of them: a misspelt name would lock
    that account's users out of the partition without a word."""
    declared = {a.name.lower(): a.name for a in check.cluster.accounting.accounts}
    if not declared:
        return
    for name in part.allow_accounts:
        if name.lower() not in declared and name.lower() != ROOT:
            near = closest(name.lower(), declared)
            hint = f" (did you mean {declared[near]!r}?)" if near is not None else ""
            check.add(f"{where}.allow_accounts", f"{name!r} is not an account of accounting.accounts{hint}", part,
                      "allow_accounts")


def _job_defaults(check: Check, where: str, part: Partition, members: Sequence[Profile]) -> None:
    """A default that gives a one-CPU or one-GPU job a whole node's memory or CPUs leaves the rest of the node idle
    (a job is never given more than the node has, so it takes the whole node); one that asks more than the node has
    for a job of all its GPUs keeps such a job pending for ever."""
    for profile in members:
        if part.def_mem_per_cpu is not None and profile.cpus > 1 and part.def_mem_per_cpu >= profile.real_memory:
            check.add(f"{where}.def_mem_per_cpu", f"{part.def_mem_per_cpu} MiB per CPU hands a one-CPU job all "
                                                  f"{profile.real_memory} MiB of a {profile.name} node by default",
                      part)
        gpus = profile.gpu_count
        for field, per_gpu, has, unit in (("def_mem_per_gpu", part.def_mem_per_gpu, profile.real_memory, "MiB"),
                                          ("def_cpu_per_gpu", part.def_cpu_per_gpu, profile.cpus, "CPUs")):
            if not gpus or per_gpu is None:
                continue
            if gpus > 1 and per_gpu >= has:
                check.add(f"{where}.{field}", f"{per_gpu} {unit} per GPU hands a one-GPU job all {has} {unit} of a "
                          f"{profile.name} node, so its other {gpus - 1} GPUs sit idle", part)
            elif per_gpu * gpus > has:
                check.add(f"{where}.{field}", f"{per_gpu} {unit} per GPU: a job asking all {gpus} GPUs of a "
                          f"{profile.name} node would need {per_gpu * gpus} {unit} by default, and the node has "
                          f"{has}, so it never starts; at most {has // gpus}", part)


def _the_default(check: Check, parts: Sequence[Partition]) -> None:
    cluster = check.cluster
    defaults = [p for p in parts if p.default]
    if len(defaults) > 1:
        check.add("partitions", f"{len(defaults)} partitions are the default ({', '.join(p.name for p in defaults)}): "
                                "keep one", defaults[1])
    if check.lacks("partitions"):
        return  # one left out for a mistake may have been the default: that mistake is the problem
    if parts and not defaults:
        check.add("partitions", "no partition is the default: set default=True on one", cluster, "partitions")
    if not parts:
        check.add("partitions", "no partition is defined", cluster, "partitions")


def _preemption(check: Check, parts: Sequence[Partition], members: Mapping[str, set[str]]) -> set[str]:
    by_name = {p.name: p for p in parts}
    for part in parts:
        for target in part.preempts:
            where = f"partitions[{part.name}].preempts"
            other = by_name.get(target)
            if other is None and check.refers_to_left_out(f"partitions[{target}]"):
                continue
            if other is None:
                check.add(where, f"{target!r} is not a partition of this cluster{check.meant(target, by_name)}", part)
            elif other is part:
                check.add(where, "a partition cannot preempt itself", part)
            elif other.priority_tier >= part.priority_tier:
                check.add(where, f"preempting {target} needs a higher priority_tier than its {other.priority_tier}; "
                                 f"this partition has {part.priority_tier}", part)
    # preempt/partition_prio lets every higher-tier partition preempt a preemptable one it shares nodes with.
    preemptable = {target for p in parts for target in p.preempts if target in by_name}
    for part in parts:
        for target in sorted(preemptable - {part.name} - set(part.preempts)):
            other = by_name[target]
            if part.priority_tier > other.priority_tier and members.get(part.name, set()) & members.get(target, set()):
                check.add(f"partitions[{part.name}]", f"priority_tier {part.priority_tier} is above preemptable "
                                                      f"{target}'s and they share nodes, so its jobs would preempt "
                                                      f"{target}'s: add {target!r} to preempts or lower the tier",
                          part)
    return preemptable
