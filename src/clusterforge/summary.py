"""The short summary of a cluster an admin reads: nodes per profile, GPUs, partitions, leaves."""

from __future__ import annotations

from . import hostlists
from .model import ValidCluster
from .model.hosts import Host
from .render.topology_conf import merged_leaves


def _host(host: Host | None) -> str:
    if host is None:
        return "-"
    return f"{host.name} ({host.address})" if host.address else host.name


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary(valid: ValidCluster) -> str:
    spec, version = valid.spec, valid.version
    lines = [f"cluster {spec.name}: Slurm {version}, auth/{spec.auth}", ""]
    lines.append(f"  controller  {_host(spec.controller)}"
                 + (f", backup {_host(spec.backup_controller)}" if spec.backup_controller else ""))
    lines.append(f"  database    {_host(spec.database)}")
    lines.append(f"  login       {', '.join(_host(h) for h in spec.login) or '-'}")
    if spec.nfs:
        exports = ", ".join(e.path for e in spec.nfs.exports) or "no exports"
        lines.append(f"  nfs         {_host(spec.nfs.server)}: {exports}")
    lines += ["", "profiles"]
    width = max(len(p.name) for p in spec.profiles)
    total_cpus = total_gpus = 0
    for profile in spec.profiles:
        names = [n.name for n in valid.nodes_of(profile.name)]
        gpus = f", {profile.gpus.count} x {profile.gpus.type}" if profile.gpus else ""
        total_cpus += profile.cpus * len(names)
        total_gpus += profile.gpu_count * len(names)
        lines.append(f"  {profile.name:<{width}}  {_count(len(names), 'node'):>9}  "
                     f"{profile.sockets}x{profile.cores_per_socket} cores x{profile.threads_per_core} threads, "
                     f"{profile.real_memory} MiB{gpus}  {hostlists.compress(names, version) if names else ''}")
    lines.append(f"  total: {_count(len(valid.nodes), 'node')}, {_count(total_cpus, 'CPU')}, "
                 f"{_count(total_gpus, 'GPU')}")
    lines += ["", "partitions"]
    preempted = {t for p in spec.partitions for t in p.preempts}
    width = max((len(p.spec.name) for p in valid.partitions), default=0) + 1
    for member in valid.partitions:
        part = member.spec
        notes = [f"max {part.max_time or 'UNLIMITED'}", f"tier {part.priority_tier}"]
        if part.preempts:
            notes.append(f"preempts {', '.join(part.preempts)}")
        if part.name in preempted:
            notes.append(f"preemptable ({part.preempt_mode})")
        name = part.name + ("*" if part.default else "")
        lines.append(f"  {name:<{width}}  {_count(len(member.nodes), 'node'):>9}  {'  '.join(notes)}")
    if valid.has_fabric:
        leaves, renamed = merged_leaves(valid)
        kind = "rail-optimized tree" if spec.fabric and spec.fabric.rail_optimized else "tree"
        lines += ["", f"fabric ({kind})"]
        for spine in valid.spines:
            below = list(dict.fromkeys(renamed.get(s, s) for s in spine.switches))
            lines.append(f"  {spine.name}: {', '.join(below)}")
        for leaf in leaves:
            lines.append(f"  {leaf.name}: {_count(len(leaf.nodes), 'node')}  "
                         f"{hostlists.compress(leaf.nodes, version)}")
    return "\n".join(lines)
