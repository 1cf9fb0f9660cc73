"""The inventory model: typed, immutable entries an admin writes once, and the resolved cluster built from them."""

from .acceptance import Acceptance
from .admission import Admission, Floors, Programs
from .accounting import Account, Accounting, Association, PriorityWeights, Qos, User
from .cluster import Cluster
from .containers import AptRepository, Artifact, Containers, Enroot, Pyxis
from .fabric import Block, BlockTopology, Fabric, Leaf, Rail, Spine
from .hardware import Gpus, Profile
from .health import Health
from .hosts import Host, HostGroup, Nfs, NfsExport, NfsMount
from .identity import Directory, Group, Identity, Person
from .monitoring import Monitoring
from .nodes import Nodes
from .partitions import Partition
from .placeholders import placeholder
from .repair import Bmc, Breaker, Repair
from .resolve import resolve
from .resolved import (
    AdmissionPlan,
    ContainerSetup,
    EnrootPaths,
    GpuGroup,
    Hardware,
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
from .rest import Rest
from .setup import Setup, SystemUser
from .stack import GpuStack, Nccl, Stack
from .vault import SecretRef, Vault

__all__ = [
    "Acceptance",
    "Account",
    "Admission",
    "AdmissionPlan",
    "Accounting",
    "AptRepository",
    "Artifact",
    "Association",
    "Block",
    "BlockTopology",
    "Bmc",
    "Breaker",
    "Cluster",
    "ContainerSetup",
    "Containers",
    "Directory",
    "Enroot",
    "EnrootPaths",
    "Fabric",
    "Floors",
    "GpuGroup",
    "GpuStack",
    "Group",
    "Gpus",
    "Hardware",
    "Health",
    "Monitoring",
    "Host",
    "HostGroup",
    "Identity",
    "Leaf",
    "Machine",
    "MemberPartition",
    "Nccl",
    "Nfs",
    "NfsExport",
    "NfsMount",
    "Node",
    "NodeBmc",
    "Nodes",
    "Partition",
    "Person",
    "placeholder",
    "PriorityWeights",
    "Profile",
    "Programs",
    "Pyxis",
    "Qos",
    "Rail",
    "Repair",
    "RepairPolicy",
    "RepairSetup",
    "Rest",
    "RestSetup",
    "SecretRef",
    "Setup",
    "SlurmFile",
    "Spine",
    "Stack",
    "StackSetup",
    "Switch",
    "SystemUser",
    "Topology",
    "User",
    "ValidCluster",
    "Vault",
    "resolve",
]
