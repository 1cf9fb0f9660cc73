"""The resolve stage: check every rule, then derive, once, every fact the renderers, roles and CLI read.

    valid = resolve(cluster)                 # for the inventory's Slurm release
    valid = resolve(cluster, v("24.11"))     # for another one

Raises InventoryError listing every problem. The result is cached per cluster object (clusters hash by identity),
so every host of a deploy run, and every command, shares one resolved cluster; the cache keeps the two most recent
(a deploy or a command needs one), since a resolved cluster of 50,000 nodes is tens of MiB.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType

from .. import hostlists
from ..admission.tests import entries as tests_of
from ..errors import ClusterforgeError, InventoryError, Problem, for_pyinfra
from ..versions import TOPOLOGY_YAML, SlurmVersion
from . import settings
from .cluster import Cluster
from .containers import Containers
from .digest import inventory_digest
from .fabric import Fabric
from .gather import LeftOut, gather
from .hardware import Profile
from .hosts import Host, HostGroup
from .nodes import Nodes
from .resolved import (
    AdmissionPlan,
    ContainerSetup,
    EnrootPaths,
    GpuGroup,
    Hardware,
    HealthSetup,
    Machine,
    MemberPartition,
    Node,
    NodeBmc,
    RepairPolicy,
    RepairSetup,
    RestSetup,
    SlurmFile,
    StackSetup,
    Switch,
    Topology,
    ValidCluster,
)
from .rules import (
    accounting,
    admission,
    accounts,
    blocks,
    configless,
    containers,
    fabric,
    hardware,
    health,
    hosts,
    identity,
    overrides,
    partitions,
    rails,
    repair,
    rest,
    setup,
    stack,
    topologies,
    vault,
)
from .rules.check import Check

PYXIS_CONF = "plugstack.conf.d/pyxis.conf"
SLURM_FILES = ("slurm.conf", "gres.conf", "cgroup.conf", "topology.conf", PYXIS_CONF)
TOPOLOGY_YAML_FILE = "topology.yaml"
PYXIS_DIR = "/usr/local/lib/clusterforge"


def resolve(cluster: Cluster, version: SlurmVersion | None = None) -> ValidCluster:
    """The checked, resolved cluster for its own Slurm release or ``version``; raises InventoryError."""
    try:
        return _checked(cluster, version)
    except ClusterforgeError as error:
        raise for_pyinfra(error) from None


@lru_cache(maxsize=2)
def _checked(cluster: Cluster, version: SlurmVersion | None) -> ValidCluster:
    """Type mistakes kept by entries built while deferring (``base.deferring``) reported with the rules' problems
    on the rest of the cluster; a rule's problem at a wrong field only repeats it, and is left out."""
    gathered = gather(cluster)
    if not gathered.problems:
        return _resolve(cluster, version, LeftOut())
    found: tuple[Problem, ...] = ()
    if gathered.cluster is not None:
        try:
            _resolve(gathered.cluster, version, gathered.left_out)
        except InventoryError as error:
            found = error.problems
    repeated = gathered.wrong_fields
    found = tuple(p for p in found if not any(p.where == w or p.where.startswith((w + ".", w + "[")) for w in repeated))
    raise InventoryError([*gathered.problems, *found])


@lru_cache(maxsize=2)
def _resolve(cluster: Cluster, version: SlurmVersion | None, left_out: LeftOut) -> ValidCluster:
    if version is None:
        try:
            version = SlurmVersion.parse(cluster.slurm_version)
        except ClusterforgeError as error:
            raise InventoryError([Problem("slurm_version", str(error), cluster.origin_of("slurm_version"))]) from None
    check = Check(cluster, version, left_out)
    hosts.cluster_hosts(check)
    overrides.release(check)
    profiles, device_files = hardware.profiles(check)
    expanded = hosts.expand_nodes(check, profiles)
    hosts.node_identity(check, expanded)
    known: dict[str, Nodes] = {}
    address_of: dict[str, str | None] = {}
    for entry, name, address in expanded:
        known.setdefault(name, entry)
        address_of.setdefault(name, address)
    before = len(check.problems)
    leaves, spines = fabric.fabric(check, known)
    topology = _topology(cluster.fabric, leaves, spines) if cluster.fabric is not None else None
    blocks.blocks(check, topology if len(check.problems) == before else None)
    more = [_block_topology(spec.name, spec.block_sizes, units)
            for spec, units in topologies.topologies(check, known)]
    more += [_block_topology(profile.name, (), units)
             for profile, units in topologies.nvlink_topologies(check, profiles, expanded)]
    every_topology = ((topology,) if topology is not None else ()) + tuple(more)
    topologies.partition_topologies(check, _topology_names(cluster, profiles))
    rails.rails(check, leaves)
    members, preemptable = partitions.partitions(check, known, profiles)
    gpu_types = [p.gpus.type for p in profiles.values() if p.gpus is not None]
    accounting.accounting(check, gpu_types)
    account_tree = accounts.accounts(check, accounting.cluster_tres(gpu_types))
    hosts.nfs(check)
    hosts.monitoring(check, expanded)
    rest.rest(check)
    setup.setup(check, expanded)
    containers.containers(check)
    health.health(check)
    admission.admission(check, _rail_hcas(cluster), members, {n: e.profile for n, e in known.items()})
    stack.stack(check)
    vault.vault(check)
    bmc_of = repair.bmcs(check, expanded)
    repair.repair(check, expanded, bmc_of)
    slurm_extra = overrides.slurm_conf_extra(check)
    cgroup_extra = overrides.cgroup_conf_extra(check)
    identity.identity(check, slurm_extra)
    configless.configless(check)
    if check.problems or left_out.entries:  # nothing is derived from a cluster with entries left out
        raise InventoryError(check.problems)
    assert cluster.controller is not None and cluster.database is not None  # checked above

    hardware_of = {name: _hardware(profile, device_files.get(name, ()), known) for name, profile in profiles.items()}
    bmcs = {name: NodeBmc(spec, address) for name, (spec, address) in bmc_of.items()}
    nodes = tuple(_node(name, address_of[name], known[name], hardware_of[known[name].profile], bmcs.get(name))
                  for name in sorted(known, key=hostlists.natural_key))
    resolved_partitions = _partitions(members, preemptable, profiles, known)
    modes = [p.preempt_mode for p in resolved_partitions if p.preemptable and p.preempt_mode]
    return ValidCluster(
        name=cluster.name, version=version, auth=cluster.auth,
        controller=cluster.controller, backup_controller=cluster.backup_controller, database=cluster.database,
        login=cluster.login, nfs=cluster.nfs, setup=cluster.setup, accounting=cluster.accounting, vault=cluster.vault,
        acceptance=cluster.acceptance, disruption_budget=cluster.disruption_budget,
        accounts=account_tree,
        hardware=tuple(hardware_of.values()),
        nodes=nodes,
        partitions=resolved_partitions,
        topology=topology,
        slurm_conf=settings.slurm_conf(cluster, version, topology.plugin if topology else None, gpu_types, modes,
                                       slurm_extra),
        cgroup_conf=settings.cgroup_conf(version, cgroup_extra),
        topologies=every_topology,
        slurm_files=tuple(SlurmFile(name, _has(name, _topology_file(version, every_topology),
                                               cluster.containers is not None))
                          for name in SLURM_FILES + (TOPOLOGY_YAML_FILE,) * (version >= TOPOLOGY_YAML)),
        machines=_machines(cluster, nodes),
        health=HealthSetup(cluster.health, _rail_hcas(cluster)) if cluster.health.enabled and nodes else None,
        containers=(_containers(cluster.containers, cluster.profiles, version)
                    if cluster.containers is not None else None),
        stack=_stack(cluster, hardware_of),
        monitoring=cluster.monitoring,
        rest=RestSetup(cluster.rest, _rest_host(cluster)) if cluster.rest is not None else None,
        admission=_admission(hardware_of.values(), _rail_hcas(cluster)),
        identity=cluster.identity,
        repair=_repair(cluster, hardware_of.values(), bmcs),
        configless=cluster.configless,
        inventory_digest=inventory_digest(cluster),
    )


def _rail_hcas(cluster: Cluster) -> tuple[str, ...]:
    """The HCAs every node has besides its profile's: one per rail of a rail-optimized fabric, where named."""
    return tuple(dict.fromkeys(r.hca for r in cluster.fabric.rails if r.hca)) if cluster.fabric is not None else ()


def _admission(hardware: Iterable[Hardware], rail_hcas: tuple[str, ...]) -> Mapping[str, AdmissionPlan]:
    """Each node of a profile with admission -> its profile's plan, the floors filled in once."""
    plans: dict[str, AdmissionPlan] = {}
    for found in hardware:
        spec, gpus = found.profile.admission, found.profile.gpus
        if spec is None or gpus is None or not found.nodes:
            continue
        floors = admission.floors(spec, gpus.type)
        hcas = admission.hcas(found.profile, rail_hcas)
        tests = tests_of(spec.tests, bin_dir=spec.programs.bin_dir, image=spec.programs.image, gpus=gpus.count,
                         hcas=hcas, dcgm_level=spec.dcgm_level, floors=floors, budget=spec.budget,
                         ib_cuda=spec.ib_write_bw_cuda, cpus=found.profile.cpus)
        plan = AdmissionPlan(found.name, spec, MappingProxyType(floors), hcas,
                             tuple(MappingProxyType(t) for t in tests))
        plans.update(dict.fromkeys(found.nodes, plan))
    return MappingProxyType(plans)


def _rest_host(cluster: Cluster) -> Host:
    """slurmrestd's host as the cluster names it (with its address), the controller unless the inventory says."""
    assert cluster.rest is not None and cluster.controller is not None
    name = cluster.rest.host.name if cluster.rest.host is not None else cluster.controller.name
    named = [h for h in (cluster.controller, cluster.backup_controller, cluster.database, *cluster.login)
             if h is not None and h.name == name]
    return next((h for h in named if h.address is not None), named[0])


def _stack(cluster: Cluster, hardware_of: Mapping[str, Hardware]) -> StackSetup | None:
    shared = cluster.stack.gpu if cluster.stack is not None else None
    gpu = MappingProxyType({name: own for name, h in hardware_of.items() if h.nodes and h.profile.gpus is not None
                            for own in [h.profile.gpu_stack or shared] if own is not None})
    if cluster.stack is None and not gpu:
        return None
    return StackSetup(cluster.stack.slurm if cluster.stack else None,
                      cluster.stack.repository if cluster.stack else None, gpu)


def _topology_file(version: SlurmVersion, every_topology: tuple[Topology, ...]) -> str | None:
    """The one file the hosts get the topologies in, None without any: topology.yaml from 25.05, topology.conf
    before. The other is removed: from 25.05 a topology.yaml left on a host would silently replace topology.conf,
    and a stale topology.conf beside topology.yaml would mislead whoever reads it."""
    if not every_topology:
        return None
    return TOPOLOGY_YAML_FILE if version >= TOPOLOGY_YAML else "topology.conf"


def _has(name: str, topology_file: str | None, containers: bool) -> bool:
    if name in ("topology.conf", TOPOLOGY_YAML_FILE):
        return name == topology_file
    return containers if name == PYXIS_CONF else True


def _topology_names(cluster: Cluster, profiles: Mapping[str, Profile]) -> tuple[str, ...]:
    """The names a partition's Topology= may give: the fabric's first (the cluster's default), then the others, the
    profiles' NVLink topologies last."""
    fabric = (cluster.fabric.topology,) if cluster.fabric is not None else ()
    nvlink = tuple(name for name, profile in profiles.items() if profile.nvlink_domain is not None)
    return fabric + tuple(spec.name for spec in cluster.topologies) + nvlink


def _containers(spec: Containers, profiles: Sequence[Profile], version: SlurmVersion) -> ContainerSetup:
    enroot = spec.enroot
    paths = {}
    for profile in profiles:
        # On a node-local disk where the profile has one: container root filesystems are large and hot.
        base = f"{profile.local_disk.rstrip('/')}/enroot" if profile.local_disk else None
        data = enroot.data_path or (f"{base}/data/user-$(id -u)" if base else "/tmp/enroot-data/user-$(id -u)")
        cache = enroot.cache_path or (f"{base}/cache/group-$(id -g)" if base
                                      else "/var/lib/enroot/cache/group-$(id -g)")
        temp = enroot.temp_path or (f"{base}/tmp" if base else "/tmp")
        places = (enroot.runtime_path, data, cache, temp)
        shared = sorted({posixpath.dirname(p) if "$" in p else p for p in places} - {"/", "/tmp", "/var/tmp"})
        paths[profile.name] = EnrootPaths(enroot.runtime_path, data, cache, temp, tuple(shared))
    return ContainerSetup(spec, MappingProxyType(paths),
                          f"{PYXIS_DIR}/pyxis-{spec.pyxis.version}-slurm-{version}/spank_pyxis.so")


def _hardware(profile: Profile, files: tuple[str, ...], known: Mapping[str, Nodes]) -> Hardware:
    names = tuple(sorted((n for n, e in known.items() if e.profile == profile.name), key=hostlists.natural_key))
    gpus = profile.gpus
    if gpus is None or not files:
        return Hardware(profile, (), (), names)
    socket_of = {gpu: socket for socket, indices in gpus.sockets.items() for gpu in indices}
    by_socket: dict[int | None, list[str]] = {}
    for index, file in enumerate(files):
        by_socket.setdefault(socket_of.get(index), []).append(file)
    groups = []
    for socket in sorted(by_socket, key=lambda s: (s is None, s)):
        # Slurm's logical core indices of the socket: all its cores, never hyperthread ids.
        cores = (f"{socket * profile.cores_per_socket}-{(socket + 1) * profile.cores_per_socket - 1}"
                 if socket is not None else None)
        groups.append(GpuGroup(socket, tuple(by_socket[socket]), cores))
    return Hardware(profile, files, tuple(groups), names)


def _node(name: str, address: str | None, entry: Nodes, hardware: Hardware, bmc: NodeBmc | None) -> Node:
    profile = hardware.profile
    features = tuple(dict.fromkeys((profile.name, *profile.features, *entry.features)))
    return Node(name, address, profile, features, hardware.device_files, bmc)


def _repair(cluster: Cluster, hardware: Iterable[Hardware], bmcs: Mapping[str, NodeBmc]) -> RepairSetup | None:
    """The profiles repaired automatically (mode observe or on) with every default filled in; None where none is."""
    policies = []
    for found in hardware:
        spec = found.profile.repair
        if spec is None or spec.mode == "off":
            continue
        power_cycle = repair.power_cycles(spec, sum(1 for n in found.nodes if n in bmcs))
        policies.append(RepairPolicy(found.name, spec, power_cycle,
                                     MappingProxyType(repair.bounds(spec, cluster.health)),
                                     found.profile.admission is not None, found.nodes))
    if not policies:
        return None
    xid = {number: "reboot" if action == "drain" else action for number, action in sorted(cluster.health.xid.items())}
    cycled = {name: bmcs[name] for policy in policies if policy.power_cycle for name in policy.nodes if name in bmcs}
    return RepairSetup(tuple(policies), repair.budget(cluster), cluster.repair_breaker, MappingProxyType(xid),
                       MappingProxyType(dict(sorted(cycled.items()))))


def _partitions(members: partitions.Members, preemptable: set[str], profiles: Mapping[str, Profile],
                known: Mapping[str, Nodes]) -> tuple[MemberPartition, ...]:
    out = []
    for part, names in members:
        hardware = [profiles[p] for p in dict.fromkeys(known[n].profile for n in names)]
        with_gpus = [p for p in hardware if p.gpu_count]
        mode = part.preempt_mode.upper() if part.name in preemptable else "OFF"
        out.append(MemberPartition(
            spec=part, nodes=names, preemptable=part.name in preemptable,
            preempt_mode=mode if preemptable else None,  # type: ignore[arg-type]
            # The smallest member decides, so a job given the default fits on every node of the partition.
            def_mem_per_cpu=part.def_mem_per_cpu or min(p.real_memory // p.cpus for p in hardware),
            def_mem_per_gpu=part.def_mem_per_gpu or min((p.real_memory // p.gpu_count for p in with_gpus),
                                                        default=None),
            # None where a node has fewer CPUs than GPUs: a GPU job then takes what it asks for, nothing more.
            def_cpu_per_gpu=part.def_cpu_per_gpu or (min(p.cpus // p.gpu_count for p in with_gpus) or None
                                                     if with_gpus else None),
            qos=part.qos.lower() if part.qos else None, allow_qos=tuple(q.lower() for q in part.allow_qos),
        ))
    return tuple(out)


def _topology(spec: Fabric, leaves: list[Switch], spines: list[Switch]) -> Topology:
    """On a rail-optimized fabric every node hangs off one leaf per rail; the leaves that carry the same nodes are
    one scheduling unit, so they become one switch (or block) named after the first of them."""
    if spec.rail_optimized:
        kept: dict[tuple[str, ...], Switch] = {}
        renamed: dict[str, str] = {}
        for leaf in leaves:
            renamed[leaf.name] = kept.setdefault(leaf.nodes, leaf).name
        leaves = list(kept.values())
        spines = [Switch(s.name, switches=tuple(dict.fromkeys(renamed.get(c, c) for c in s.switches)))
                  for s in spines]
    sizes = (spec.block_sizes or _default_block_sizes(leaves)) if spec.plugin == "block" else ()
    return Topology(tuple(leaves), tuple(spines), spec.rail_optimized, spec.plugin, sizes, spec.topology)


def _block_topology(name: str, block_sizes: tuple[int, ...], blocks: tuple[Switch, ...]) -> Topology:
    """A block topology of the inventory (a BlockTopology, or a profile's NVLink domains), as the fabric's blocks
    are resolved: its blocks as leaves, in order."""
    return Topology(blocks, (), False, "block", block_sizes or _default_block_sizes(blocks), name)


# Slurm's own default without BlockSizes: aggregation levels 0-4, i.e. up to 16 blocks (every release).
DEFAULT_BLOCK_LEVELS = 4


def _default_block_sizes(units: Sequence[Switch]) -> tuple[int, ...]:
    """Slurm's default, written out: its base is the first block's size, fatal where a later block is smaller
    (24.05, 24.11), so the smallest block's size is taken instead; sizes stop at the first covering every block,
    where Slurm stops aggregating."""
    base = min((len(unit.nodes) for unit in units), default=0)
    if not base:
        return ()
    levels = min(DEFAULT_BLOCK_LEVELS, (len(units) - 1).bit_length())
    return tuple(base << level for level in range(levels + 1))


def _machines(cluster: Cluster, nodes: Sequence[Node]) -> tuple[Machine, ...]:
    """Service hosts first (controller, backup, database, login, NFS server, monitoring), then compute nodes in name
    order; a host that serves several purposes, a controller that also runs jobs included, appears once with all its
    groups (slurmrestd's host, always one of the Slurm service hosts, has "rest" among them)."""
    order: dict[str, tuple[str | None, list[HostGroup], Node | None]] = {}

    def add(name: str, address: str | None, group: HostGroup, node: Node | None = None) -> None:
        known = order.setdefault(name, (address, [], node))
        if group not in known[1]:
            known[1].append(group)
        if node is not None:
            order[name] = (known[0] or address, known[1], node)

    for host in (cluster.controller, cluster.backup_controller):
        if host is not None:
            add(host.name, host.address, "controller")
    if cluster.database is not None:
        add(cluster.database.name, cluster.database.address, "database")
    for host in cluster.login:
        add(host.name, host.address, "login")
    if cluster.nfs is not None:
        add(cluster.nfs.server.name, cluster.nfs.server.address, "nfs")
    if cluster.monitoring is not None:
        add(cluster.monitoring.host.name, cluster.monitoring.host.address, "monitoring")
    if cluster.rest is not None and cluster.controller is not None:
        rest_host = cluster.rest.host or cluster.controller
        add(rest_host.name, rest_host.address, "rest")
    for node in nodes:
        add(node.name, node.address, "compute", node)
    return tuple(Machine(name, address, tuple(groups), node) for name, (address, groups, node) in order.items())
