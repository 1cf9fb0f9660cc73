"""Pure comparisons of what was read with what the inventory says. Each returns (detail, findings): a short line of
what was seen, for the table, and one Finding per difference."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from ..health import gpu_names
from ..slurm import drains, reservations
from ..slurm.nodes import Node
from ..health.parse import Gpu, GpuAffinity, IbPort, NodeHardware
from ..model import Profile, ValidCluster
from ..model.settings import yes_no
from ..words import counted
from .findings import Finding
from .slurm_parse import SlurmPartition, SlurmSwitch

Result = tuple[str, list[Finding]]

# RealMemory may be this much below what slurmd finds (kept for the OS and daemons) before it is reported as memory
# the inventory leaves unused: the prod DGX profile gives jobs 2,000,000 of 2,063,425 MiB (3 %).


def hardware(profile: Profile, found: NodeHardware, tolerance: float) -> Result:
    detail = (f"{counted(found.sockets, 'socket')} x {counted(found.cores_per_socket, 'core')} x "
              f"{counted(found.threads_per_core, 'thread')}, "
              f"{found.real_memory} MiB (RealMemory {profile.real_memory})")
    problems = []
    for what, want, have in (("sockets", profile.sockets, found.sockets),
                             ("cores per socket", profile.cores_per_socket, found.cores_per_socket),
                             ("threads per core", profile.threads_per_core, found.threads_per_core)):
        if want != have:
            problems.append(Finding(f"{what}: the inventory says {want}, slurmd -C finds {have}"))
    if profile.real_memory > found.real_memory:
        problems.append(Finding(f"RealMemory {profile.real_memory} MiB is above the {found.real_memory} MiB the node "
                                "has: slurmd would refuse to register (the node drains with Low RealMemory)"))
    elif profile.real_memory < found.real_memory * (1 - tolerance):
        unused = 100 * (found.real_memory - profile.real_memory) / found.real_memory
        problems.append(Finding(f"RealMemory {profile.real_memory} MiB leaves {unused:.0f} % of the node's "
                                f"{found.real_memory} MiB to no job (more than the {tolerance:.0%} tolerance)"))
    return detail, problems


def device_files(expected: Sequence[str], found: Mapping[str, str]) -> Result:
    problems = []
    for path in expected:
        kind = found.get(path, "missing")
        if kind == "missing":
            problems.append(Finding(f"{path} is missing"))
        elif kind != "char":
            problems.append(Finding(f"{path} is not a character device"))
    return f"{len(expected) - len(problems)}/{len(expected)} device files", problems


def _minor(path: str) -> int | None:
    m = re.search(r"(\d+)$", path)
    return int(m.group(1)) if m else None


def gpus(profile: Profile, files: Sequence[str], found: Sequence[Gpu], affinity: Sequence[GpuAffinity]) -> Result:
    """Count and model from `nvidia-smi -q`; each inventory GPU's socket against its NUMA node from `topo -m`.

    Inventory GPU i is the i-th device file, /dev/nvidiaN, and nvidia-smi names that GPU by its minor number N (its
    own index follows PCI order and may differ). The NUMA node is taken as the socket: one NUMA node per socket, as
    a DGX H100 runs (sub-NUMA clustering off); a node with more NUMA nodes than sockets is reported, not guessed."""
    spec = profile.gpus
    assert spec is not None
    names = sorted({g.name for g in found})
    detail = f"{len(found)} x {', '.join(names) or 'no GPU'}"
    problems = []
    if len(found) != spec.count:
        problems.append(Finding(f"nvidia-smi sees {counted(len(found), 'GPU')}, the inventory says "
                                f"{spec.count}"))
    wrong = [g for g in found if not gpu_names.matches(spec.type, g.name)]
    if wrong:
        problems.append(Finding(f"GPU model {', '.join(sorted({g.name for g in wrong}))} is not the inventory's "
                                f"type {spec.type!r}"))
    if not spec.sockets:
        return detail, problems
    numa_of = {a.index: a.numa for a in affinity}
    by_minor = {g.minor: g for g in found if g.minor is not None}
    numa_nodes = {n for n in numa_of.values() if n is not None}
    if numa_nodes and max(numa_nodes) >= profile.sockets:
        problems.append(Finding(f"GPUs sit on NUMA nodes {sorted(numa_nodes)}: more than the {profile.sockets} "
                                "sockets (sub-NUMA clustering?); the GPU-to-socket map was not compared"))
        return detail, problems
    for socket, indices in sorted(spec.sockets.items()):
        for i in indices:
            path = files[i] if i < len(files) else None
            gpu = by_minor.get(_minor(path)) if path else None
            if gpu is None:
                problems.append(Finding(f"GPU {i} ({path}): nvidia-smi lists no GPU with that minor number"))
                continue
            numa = numa_of.get(gpu.index)
            if numa is None:
                problems.append(Finding(f"GPU {i} ({path}, bus {gpu.bus_id}): nvidia-smi topo -m gives no NUMA node"))
            elif numa != socket:
                problems.append(Finding(f"GPU {i} ({path}, bus {gpu.bus_id}) is on socket {numa}, the inventory "
                                        f"says {socket} (gres.conf would bind it to the wrong cores)"))
    return detail, problems


def infiniband(ports: Iterable[IbPort]) -> Result:
    """Every InfiniBand port Active and LinkUp; the rates are reported (the inventory models no expected rate).
    Ethernet ports (RoCE, bonds) are listed but not judged: they are not the compute fabric."""
    ib = [p for p in ports if p.link_layer == "InfiniBand"]
    rates = sorted({p.rate for p in ib if p.state == "Active" and p.rate is not None})
    detail = (f"{sum(p.state == 'Active' for p in ib)}/{len(ib)} IB ports Active"
              + (f" at {'/'.join(str(r) for r in rates)} Gb/s" if rates else ""))
    problems = [Finding(f"{p.ca} port {p.port}: {p.state}, {p.physical_state}")
                for p in ib if p.state != "Active" or p.physical_state != "LinkUp"]
    if len(rates) > 1:
        slow = [f"{p.ca} {p.rate}" for p in ib if p.state == "Active" and p.rate is not None and p.rate < rates[-1]]
        problems.append(Finding(f"IB ports below the node's best rate of {rates[-1]} Gb/s: {', '.join(slow)}"))
    return detail, problems


# The flags of a node that takes no (new) jobs, as scontrol's State= joins them with '+' (IDLE+DRAIN,
# DOWN+NOT_RESPONDING), spelled as every release prints them (node_state_string_complete: a maintenance reservation
# is MAINTENANCE).
BAD_STATES = frozenset({"DOWN", "DRAIN", "FAIL", "NOT_RESPONDING", "INVALID_REG", "UNKNOWN", "MAINTENANCE",
                        "REBOOT_ISSUED", "POWERED_DOWN", "POWERING_DOWN"})


def _out(node: Node) -> bool:
    return bool(node.flags & BAD_STATES) or any(f.startswith(("DRAIN", "DOWN", "FAIL")) for f in node.flags)


def _reason(node: Node) -> str:
    """The reason Slurm holds, who set it and when, and whose it is: clusterforge lifts only its own drains
    (drains.py)."""
    if not node.reason:
        return ""
    whose = "clusterforge's" if drains.parse_reason(node.reason) else "not clusterforge's, which leaves it alone"
    return f" (reason: {node.reason}{f' [{node.set_by}]' if node.set_by else ''}; {whose})"


def _held(node: str, held: Mapping[str, str]) -> str:
    """Where the admission gate holds the node (slurm/reservations.py): clusterforge's own, as its drains are."""
    cause = held.get(node)
    if cause is None:
        return ""
    return (f" (held by the admission gate: cf:gate:{cause}, reservation {reservations.name(cause, node)}; "
            "clusterforge's, released when its tests pass)")


def slurm_nodes(valid: ValidCluster, found: Mapping[str, Node], only: set[str] | None = None,
                held: Mapping[str, str] | None = None) -> Result:
    """Every inventory node known to slurmctld, in a state that takes jobs, with the inventory's GPUs. ``held``: the
    nodes the admission gate holds, with the cause (reservations.held), named as clusterforge's."""
    held = held or {}
    problems = []
    expected = [n for n in valid.nodes if only is None or n.name in only]
    for node in expected:
        seen = found.get(node.name)
        if seen is None:
            problems.append(Finding(f"{node.name}: not a node slurmctld knows"))
            continue
        if _out(seen) or node.name in held:
            problems.append(Finding(f"{node.name}: {seen.complete}{_reason(seen)}{_held(node.name, held)}"))
        if seen.gpus != node.profile.gpu_count:
            problems.append(Finding(f"{node.name}: slurmctld has {counted(seen.gpus, 'GPU')}, the "
                                    f"inventory {node.profile.gpu_count}"))
    extra = sorted(set(found) - {n.name for n in valid.nodes})
    if extra and only is None:
        problems.append(Finding(f"slurmctld has nodes the inventory lacks: {', '.join(extra)}"))
    gpus_in_slurm = sum(found[n.name].gpus for n in expected if n.name in found)
    gpus_inventory = sum(n.profile.gpu_count for n in expected)
    states = sorted({found[n.name].complete for n in expected if n.name in found})
    holding = sum(n.name in held for n in expected)
    return (f"{counted(len(expected), 'node')} ({', '.join(states)}), "
            f"{gpus_in_slurm}/{gpus_inventory} GPUs" + (f", {holding} held by the admission gate" if holding else ""),
            problems)


def slurm_partitions(valid: ValidCluster, found: Mapping[str, SlurmPartition], qos: Sequence[str]) -> Result:
    problems = []
    for member in valid.partitions:
        spec, seen = member.spec, found.get(member.name)
        if seen is None:
            problems.append(Finding(f"partition {member.name}: slurmctld does not have it"))
            continue
        if set(seen.nodes) != set(member.nodes):
            missing, extra = sorted(set(member.nodes) - set(seen.nodes)), sorted(set(seen.nodes) - set(member.nodes))
            problems.append(Finding(f"partition {member.name}: nodes differ"
                                    + (f"; missing {', '.join(missing)}" if missing else "")
                                    + (f"; not in the inventory {', '.join(extra)}" if extra else "")))
        if seen.default != spec.default:
            problems.append(Finding(f"partition {member.name}: Default={yes_no(seen.default)}, the inventory "
                                    f"says {yes_no(spec.default)}"))
        if (seen.qos or "").lower() != (member.qos or ""):
            problems.append(Finding(f"partition {member.name}: QOS {seen.qos or 'none'}, the inventory says "
                                    f"{member.qos or 'none'}"))
        if {q.lower() for q in seen.allow_qos} != set(member.allow_qos):
            problems.append(Finding(f"partition {member.name}: AllowQos {','.join(seen.allow_qos) or 'ALL'}, the "
                                    f"inventory says {','.join(member.allow_qos) or 'ALL'}"))
    extra = sorted(set(found) - {p.name for p in valid.partitions})
    if extra:
        problems.append(Finding(f"slurmctld has partitions the inventory lacks: {', '.join(extra)}"))
    for name in sorted({q.name.lower() for q in valid.accounting.qos} - {q.lower() for q in qos}):
        problems.append(Finding(f"QOS {name}: not in the accounting database"))
    return f"partitions {', '.join(sorted(found)) or 'none'}; QOS {', '.join(sorted(qos)) or 'none'}", problems


def slurm_topology(valid: ValidCluster, found: Mapping[str, SlurmSwitch]) -> Result:
    """The switch tree slurmctld runs against the resolved cluster's (the one topology.conf is rendered from)."""
    topo = valid.topology
    if topo is None:
        if found:
            return (counted(len(found), "switch", "switches"),
                    [Finding("slurmctld has switches, the inventory declares no fabric")])
        return "no fabric (flat)", []
    problems = []
    block = topo.plugin == "block"
    # With topology/block Slurm shows the blocks (the leaves) and may add the larger blocks it aggregates them into.
    want = {s.name: s for s in (topo.blocks if block else (*topo.leaves, *topo.spines))}
    for name, switch in want.items():
        seen = found.get(name)
        if seen is None:
            problems.append(Finding(f"switch {name}: slurmctld does not have it"))
        elif switch.switches and set(seen.switches) != set(switch.switches):
            problems.append(Finding(f"switch {name}: switches below are {','.join(seen.switches) or 'none'}, the "
                                    f"inventory says {','.join(switch.switches)}"))
        elif not switch.switches and set(seen.nodes) != set(switch.nodes):
            problems.append(Finding(f"switch {name}: nodes {','.join(seen.nodes) or 'none'}, the inventory says "
                                    f"{','.join(switch.nodes)}"))
    extra = sorted(set(found) - set(want))
    if extra and not block:
        problems.append(Finding(f"slurmctld has switches the inventory lacks: {', '.join(extra)}"))
    if block:
        return f"topology/block, {counted(len(topo.blocks), 'block')}", problems
    return (f"{counted(len(topo.leaves), 'leaf', 'leaves')}, "
            f"{counted(len(topo.spines), 'spine')}", problems)
