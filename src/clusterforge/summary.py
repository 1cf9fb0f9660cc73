"""The short summary of a cluster an admin reads: nodes per profile, GPUs, partitions, leaves, and accounting: QOS,
the account tree with each account's users, and their limits; and the same as one JSON-ready document for scripts
(``as_json``), its shape documented with `clusterforge show`."""

from __future__ import annotations

from collections.abc import Mapping

from . import hostlists
from .accounts.plan import ASSOCIATION, QOS, Setting
from .model import Association, Host, Qos, ValidCluster
from .words import counted


def _host(host: Host | None) -> str:
    if host is None:
        return "-"
    return f"{host.name} ({host.address})" if host.address else host.name


def summary(valid: ValidCluster) -> str:
    version = valid.version
    lines = [f"cluster {valid.name}: Slurm {version}, auth/{valid.auth}", ""]
    lines.append(f"  controller  {_host(valid.controller)}"
                 + (f", backup {_host(valid.backup_controller)}" if valid.backup_controller else ""))
    lines.append(f"  database    {_host(valid.database)}")
    lines.append(f"  login       {', '.join(_host(h) for h in valid.login) or '-'}")
    if valid.nfs:
        exports = ", ".join(e.path for e in valid.nfs.exports) or "no exports"
        lines.append(f"  nfs         {_host(valid.nfs.server)}: {exports}")
    lines += ["", "profiles"]
    width = max(len(h.name) for h in valid.hardware)
    total_cpus = total_gpus = 0
    for hardware in valid.hardware:
        profile, names = hardware.profile, hardware.nodes
        gpus = f", {profile.gpus.count} x {profile.gpus.type}" if profile.gpus else ""
        total_cpus += profile.cpus * len(names)
        total_gpus += profile.gpu_count * len(names)
        lines.append(f"  {profile.name:<{width}}  {counted(len(names), 'node'):>9}  "
                     f"{profile.sockets}x{profile.cores_per_socket} cores x{profile.threads_per_core} threads, "
                     f"{profile.real_memory} MiB{gpus}  {hostlists.compress(names, version) if names else ''}")
    lines.append(f"  total: {counted(len(valid.nodes), 'node')}, {counted(total_cpus, 'CPU')}, "
                 f"{counted(total_gpus, 'GPU')}")
    lines += ["", "partitions"]
    width = max((len(p.name) for p in valid.partitions), default=0) + 1
    for member in valid.partitions:
        part = member.spec
        notes = [f"max {part.max_time or 'UNLIMITED'}", f"tier {part.priority_tier}"]
        if part.preempts:
            notes.append(f"preempts {', '.join(part.preempts)}")
        if member.preemptable:
            notes.append(f"preemptable ({part.preempt_mode})")
        name = part.name + ("*" if part.default else "")
        lines.append(f"  {name:<{width}}  {counted(len(member.nodes), 'node'):>9}  {'  '.join(notes)}")
    if valid.topology is not None:
        topology = valid.topology
        if topology.plugin == "block":
            sizes = ",".join(str(size) for size in topology.block_sizes)
            kind = f"{'rail-optimized, ' if topology.rail_optimized else ''}topology/block, block sizes {sizes}"
        else:
            kind = "rail-optimized tree" if topology.rail_optimized else "tree"
        lines += ["", f"fabric ({kind})"]
        for spine in topology.spines:
            lines.append(f"  {spine.name}: {', '.join(spine.switches)}")
        for leaf in topology.leaves:
            lines.append(f"  {leaf.name}: {counted(len(leaf.nodes), 'node')}  "
                         f"{hostlists.compress(leaf.nodes, version)}")
    return "\n".join(lines + _accounting(valid))


def _given(entry: Association | Qos, settings: Mapping[str, Setting]) -> dict[str, object]:
    """The settings the inventory gives, as sacctmgr names them; defaults (1 share, priority 0) left out."""
    out: dict[str, object] = {}
    for field, setting in settings.items():
        value = getattr(entry, field)
        if value in (None, (), 0) or (field == "fairshare" and value == 1):
            continue
        out[setting.key] = ",".join(value) if isinstance(value, tuple) else value
    return out


def _settings(entry: Association | Qos, settings: Mapping[str, Setting]) -> str:
    return "  ".join(f"{key}={value}" for key, value in _given(entry, settings).items())


def _accounting(valid: ValidCluster) -> list[str]:
    acct = valid.accounting
    if not (acct.qos or valid.accounts or acct.users):
        return []
    lines = ["", f"accounting (enforce {','.join(acct.enforce)}{', prune' if acct.prune else ''})"]
    width = max((len(q.name) for q in acct.qos), default=0)
    for qos in acct.qos:
        lines.append(f"  qos {qos.name:<{width}}  {_settings(qos, QOS)}".rstrip())
    members: dict[str, list[str]] = {}
    for user in acct.users:
        for account in user.accounts:
            # * marks the user's default account
            members.setdefault(account.lower(), []).append(user.name + ("*" if account == user.default else ""))
    depth = {"root": 0}
    lines.append("  account root" + (f"  users {', '.join(members['root'])}" if "root" in members else ""))
    for account in valid.accounts:
        depth[account.name.lower()] = depth[account.parent.lower()] + 1
        notes = [_settings(account, ASSOCIATION)]
        if account.name.lower() in members:
            notes.append(f"users {', '.join(members[account.name.lower()])}")
        lines.append(f"  {'  ' * depth[account.name.lower()]}account {account.name}  "
                     f"{'  '.join(n for n in notes if n)}".rstrip())
    for user in acct.users:
        notes = [_settings(user, ASSOCIATION), f"admin {user.admin}" if user.admin else ""]
        if any(notes):
            lines.append(f"  user {user.name}  {'  '.join(n for n in notes if n)}")
    return lines


def _host_json(host: Host | None) -> dict[str, str | None] | None:
    return None if host is None else {"name": host.name, "address": host.address}


def as_json(valid: ValidCluster) -> dict[str, object]:
    """What ``summary`` says, as plain data: counts as numbers, node sets as lists and as Slurm hostlists."""
    version = valid.version
    profiles = [{"name": h.profile.name, "nodes": list(h.nodes),
                 "hostlist": hostlists.compress(h.nodes, version) if h.nodes else "",
                 "sockets": h.profile.sockets, "cores_per_socket": h.profile.cores_per_socket,
                 "threads_per_core": h.profile.threads_per_core, "cpus": h.profile.cpus,
                 "real_memory_mib": h.profile.real_memory,
                 "gpus": {"count": h.profile.gpus.count, "type": h.profile.gpus.type} if h.profile.gpus else None}
                for h in valid.hardware]
    partitions = [{"name": m.spec.name, "default": m.spec.default, "nodes": list(m.nodes),
                   "hostlist": hostlists.compress(m.nodes, version) if m.nodes else "",
                   "max_time": m.spec.max_time, "priority_tier": m.spec.priority_tier,
                   "preempts": list(m.spec.preempts),
                   "preemptable": m.preemptable, "preempt_mode": m.spec.preempt_mode if m.preemptable else None}
                  for m in valid.partitions]
    topology = valid.topology
    fabric = None if topology is None else {
        "plugin": topology.plugin, "rail_optimized": topology.rail_optimized, "block_sizes": list(topology.block_sizes),
        "spines": [{"name": s.name, "switches": list(s.switches)} for s in topology.spines],
        "leaves": [{"name": leaf.name, "nodes": list(leaf.nodes)} for leaf in topology.leaves]}
    return {
        "cluster": valid.name, "slurm_version": str(version), "auth": valid.auth,
        "controller": _host_json(valid.controller), "backup_controller": _host_json(valid.backup_controller),
        "database": _host_json(valid.database), "login": [_host_json(h) for h in valid.login],
        "nfs": None if not valid.nfs else {"server": _host_json(valid.nfs.server),
                                           "exports": [e.path for e in valid.nfs.exports]},
        "profiles": profiles,
        "total": {"nodes": len(valid.nodes), "cpus": sum(h.profile.cpus * len(h.nodes) for h in valid.hardware),
                  "gpus": sum(h.profile.gpu_count * len(h.nodes) for h in valid.hardware)},
        "partitions": partitions, "fabric": fabric, "accounting": _accounting_json(valid)}


def _accounting_json(valid: ValidCluster) -> dict[str, object]:
    acct = valid.accounting
    return {
        "enforce": list(acct.enforce), "prune": acct.prune,
        "qos": [{"name": q.name, "settings": _given(q, QOS)} for q in acct.qos],
        "accounts": [{"name": a.name, "parent": a.parent, "settings": _given(a, ASSOCIATION)} for a in valid.accounts],
        "users": [{"name": u.name, "accounts": list(u.accounts), "default_account": u.default, "admin": u.admin,
                   "settings": _given(u, ASSOCIATION)} for u in acct.users]}
