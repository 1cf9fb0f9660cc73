"""The inventory model: typed, immutable entries an admin writes once, and the validated cluster built from them."""

from .accounting import Accounting, PriorityWeights, Qos
from .cluster import Cluster
from .fabric import Fabric, Leaf, Spine
from .hardware import Gpus, Profile
from .hosts import Host, Nfs, NfsExport, NfsMount
from .nodes import Nodes
from .partitions import Partition
from .resolved import MemberPartition, Node, Switch, ValidCluster
from .setup import Setup, SystemUser
from .vault import SecretRef, Vault

__all__ = [
    "Accounting", "Cluster", "Fabric", "Gpus", "Host", "Leaf", "MemberPartition", "Nfs", "NfsExport", "NfsMount",
    "Node", "Nodes", "Partition", "PriorityWeights", "Profile", "Qos", "SecretRef", "Setup", "Spine", "Switch", "SystemUser",
    "ValidCluster", "Vault",
]
