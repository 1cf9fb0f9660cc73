"""Every rule an inventory must pass, collected in one run so the admin sees all problems at once."""

from __future__ import annotations

import ipaddress
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from difflib import get_close_matches
from typing import TYPE_CHECKING

from .. import hostlists
from ..errors import ClusterforgeError, InventoryError, Problem
from ..keys import SLURM_CONF_OWNED, KeyTable, cgroup_conf_keys, slurm_conf_keys
from ..versions import SlurmVersion, v
from .base import Entry
from .hardware import Profile
from .hosts import Host
from .nodes import Nodes
from .resolved import MemberPartition, Node, Switch, ValidCluster

if TYPE_CHECKING:
    from .cluster import Cluster

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
CLUSTER_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
SLURM_TIME = re.compile(
    r"^(?:(?P<unlimited>UNLIMITED|INFINITE)"
    r"|(?P<days>\d+)-(?P<dh>\d{1,2})(?::(?P<dm>\d{1,2})(?::(?P<ds>\d{1,2}))?)?"
    r"|(?P<a>\d+)(?::(?P<b>\d{1,2})(?::(?P<c>\d{1,2}))?)?)$",
    re.IGNORECASE,
)
RESERVED_NODE_NAMES = {"all", "default", "none"}
MAX_NAME = 63  # HOST_NAME_MAX less the terminating NUL
MAX_TREE_DEPTH = 20  # topology/tree refuses deeper trees ("Switch configuration is not a tree")
ENFORCE_VALUES = {"associations", "limits", "qos", "safe", "wckeys", "nojobs", "nosteps"}


def slurm_time_seconds(text: str) -> float | None:
    """Seconds in a Slurm time string, inf for UNLIMITED, None if Slurm would not parse it."""
    match = SLURM_TIME.match(text.strip())
    if not match:
        return None
    g = match.groupdict()
    if g["unlimited"]:
        return float("inf")
    if g["days"] is not None:
        return int(g["days"]) * 86400 + int(g["dh"]) * 3600 + int(g["dm"] or 0) * 60 + int(g["ds"] or 0)
    if g["c"] is not None:  # hours:minutes:seconds
        return int(g["a"]) * 3600 + int(g["b"]) * 60 + int(g["c"])
    return int(g["a"]) * 60 + int(g["b"] or 0)  # minutes[:seconds]


def _sample(names: Iterable[str], version: SlurmVersion, limit: int = 8) -> str:
    names = list(dict.fromkeys(names))
    if len(names) <= limit:
        return hostlists.compress(names, version)
    return f"{hostlists.compress(names, version)} ({len(names)} nodes)"


class _Checker:
    def __init__(self, cluster: Cluster, version: SlurmVersion):
        self.cluster = cluster
        self.version = version
        self.problems: list[Problem] = []

    def add(self, where: str, message: str, entry: Entry | None = None) -> None:
        self.problems.append(Problem(where, message, entry.origin if entry is not None else None))

    # --- names and hosts ---------------------------------------------------------------------------------------

    def check_name(self, where: str, name: str, entry: Entry, what: str) -> bool:
        if not NAME.match(name):
            self.add(where, f"{name!r} is not a valid {what} name: use letters, digits, '.', '-' or '_'", entry)
        elif len(name) > MAX_NAME:
            self.add(where, f"{name!r} is longer than {MAX_NAME} characters", entry)
        elif name.lower() in RESERVED_NODE_NAMES:
            self.add(where, f"{name!r} is a reserved word in Slurm and cannot name a {what}", entry)
        else:
            return True
        return False

    def check_address(self, where: str, address: str, entry: Entry) -> None:
        try:
            ipaddress.ip_address(address)
        except ValueError:
            if not HOSTNAME.match(address):
                self.add(where, f"{address!r} is neither an IP address nor a DNS name", entry)

    def check_setup(self, expanded: list[tuple[Nodes, str, str | None]]) -> None:
        setup = self.cluster.setup
        if setup.apt_proxy is not None and not re.match(r"https?://[^/\s]+/?$", setup.apt_proxy):
            self.add("setup.apt_proxy", f"{setup.apt_proxy!r} is not an http://host:port address", setup)
        munge, slurm = setup.munge_user, setup.slurm_user
        if munge.uid == slurm.uid:
            self.add("setup.slurm_user", f"uid {slurm.uid} is also the munge user's", slurm)
        if munge.gid == slurm.gid:
            self.add("setup.slurm_user", f"gid {slurm.gid} is also the munge group's", slurm)
        if setup.etc_hosts:
            unaddressed = [h.name for _, h in self.service_hosts() if h.address is None]
            unaddressed += [name for _, name, address in expanded if address is None]
            if unaddressed:
                self.add("setup.etc_hosts", "needs every host's address; missing for "
                         + _sample(dict.fromkeys(unaddressed), self.version), setup)

    def service_hosts(self) -> list[tuple[str, Host]]:
        c = self.cluster
        hosts: list[tuple[str, Host]] = []
        for where, host in (("controller", c.controller), ("backup_controller", c.backup_controller),
                            ("database", c.database)):
            if host is not None:
                hosts.append((where, host))
        hosts.extend((f"login[{h.name}]", h) for h in c.login)
        if c.nfs is not None:
            hosts.append(("nfs.server", c.nfs.server))
        return hosts

    def check_cluster(self) -> None:
        c = self.cluster
        if not CLUSTER_NAME.match(c.name) or len(c.name) > 40:
            self.add("name", f"{c.name!r} is not a valid cluster name: lowercase letters, digits, '-' or '_', "
                             "starting with a letter, at most 40 characters", c)
        if c.controller is None:
            self.add("controller", "missing: every cluster needs the host slurmctld runs on", c)
        if c.database is None:
            self.add("database", "missing: the host that runs slurmdbd and MariaDB", c)
        elif c.database.memory is None:
            self.add("database.memory", "missing: the host's RAM in MiB sizes MariaDB's buffer pool", c.database)
        elif c.database.memory <= 0:
            self.add("database.memory", f"{c.database.memory} MiB is not a positive amount of memory", c.database)
        if (c.controller is not None and c.backup_controller is not None
                and c.controller.name == c.backup_controller.name):
            self.add("backup_controller", f"{c.backup_controller.name} is also the primary controller",
                     c.backup_controller)
        if c.auth == "slurm" and self.version < v("23.11"):
            self.add("auth", f"auth/slurm needs Slurm 23.11 or newer; this cluster runs {self.version}", c)
        names = Counter(h.name for h in c.login)
        for host in c.login:
            if names[host.name] > 1:
                self.add(f"login[{host.name}]", "listed twice", host)
                names[host.name] = 0
        for where, host in self.service_hosts():
            self.check_name(where, host.name, host, "host")
            if host.address is not None:
                self.check_address(f"{where}.address", host.address, host)

    # --- profiles ----------------------------------------------------------------------------------------------

    def check_profiles(self) -> dict[str, Profile]:
        profiles: dict[str, Profile] = {}
        for profile in self.cluster.profiles:
            where = f"profiles[{profile.name}]"
            if profile.name in profiles:
                self.add(where, "a profile of this name is already defined", profile)
                continue
            profiles[profile.name] = profile
            self.check_name(where, profile.name, profile, "profile")
            for field in ("sockets", "cores_per_socket", "threads_per_core", "real_memory"):
                value = getattr(profile, field)
                if value <= 0:
                    self.add(f"{where}.{field}", f"must be positive, not {value}", profile)
            for feature in profile.features:
                self.check_feature(f"{where}.features", feature, profile)
            if profile.gpus is not None:
                self.check_gpus(where + ".gpus", profile)
        if not profiles:
            self.add("profiles", "no hardware profile is defined", self.cluster)
        return profiles

    def check_feature(self, where: str, feature: str, entry: Entry) -> None:
        if not re.match(r"^[A-Za-z0-9_.-]+$", feature):
            self.add(where, f"{feature!r} is not a valid node feature: letters, digits, '.', '-' or '_'", entry)

    def check_gpus(self, where: str, profile: Profile) -> None:
        gpus = profile.gpus
        assert gpus is not None
        if not re.match(r"^[A-Za-z0-9_.-]+$", gpus.type):
            self.add(f"{where}.type", f"{gpus.type!r} is not a valid GRES type", gpus)
        if gpus.count <= 0:
            self.add(f"{where}.count", f"must be positive, not {gpus.count}", gpus)
        if gpus.autodetect == "nvidia" and self.version < v("24.11"):
            self.add(f"{where}.autodetect", f"AutoDetect=nvidia needs Slurm 24.11 or newer; this cluster runs "
                                            f"{self.version} (use 'nvml' with slurm-wlm-nvml-plugin, or 'off')", gpus)
        if gpus.files is None:
            if gpus.autodetect == "off":
                self.add(f"{where}.files", "missing: typed GPUs need their device files unless autodetect is on",
                         gpus)
        else:
            try:
                files = hostlists.expand(gpus.files)
            except hostlists.HostlistError as error:
                self.add(f"{where}.files", str(error), gpus)
            else:
                if len(files) != gpus.count:
                    self.add(f"{where}.files", f"{gpus.files} names {len(files)} device files but count is "
                                               f"{gpus.count}", gpus)
                for name, times in Counter(files).items():
                    if times > 1:
                        self.add(f"{where}.files", f"{name} is listed {times} times", gpus)
                for name in files:
                    if not name.startswith("/dev/"):
                        self.add(f"{where}.files", f"{name} is not a device file under /dev", gpus)
                        break
        placed: dict[int, int] = {}
        for socket, indices in sorted(gpus.sockets.items()):
            if not 0 <= socket < profile.sockets:
                self.add(f"{where}.sockets", f"socket {socket} does not exist: the profile has {profile.sockets} "
                                             f"socket{'s' if profile.sockets != 1 else ''} (0-{profile.sockets - 1})",
                         gpus)
            for index in indices:
                if not 0 <= index < gpus.count:
                    self.add(f"{where}.sockets", f"GPU {index} on socket {socket} does not exist: the profile has "
                                                 f"{gpus.count} GPUs (0-{gpus.count - 1})", gpus)
                elif index in placed:
                    self.add(f"{where}.sockets", f"GPU {index} is placed on socket {placed[index]} and on socket "
                                                 f"{socket}", gpus)
                else:
                    placed[index] = socket

    # --- nodes -------------------------------------------------------------------------------------------------

    def expand_nodes(self, profiles: Mapping[str, Profile]) -> list[tuple[Nodes, str, str | None]]:
        """(entry, name, address) for every node, with the entry's problems recorded."""
        out: list[tuple[Nodes, str, str | None]] = []
        for entry in self.cluster.nodes:
            where = f"nodes[{entry.names}]"
            if entry.profile not in profiles:
                known = ", ".join(profiles) or "none"
                self.add(f"{where}.profile", f"{entry.profile!r} is not a profile of this cluster (profiles: {known})",
                         entry)
            for feature in entry.features:
                self.check_feature(f"{where}.features", feature, entry)
            try:
                names = hostlists.expand(entry.names)
            except hostlists.HostlistError as error:
                self.add(where, str(error), entry)
                continue
            addresses: list[str | None] = [None] * len(names)
            if entry.address is not None:
                try:
                    expanded = hostlists.expand(entry.address)
                except hostlists.HostlistError as error:
                    self.add(f"{where}.address", str(error), entry)
                else:
                    if len(expanded) != len(names):
                        self.add(f"{where}.address", f"{entry.address} gives {len(expanded)} addresses for "
                                                     f"{len(names)} nodes", entry)
                    else:
                        addresses = list(expanded)
                        bad = [a for a in dict.fromkeys(expanded) if not self._address_ok(a)]
                        for address in bad[:3]:
                            self.add(f"{where}.address", f"{address!r} is neither an IP address nor a DNS name", entry)
            bad_names = [n for n in names if not (NAME.match(n) and len(n) <= MAX_NAME
                                                   and n.lower() not in RESERVED_NODE_NAMES)]
            for name in bad_names[:3]:
                self.check_name(where, name, entry, "node")
            out.extend(zip([entry] * len(names), names, addresses))
        if not self.cluster.nodes:
            self.add("nodes", "no compute node is defined", self.cluster)
        return out

    @staticmethod
    def _address_ok(address: str) -> bool:
        try:
            ipaddress.ip_address(address)
            return True
        except ValueError:
            return bool(HOSTNAME.match(address))

    def check_node_identity(self, expanded: list[tuple[Nodes, str, str | None]]) -> None:
        first_by_name: dict[str, Nodes] = {}
        duplicates: dict[int, list[str]] = defaultdict(list)  # id(entry) -> names
        entries: dict[int, Nodes] = {}
        for entry, name, _ in expanded:
            if name in first_by_name:
                duplicates[id(entry)].append(name)
                entries[id(entry)] = entry
            else:
                first_by_name[name] = entry
        for key, names in duplicates.items():
            entry = entries[key]
            self.add(f"nodes[{entry.names}]", f"{_sample(names, self.version)} already defined "
                                              f"({self._origin_of(first_by_name[names[0]])})", entry)
        owner_of_address: dict[str, str] = {}
        address_of: dict[str, str] = {}
        for where, host in self.service_hosts():
            if host.address is not None:
                if address_of.setdefault(host.name, host.address) != host.address:
                    self.add(f"{where}.address", f"{host.name} is also given address {address_of[host.name]}", host)
                owner_of_address.setdefault(host.address, host.name)
        for entry, name, address in expanded:
            if address is None:
                continue
            known = address_of.get(name)
            if known is not None and known != address:
                self.add(f"nodes[{entry.names}].address", f"{name} has address {address} here but {known} as a "
                                                          "service host", entry)
            owner = owner_of_address.setdefault(address, name)
            if owner != name:
                self.add(f"nodes[{entry.names}].address", f"{address} of {name} is already the address of {owner}",
                         entry)

    @staticmethod
    def _origin_of(entry: Entry) -> str:
        return f"at {entry.origin}" if entry.origin else "earlier"

    # --- fabric ------------------------------------------------------------------------------------------------

    def check_fabric(self, known_nodes: Mapping[str, Nodes]) -> tuple[dict[str, list[str]], list[Switch], list[Switch]]:
        """Leaves of each node, and the leaf and spine switches as Slurm will see them."""
        fabric = self.cluster.fabric
        leaves_of: dict[str, list[str]] = defaultdict(list)
        for name, entry in known_nodes.items():
            if entry.leaf is not None:
                leaves_of[name].append(entry.leaf)
        if fabric is None:
            for entry in {id(e): e for e in known_nodes.values() if e.leaf is not None}.values():
                self.add(f"nodes[{entry.names}].leaf", f"names leaf {entry.leaf!r} but the cluster declares no fabric",
                         entry)
            return leaves_of, [], []

        seen: dict[str, Entry] = {}
        for kind, switch in [("leaves", s) for s in fabric.leaves] + [("spines", s) for s in fabric.spines]:
            where = f"fabric.{kind}[{switch.name}]"
            if self.check_name(where, switch.name, switch, "switch") and switch.name in seen:
                self.add(where, f"a switch of this name is already defined ({self._origin_of(seen[switch.name])})",
                         switch)
            seen.setdefault(switch.name, switch)
        leaf_names = {leaf.name for leaf in fabric.leaves}

        for entry in {id(e): e for e in known_nodes.values() if e.leaf is not None}.values():
            if entry.leaf not in leaf_names:
                self.add(f"nodes[{entry.names}].leaf", f"{entry.leaf!r} is not a leaf of the fabric", entry)

        leaves: list[Switch] = []
        for leaf in fabric.leaves:
            where = f"fabric.leaves[{leaf.name}].nodes"
            members: list[str] = []
            if leaf.nodes is not None:
                try:
                    members = hostlists.expand(leaf.nodes)
                except hostlists.HostlistError as error:
                    self.add(where, str(error), leaf)
            unknown = [n for n in members if n not in known_nodes]
            if unknown:
                self.add(where, f"{_sample(unknown, self.version)} {'is' if len(unknown) == 1 else 'are'} not "
                                f"{'a node' if len(unknown) == 1 else 'nodes'} of this cluster", leaf)
            for name in members:
                if name in known_nodes and leaf.name not in leaves_of[name]:
                    leaves_of[name].append(leaf.name)
        by_leaf: dict[str, list[str]] = defaultdict(list)
        for name, names in leaves_of.items():
            for leaf_name in names:
                by_leaf[leaf_name].append(name)
        for leaf in fabric.leaves:
            members = sorted(by_leaf.get(leaf.name, ()), key=hostlists.natural_key)
            if not members:
                self.add(f"fabric.leaves[{leaf.name}]", "no node hangs off this leaf", leaf)
            leaves.append(Switch(leaf.name, nodes=tuple(members)))

        under_none: dict[int, list[str]] = defaultdict(list)
        under_many: dict[int, list[str]] = defaultdict(list)
        entry_of: dict[int, Nodes] = {}
        for name, entry in known_nodes.items():
            count = len(leaves_of.get(name, ()))
            if count == 0:
                under_none[id(entry)].append(name)
            elif count > 1 and not fabric.rail_optimized:
                under_many[id(entry)].append(name)
            entry_of[id(entry)] = entry
        for key, names in under_none.items():
            entry = entry_of[key]
            self.add(f"nodes[{entry.names}]", f"{_sample(names, self.version)} {'is' if len(names) == 1 else 'are'} "
                                              "under no leaf switch", entry)
        for key, names in under_many.items():
            entry = entry_of[key]
            first = names[0]
            self.add(f"nodes[{entry.names}]", f"{_sample(names, self.version)} {'is' if len(names) == 1 else 'are'} "
                                              f"under several leaves ({first}: {', '.join(leaves_of[first])}); "
                                              "set fabric.rail_optimized=True if each node is cabled to one leaf "
                                              "per rail", entry)

        spines: list[Switch] = []
        children_of: dict[str, list[str]] = {}
        parents: Counter[str] = Counter()
        for spine in fabric.spines:
            where = f"fabric.spines[{spine.name}].switches"
            try:
                children = list(dict.fromkeys(hostlists.expand(spine.switches)))
            except hostlists.HostlistError as error:
                self.add(where, str(error), spine)
                children = []
            unknown = [c for c in children if c not in seen]
            if unknown:
                self.add(where, f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not "
                                f"{'a switch' if len(unknown) == 1 else 'switches'} of the fabric", spine)
            children = [c for c in children if c in seen]
            if not children:
                self.add(f"fabric.spines[{spine.name}]", "no switch is below this spine", spine)
            children_of.setdefault(spine.name, children)
            parents.update(children)
            spines.append(Switch(spine.name, switches=tuple(children)))
        if self.check_tree(children_of):
            self.check_connected(leaves, children_of)
        if fabric.spines:
            for leaf in fabric.leaves:
                if parents[leaf.name] == 0:
                    self.add(f"fabric.leaves[{leaf.name}]", "is below no spine: an orphan switch, jobs could not span "
                                                            "it and the rest of the fabric", leaf)
        return leaves_of, leaves, spines

    def check_connected(self, leaves: list[Switch], children_of: Mapping[str, list[str]]) -> None:
        """topology/tree places a job only below one switch: some switch must be above every node."""
        fabric = self.cluster.fabric
        assert fabric is not None
        nodes_of: dict[str, frozenset[str]] = {leaf.name: frozenset(leaf.nodes) for leaf in leaves}

        def reach(name: str) -> frozenset[str]:
            if name not in nodes_of:
                nodes_of[name] = frozenset().union(*(reach(c) for c in children_of.get(name, ())))
            return nodes_of[name]

        everyone = frozenset().union(*(reach(name) for name in [*nodes_of, *children_of]))
        widest = max(nodes_of, key=lambda n: (len(nodes_of[n]), n), default=None)
        if fabric.disconnected or widest is None or len(nodes_of[widest]) == len(everyone):
            return
        self.add("fabric", f"no switch is above every node (the widest, {widest}, reaches {len(nodes_of[widest])} of "
                           f"{len(everyone)}): jobs could not span the cluster; add a spine above the others, or set "
                           "fabric.disconnected=True if that is intended", fabric)

    def check_tree(self, children_of: Mapping[str, list[str]]) -> bool:
        """Whether the switches form a tree Slurm accepts (no cycle, not too deep); problems are recorded."""
        before = len(self.problems)
        state: dict[str, int] = {}  # 1 = on the current path, 2 = done
        depth: dict[str, int] = {}
        reported: set[str] = set()

        def visit(name: str, path: list[str]) -> int:
            if state.get(name) == 1:
                cycle = path[path.index(name):] + [name]
                key = min(cycle[:-1])
                if key not in reported:
                    reported.add(key)
                    spine = next(s for s in self.cluster.fabric.spines if s.name == path[-1])  # type: ignore[union-attr]
                    self.add(f"fabric.spines[{path[-1]}].switches", f"switch cycle {' -> '.join(cycle)}", spine)
                return 0
            if state.get(name) == 2:
                return depth[name]
            state[name] = 1
            below = [visit(child, path + [name]) for child in children_of.get(name, ())]
            state[name] = 2
            depth[name] = 1 + max(below, default=0)
            return depth[name]

        for name in children_of:
            if visit(name, []) > MAX_TREE_DEPTH:
                self.add(f"fabric.spines[{name}]", f"the tree below is deeper than the {MAX_TREE_DEPTH} levels "
                                                   "topology/tree accepts", self.cluster.fabric)
        return len(self.problems) == before

    # --- partitions --------------------------------------------------------------------------------------------

    def check_partitions(self, known_nodes: Mapping[str, Nodes], node_profile: Mapping[str, str],
                         profiles: Mapping[str, Profile]) -> list[MemberPartition]:
        partitions = self.cluster.partitions
        out: list[MemberPartition] = []
        seen: dict[str, Entry] = {}
        qos_names = {q.name for q in self.cluster.accounting.qos} | {"normal"}
        for part in partitions:
            where = f"partitions[{part.name}]"
            if self.check_name(where, part.name, part, "partition") and part.name in seen:
                self.add(where, f"a partition of this name is already defined ({self._origin_of(seen[part.name])})",
                         part)
            seen.setdefault(part.name, part)
            members: list[str] = []
            if part.nodes is not None:
                try:
                    listed = hostlists.expand(part.nodes)
                except hostlists.HostlistError as error:
                    self.add(f"{where}.nodes", str(error), part)
                    listed = []
                unknown = [n for n in listed if n not in known_nodes]
                if unknown:
                    self.add(f"{where}.nodes", f"{_sample(unknown, self.version)} "
                                               f"{'is not a node' if len(unknown) == 1 else 'are not nodes'} of this "
                                               "cluster", part)
                members.extend(n for n in listed if n in known_nodes)
            for profile in part.profiles:
                if profile not in profiles:
                    self.add(f"{where}.profiles", f"{profile!r} is not a profile of this cluster", part)
                else:
                    members.extend(n for n, p in node_profile.items() if p == profile)
            members = sorted(dict.fromkeys(members), key=hostlists.natural_key)
            if not members:
                if part.nodes is None and not part.profiles:
                    self.add(where, "has no nodes: give nodes= or profiles=", part)
                elif not any(p.where.startswith(where) for p in self.problems):
                    self.add(where, "has no nodes", part)
            for field in ("max_time", "default_time"):
                value = getattr(part, field)
                if value is not None and slurm_time_seconds(value) is None:
                    self.add(f"{where}.{field}", f"{value!r} is not a Slurm time (minutes, 'HH:MM:SS', 'D-HH:MM:SS' "
                                                 "or 'UNLIMITED')", part)
            if part.max_time and part.default_time:
                longest, default = slurm_time_seconds(part.max_time), slurm_time_seconds(part.default_time)
                if longest is not None and default is not None and default > longest:
                    self.add(f"{where}.default_time", f"{part.default_time} is longer than max_time {part.max_time}",
                             part)
            for field in ("max_nodes", "def_mem_per_gpu", "def_cpu_per_gpu"):
                value = getattr(part, field)
                if value is not None and value <= 0:
                    self.add(f"{where}.{field}", f"must be positive, not {value}", part)
            for qos in (part.qos, *part.allow_qos):
                if qos is not None and qos not in qos_names:
                    self.add(f"{where}.qos", f"{qos!r} is not a QOS of accounting.qos", part)
            out.append(MemberPartition(part, tuple(members)))

        defaults = [p for p in partitions if p.default]
        if partitions and not defaults:
            self.add("partitions", "no partition is the default: set default=True on one", self.cluster)
        if len(defaults) > 1:
            self.add("partitions", f"{len(defaults)} partitions are the default ("
                                   f"{', '.join(p.name for p in defaults)}): keep one", defaults[1])
        if not partitions:
            self.add("partitions", "no partition is defined", self.cluster)

        by_name = {p.name: p for p in partitions}
        for part in partitions:
            for target in part.preempts:
                where = f"partitions[{part.name}].preempts"
                other = by_name.get(target)
                if other is None:
                    self.add(where, f"{target!r} is not a partition of this cluster", part)
                elif other is part:
                    self.add(where, "a partition cannot preempt itself", part)
                elif other.priority_tier >= part.priority_tier:
                    self.add(where, f"preempting {target} needs a higher priority_tier than its "
                                    f"{other.priority_tier}; this partition has {part.priority_tier}", part)
        # preempt/partition_prio lets every higher-tier partition preempt a preemptable one it shares nodes with.
        members = {m.spec.name: set(m.nodes) for m in out}
        preemptable = {target for p in partitions for target in p.preempts if target in by_name}
        for part in partitions:
            for target in sorted(preemptable - {part.name} - set(part.preempts)):
                other = by_name[target]
                if part.priority_tier > other.priority_tier and members.get(part.name, set()) & members[target]:
                    self.add(f"partitions[{part.name}]", f"priority_tier {part.priority_tier} is above preemptable "
                                                         f"{target}'s and they share nodes, so its jobs would preempt "
                                                         f"{target}'s: add {target!r} to preempts or lower the tier",
                             part)
        return out

    # --- accounting --------------------------------------------------------------------------------------------

    def check_accounting(self) -> None:
        acct = self.cluster.accounting
        for field, value in acct.weights.model_dump().items():
            if value < 0:
                self.add(f"accounting.weights.{field}", f"must not be negative, not {value}", acct.weights)
        if slurm_time_seconds(acct.decay_half_life) is None:
            self.add("accounting.decay_half_life", f"{acct.decay_half_life!r} is not a Slurm time", acct)
        for value in acct.enforce:
            if value not in ENFORCE_VALUES:
                self.add("accounting.enforce", f"{value!r} is not one of {', '.join(sorted(ENFORCE_VALUES))}", acct)
        names = Counter(q.name for q in acct.qos)
        for qos in acct.qos:
            where = f"accounting.qos[{qos.name}]"
            self.check_name(where, qos.name, qos, "QOS")
            if names[qos.name] > 1:
                self.add(where, "defined more than once", qos)
                names[qos.name] = 0
            for target in qos.preempt:
                if target not in names and target != "normal":
                    self.add(f"{where}.preempt", f"{target!r} is not a QOS of accounting.qos", qos)
            if qos.max_wall is not None and slurm_time_seconds(qos.max_wall) is None:
                self.add(f"{where}.max_wall", f"{qos.max_wall!r} is not a Slurm time", qos)

    # --- NFS ---------------------------------------------------------------------------------------------------

    def check_nfs(self) -> None:
        nfs = self.cluster.nfs
        if nfs is None:
            return
        paths = Counter(e.path for e in nfs.exports)
        for export in nfs.exports:
            where = f"nfs.exports[{export.path}]"
            if not export.path.startswith("/"):
                self.add(where, "an export path must be absolute", export)
            if paths[export.path] > 1:
                self.add(where, "exported more than once", export)
                paths[export.path] = 0
        exported = {e.path for e in nfs.exports}
        for mount in nfs.mounts:
            where = f"nfs.mounts[{mount.mount_point}]"
            if mount.export not in exported:
                self.add(f"{where}.export", f"{mount.export!r} is not one of nfs.exports", mount)
            if not mount.mount_point.startswith("/"):
                self.add(where, "a mount point must be absolute", mount)

    # --- config overrides --------------------------------------------------------------------------------------

    def check_overrides(self, field: str, overrides: Mapping[str, object], table: KeyTable,
                        owned: Mapping[str, str]) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for key, value in overrides.items():
            where = f"{field}[{key}]"
            canonical = table.lookup(key)
            if canonical is None:
                close = get_close_matches(key, table.canonical.values(), n=1, cutoff=0.75)
                hint = f"; did you mean {close[0]}?" if close else ""
                self.add(where, f"not a {table.file} key in Slurm {self.version}: the daemons would refuse to start"
                                f"{hint}", self.cluster)
                continue
            if table.is_defunct(canonical):
                self.add(where, f"defunct in Slurm {self.version}: Slurm ignores it, remove it", self.cluster)
                continue
            if canonical in owned:
                self.add(where, f"set by the inventory ({owned[canonical]}); change that instead", self.cluster)
                continue
            if canonical in out:
                self.add(where, f"given twice (also as {canonical})", self.cluster)
                continue
            if value is None:
                out[canonical] = None
            elif isinstance(value, bool):
                out[canonical] = "yes" if value else "no"
            else:
                text = str(value)
                if not text or "\n" in text or "#" in text:
                    self.add(where, f"{text!r} cannot be written on one line of {table.file}", self.cluster)
                    continue
                out[canonical] = text
        return out


def validate(cluster: Cluster, version: SlurmVersion | None = None) -> ValidCluster:
    """Check every rule; return the resolved cluster or raise InventoryError listing every problem."""
    if version is None:
        try:
            version = SlurmVersion.parse(cluster.slurm_version)
        except ClusterforgeError as error:
            raise InventoryError([Problem("slurm_version", str(error), cluster.origin)]) from None
    check = _Checker(cluster, version)
    check.check_cluster()
    profiles = check.check_profiles()
    expanded = check.expand_nodes(profiles)
    check.check_node_identity(expanded)
    known_nodes: dict[str, Nodes] = {}
    address_of: dict[str, str | None] = {}
    for entry, name, address in expanded:
        known_nodes.setdefault(name, entry)
        address_of.setdefault(name, address)
    leaves_of, leaves, spines = check.check_fabric(known_nodes)
    node_profile = {name: entry.profile for name, entry in known_nodes.items()}
    partitions = check.check_partitions(known_nodes, node_profile, profiles)
    check.check_accounting()
    check.check_nfs()
    check.check_setup(expanded)
    slurm_extra = check.check_overrides("slurm_conf_extra", cluster.slurm_conf_extra, slurm_conf_keys(version),
                                        SLURM_CONF_OWNED)
    cgroup_extra = check.check_overrides("cgroup_conf_extra", cluster.cgroup_conf_extra, cgroup_conf_keys(version), {})
    if check.problems:
        raise InventoryError(check.problems)

    nodes = []
    for name in sorted(known_nodes, key=hostlists.natural_key):
        entry = known_nodes[name]
        profile = profiles[entry.profile]
        features = tuple(dict.fromkeys((profile.name, *profile.features, *entry.features)))
        nodes.append(Node(name, address_of[name], profile, features, tuple(leaves_of.get(name, ()))))
    return ValidCluster(cluster, version, tuple(nodes), tuple(partitions), tuple(leaves), tuple(spines),
                        slurm_extra, cgroup_extra)
