"""The resolved cluster: what renderers, roles, the CLI and the tests read, built once by ``resolve``.

Every fact derived from the inventory is computed once, in ``model/resolve.py``, and kept here: node names and
addresses expanded, each profile's GPU device files by socket, the switch tree as Slurm sees it, partition members
and preemption, the effective slurm.conf and cgroup.conf settings, which Slurm files exist, every host with its
groups. Nothing here is a pydantic model: these are plain frozen records, and ValidCluster hashes by identity, so
work derived from one (a rendered file) can be cached with ``functools`` for as long as the object lives.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from ..versions import SlurmVersion
from .acceptance import Acceptance
from .admission import Admission
from .accounting import Account, Accounting
from .containers import AptRepository, Containers
from .hardware import Profile
from .health import Health
from .hosts import SLURM_GROUPS, Host, HostGroup, Nfs
from .identity import Identity
from .monitoring import Monitoring
from .partitions import Partition
from .repair import Bmc, Breaker, Repair
from .rest import Rest
from .setup import Setup
from .stack import GpuStack
from .vault import Vault


@dataclass(frozen=True, slots=True)
class GpuGroup:
    """GPUs of a profile that sit on one socket (None: not placed), with that socket's Slurm core indices."""

    socket: int | None
    files: tuple[str, ...]
    cores: str | None


@dataclass(frozen=True, slots=True)
class Hardware:
    """A profile with what follows from it: GPU i's device file, the GPUs by socket, its nodes."""

    profile: Profile
    device_files: tuple[str, ...]
    gpu_groups: tuple[GpuGroup, ...]
    nodes: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.profile.name


@dataclass(frozen=True, slots=True)
class NodeBmc:
    """A node's BMC: the inventory's entry, with this node's own address out of its hostlist."""

    spec: Bmc
    address: str


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    address: str | None
    profile: Profile
    features: tuple[str, ...]
    device_files: tuple[str, ...]
    bmc: NodeBmc | None = None

    def __repr__(self) -> str:
        return f"Node({self.name}, {self.address or 'no address'}, profile {self.profile.name})"

    def to_json(self) -> dict[str, object]:
        """How ``pyinfra ... debug-inventory`` shows a compute host's node."""
        return {"name": self.name, "address": self.address, "profile": self.profile.name,
                "features": list(self.features), "device_files": list(self.device_files)}


@dataclass(frozen=True, slots=True)
class Switch:
    name: str
    nodes: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Topology:
    """The fabric as topology.conf gives it to Slurm: leaves (one per scheduling unit, so the leaves of one
    rail-optimized unit are merged), then the switches above them. With topology/block each leaf is a block, in
    inventory order, and the spines are not Slurm's business. A BlockTopology of the inventory is one too: its
    blocks as the leaves, no spines."""

    leaves: tuple[Switch, ...]
    spines: tuple[Switch, ...]
    rail_optimized: bool
    plugin: Literal["tree", "block"] = "tree"
    # topology/block only, in nodes: the base block size, then each larger size Slurm keeps a job within; the
    # inventory's, or Slurm's default written out.
    block_sizes: tuple[int, ...] = ()
    name: str = "default"  # its name in topology.yaml, which a partition's Topology= gives

    @property
    def blocks(self) -> tuple[Switch, ...]:
        return self.leaves if self.plugin == "block" else ()


PreemptMode = Literal["OFF", "REQUEUE", "CANCEL", "SUSPEND"]


@dataclass(frozen=True, slots=True)
class MemberPartition:
    spec: Partition
    nodes: tuple[str, ...]
    preemptable: bool
    preempt_mode: PreemptMode | None  # None: the cluster has no preemption, so no partition names a mode
    # Memory and CPUs a job gets when it asks for none, derived from the members' hardware unless the inventory
    # sets them; None where they do not apply (no GPUs).
    def_mem_per_cpu: int
    def_mem_per_gpu: int | None
    def_cpu_per_gpu: int | None
    # Its QOS named as Slurm keeps them, in lower case, however the inventory spells them.
    qos: str | None = None
    allow_qos: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True, slots=True)
class Machine:
    """One host of the cluster, once, with every group it belongs to."""

    name: str
    address: str | None
    groups: tuple[HostGroup, ...]
    node: Node | None = None

    @property
    def device_files(self) -> tuple[str, ...]:
        return self.node.device_files if self.node is not None else ()

    @property
    def runs_slurm(self) -> bool:
        return bool(SLURM_GROUPS & set(self.groups))

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "address": self.address, "groups": list(self.groups),
                "device_files": list(self.device_files)}


@dataclass(frozen=True, slots=True)
class EnrootPaths:
    """Where Enroot keeps its files on the nodes of one profile (a path may end in a per-user part, ``$(id -u)``),
    and the directories every user shares, created 1777 at every boot."""

    runtime: str
    data: str
    cache: str
    temp: str
    shared: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ContainerSetup:
    """The inventory's containers, with each profile's Enroot paths (its local disk applied)."""

    spec: Containers
    paths: Mapping[str, EnrootPaths]  # by profile name
    # Pyxis built for this Pyxis release and this Slurm release, in a directory named after both: a rebuild for
    # another release is a new file (never one overwritten under running jobs) and a new plugstack line.
    pyxis_library: str


@dataclass(frozen=True, slots=True)
class HealthSetup:
    """The inventory's node health check, with what every node of it is declared to have beyond its profile."""

    spec: Health
    # The RDMA devices every node has: one per rail of a rail-optimized fabric, where the rail names its HCA.
    hcas: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StackSetup:
    """What is pinned and held: Slurm's packages (at ``slurm``'s version where given) and each GPU profile's stack,
    its own or the cluster's."""

    slurm: str | None
    repository: AptRepository | None
    gpu: Mapping[str, GpuStack]  # by profile name: the profiles with GPUs that get one


@dataclass(frozen=True, slots=True)
class RestSetup:
    """The inventory's slurmrestd, with the host it runs on (the controller unless the inventory names another)."""

    spec: Rest
    host: Host

    @property
    def port(self) -> int:
        return self.spec.port

    @property
    def listen(self) -> str:
        return self.spec.listen


@dataclass(frozen=True, slots=True)
class AdmissionPlan:
    """What every node of one profile runs to be admitted: the inventory's entry, each floor its tests are held to
    (the GPU type's defaults filled in), its HCAs, and the tests as admission.json gives them
    (admission.tests.entries: what runs, its floors, its share of the budget)."""

    profile: str
    spec: Admission
    floors: Mapping[str, float]
    hcas: tuple[str, ...]
    tests: tuple[Mapping[str, Any], ...]

    @property
    def budget(self) -> int:
        return self.spec.budget


@dataclass(frozen=True, slots=True)
class RepairPolicy:
    """A profile's automatic repair, every default filled in: whether its nodes are power cycled (left to the
    BMCs, where any node of it has one), each action's bound in seconds (reset, reboot, power_cycle), whether a
    repaired node passes the admission gate first (the profile has admission), and its nodes in name order."""

    profile: str
    spec: Repair
    power_cycle: bool
    bounds: Mapping[str, int]
    gate: bool
    nodes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RepairSetup:
    """Automatic repair over the fleet: the policies of the profiles it acts on or observes (mode 'on' or
    'observe'), in inventory order; how many nodes may be in repair at once (repair_budget, else the
    disruption_budget); the breaker; the inventory's Xid classes as the loop reads them ('drain' is 'reboot'); each
    node the loop power cycles (its profile's power_cycle, and a BMC of its own) with that BMC, in name order."""

    policies: tuple[RepairPolicy, ...]
    budget: int
    breaker: Breaker
    xid: Mapping[int, str]
    cycled: Mapping[str, NodeBmc] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class SlurmFile:
    """A file in /etc/slurm and whether this cluster has it; one it lacks is removed from the hosts."""

    name: str
    present: bool


@dataclass(frozen=True, eq=False)
class ValidCluster:
    """A cluster that passed every rule, resolved for one Slurm release."""

    name: str
    version: SlurmVersion
    auth: Literal["munge", "slurm"]
    controller: Host
    backup_controller: Host | None
    database: Host
    login: tuple[Host, ...]
    nfs: Nfs | None
    setup: Setup
    accounting: Accounting
    vault: Vault | None
    hardware: tuple[Hardware, ...]
    nodes: tuple[Node, ...]
    partitions: tuple[MemberPartition, ...]
    topology: Topology | None  # the fabric's
    slurm_conf: Mapping[str, str]    # every single-valued key, defaults and overrides applied, sorted
    cgroup_conf: Mapping[str, str]
    slurm_files: tuple[SlurmFile, ...]
    machines: tuple[Machine, ...]
    containers: ContainerSetup | None = None
    # accounting.accounts in tree order, every parent before its children: the order they are created in
    accounts: tuple[Account, ...] = ()
    acceptance: Acceptance = Acceptance()
    health: HealthSetup | None = None  # None: no health check (disabled, or no compute node)
    stack: StackSetup | None = None  # None: nothing pinned or held
    monitoring: Monitoring | None = None
    rest: RestSetup | None = None  # None: no slurmrestd, no JWT key
    disruption_budget: int = 4       # the most compute nodes one deploy takes out of service at once
    # Each node of a profile with admission -> its plan (one object per profile); nodes without admission absent.
    admission: Mapping[str, AdmissionPlan] = field(default_factory=lambda: MappingProxyType({}))
    identity: Identity | None = None  # None: the deploy makes no people
    # Every topology of topology.yaml (Slurm 25.05+), the cluster's default first: the fabric's, then the
    # inventory's block topologies; the fabric's alone before 25.05.
    topologies: tuple[Topology, ...] = ()
    repair: RepairSetup | None = None  # None: no profile is repaired automatically (no Repair, or mode 'off')
    configless: bool = False  # the compute nodes' slurmd fetches the Slurm files from slurmctld
    inventory_digest: str = ""  # which inventory this is, the deploy's stamp says (model/digest.py)

    def __repr__(self) -> str:
        return f"ValidCluster({self.name}, Slurm {self.version}, {len(self.nodes)} nodes)"

    # Immutable and compared by identity, so a copy is the object itself: pyinfra copies every host.data value it
    # hands out, and a copy would miss every cache keyed on this object (one render of slurm.conf per run).
    def __copy__(self) -> ValidCluster:
        return self

    def __deepcopy__(self, memo: dict) -> ValidCluster:
        return self

    def to_json(self) -> dict[str, object]:
        """How ``pyinfra ... debug-inventory`` shows the cluster in every host's data."""
        return {"cluster": self.name, "slurm_version": str(self.version), "nodes": len(self.nodes),
                "partitions": [p.name for p in self.partitions]}

    @property
    def gpu_hardware(self) -> tuple[Hardware, ...]:
        return tuple(h for h in self.hardware if h.profile.gpus is not None)

    @property
    def preemption(self) -> bool:
        return any(p.preemptable for p in self.partitions)
