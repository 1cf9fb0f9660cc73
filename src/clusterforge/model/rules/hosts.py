"""Rules for hosts and addresses: the service hosts, the compute nodes' names and addresses, NFS."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..hardware import Profile
from ..hosts import Host
from ..nodes import Nodes
from .check import MAX_NAME, NAME, RESERVED_NODE_NAMES, Check, address_ok
from .paths import WHAT, plain_path

CLUSTER_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")

Expanded = list[tuple[Nodes, str, str | None]]  # (entry, node name, address) for every node, in inventory order


def service_hosts(check: Check) -> list[tuple[str, Host]]:
    """(where, host) of every host named outside ``nodes``, in the order machines are listed."""
    c = check.cluster
    hosts = [(where, host) for where, host in (("controller", c.controller), ("backup_controller", c.backup_controller),
                                               ("database", c.database)) if host is not None]
    hosts.extend((f"login[{h.name}]", h) for h in c.login)
    if c.nfs is not None:
        hosts.append(("nfs.server", c.nfs.server))
    if c.monitoring is not None:
        hosts.append(("monitoring.host", c.monitoring.host))
    return hosts


def cluster_hosts(check: Check) -> None:
    c = check.cluster
    if not CLUSTER_NAME.match(c.name) or len(c.name) > 40:
        check.add("name", f"{c.name!r} is not a valid cluster name: lowercase letters, digits, '-' or '_', "
                          "starting with a letter, at most 40 characters", c, "name")
    if c.controller is None:
        check.add("controller", "missing: every cluster needs the host slurmctld runs on", c)
    if c.database is None:
        check.add("database", "missing: the host that runs slurmdbd and MariaDB", c)
    elif c.database.memory is None:
        check.add("database.memory", "missing: the host's RAM in MiB sizes MariaDB's buffer pool", c.database)
    elif c.database.memory <= 0:
        check.add("database.memory", f"{c.database.memory} MiB is not a positive amount of memory", c.database)
    if (c.controller is not None and c.backup_controller is not None
            and c.controller.name == c.backup_controller.name):
        check.add("backup_controller", f"{c.backup_controller.name} is also the primary controller",
                  c.backup_controller)
    check.duplicates(((h.name, h, f"login[{h.name}]") for h in c.login), "listed twice")
    for where, host in service_hosts(check):
        check.name(where, host.name, host, "host")
        if host.address is not None:
            check.address(f"{where}.address", host.address, host)


def expand_nodes(check: Check, profiles: Mapping[str, Profile]) -> Expanded:
    """Every node with its entry and address; the entries' problems are recorded."""
    out: Expanded = []
    for entry in check.cluster.nodes:
        where = f"nodes[{entry.names}]"
        if entry.profile not in profiles and not check.refers_to_left_out(f"profiles[{entry.profile}]"):
            hint = check.meant(entry.profile, profiles) or f" (profiles: {', '.join(profiles) or 'none'})"
            check.add(f"{where}.profile", f"{entry.profile!r} is not a profile of this cluster{hint}", entry)
        for feature in entry.features:
            check.feature(f"{where}.features", feature, entry)
        names = check.expand(where, entry.names, entry)
        if names is None:
            check.names_unread = True
            continue
        addresses: list[str | None] = [None] * len(names)
        if entry.address is not None:
            expanded = check.expand(f"{where}.address", entry.address, entry)
            if expanded is not None and len(expanded) != len(names):
                check.add(f"{where}.address", f"{entry.address} gives {len(expanded)} addresses for {len(names)} "
                                              "nodes", entry)
            elif expanded is not None:
                addresses = list(expanded)
                for address in [a for a in dict.fromkeys(expanded) if not address_ok(a)][:3]:
                    check.add(f"{where}.address", f"{address!r} is neither an IP address nor a DNS name", entry)
        bad_names = [n for n in names if not (NAME.match(n) and len(n) <= MAX_NAME
                                               and n.lower() not in RESERVED_NODE_NAMES)]
        for name in bad_names[:3]:
            check.name(where, name, entry, "node", RESERVED_NODE_NAMES)
        out.extend(zip([entry] * len(names), names, addresses))
    if not check.cluster.nodes and not check.lacks("nodes"):
        check.add("nodes", "no compute node is defined", check.cluster)
    return out


def node_identity(check: Check, expanded: Expanded) -> None:
    """No node name twice; no address shared by two hosts; a name given to a service host and a node, or to two
    service hosts (a controller that runs jobs too, a database host that is also the controller) is one machine,
    with one address. A name given twice is that one problem, not an address problem as well."""
    first_by_name: dict[str, Nodes] = {}
    repeated: dict[int, tuple[Nodes, list[str]]] = {}
    again: set[int] = set()  # the places in ``expanded`` of a node name given again
    for index, (entry, name, _) in enumerate(expanded):
        if name in first_by_name:
            repeated.setdefault(id(entry), (entry, []))[1].append(name)
            again.add(index)
        else:
            first_by_name[name] = entry
    for entry, names in repeated.values():
        first = first_by_name[names[0]]
        at = f"at {first.origin}" if first.origin else "earlier"
        check.add(f"nodes[{entry.names}]", f"{check.sample(names)} already defined ({at})", entry)
    owner_of_address: dict[str, str] = {}
    named: dict[str, tuple[str, str]] = {}  # a service host's name -> where it was first given an address, which
    logins: set[str] = set()
    for where, host in service_hosts(check):
        if where.startswith("login["):
            if host.name in logins:
                continue  # listed twice, reported as such (cluster_hosts)
            logins.add(host.name)
        if host.address is None:
            continue
        first = named.setdefault(host.name, (where, host.address))
        if first[1] != host.address:
            check.add(where, _named_twice(host.name, *first), host)
            continue
        owner = owner_of_address.setdefault(host.address, host.name)
        if owner != host.name:
            check.add(f"{where}.address", f"{host.address} of {host.name} is already the address of {owner}", host)
    for index, (entry, name, address) in enumerate(expanded):
        if address is None or index in again:
            continue
        first = named.get(name)
        if first is not None and first[1] != address:
            check.add(f"nodes[{entry.names}]", _named_twice(name, *first), entry)
            continue
        owner = owner_of_address.setdefault(address, name)
        if owner != name:
            check.add(f"nodes[{entry.names}].address", f"{address} of {name} is already the address of {owner}",
                      entry)


def _named_twice(name: str, where: str, address: str) -> str:
    return (f"{name} is already the name of {where}, at {address}: a name is one machine, with one address; give "
            "this one another name, or that address")


def nfs(check: Check) -> None:
    nfs = check.cluster.nfs
    if nfs is None:
        return
    check.duplicates(((e.path, e, f"nfs.exports[{e.path}]") for e in nfs.exports), "exported more than once")
    for export in nfs.exports:
        if not plain_path(export.path):
            check.add(f"nfs.exports[{export.path}]", f"an export path must be {WHAT}", export)
    exported = {e.path for e in nfs.exports}
    for mount in nfs.mounts:
        where = f"nfs.mounts[{mount.mount_point}]"
        if mount.export not in exported:
            check.add(f"{where}.export", f"{mount.export!r} is not one of nfs.exports", mount)
        if not plain_path(mount.mount_point):
            check.add(where, f"a mount point must be {WHAT}", mount)


def monitoring(check: Check, expanded: Expanded) -> None:
    found = check.cluster.monitoring
    if found is None:
        return
    if not 5 <= found.scrape_interval <= 300:
        check.add("monitoring.scrape_interval", f"{found.scrape_interval} s: between 5 and 300 seconds", found,
                  "scrape_interval")
    for field in ("retention_days", "pending_minutes"):
        if getattr(found, field) < 1:
            check.add(f"monitoring.{field}", f"{getattr(found, field)}: at least 1", found, field)
    for field, least, most, unit in (("group_wait", 0, 3600, "seconds"), ("group_interval", 1, 86400, "seconds"),
                                     ("repeat_hours", 1, 168, "hours")):
        value = getattr(found, field)
        if not least <= value <= most:
            check.add(f"monitoring.{field}", f"{value}: between {least} and {most} {unit}", found, field)
    if found.host.name in {name for _, name, _ in expanded}:
        check.add("monitoring.host", f"{found.host.name} is a compute node: Prometheus and Alertmanager would take "
                  "memory and CPUs from its jobs, and their alerts would go when it is drained or rebooted; give "
                  "them a service host", found, "host")
    if found.webhook is not None and not re.match(r"^https?://[^/\s]+", found.webhook):
        check.add("monitoring.webhook", f"{found.webhook!r} is not an http:// or https:// URL", found, "webhook")
