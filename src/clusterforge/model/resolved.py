"""A cluster after validation: ranges expanded, references resolved, overrides in Slurm's spelling.

Renderers take only this form, so they never see an inventory that has not passed every rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..versions import SlurmVersion
from .hardware import Profile
from .partitions import Partition

if TYPE_CHECKING:
    from .cluster import Cluster


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    address: str | None
    profile: Profile
    features: tuple[str, ...]
    leaves: tuple[str, ...]

    def __repr__(self) -> str:
        return f"Node({self.name}, {self.address or 'no address'}, profile {self.profile.name})"

    def to_json(self) -> dict[str, object]:
        """How ``pyinfra ... debug-inventory`` shows a compute host's node."""
        return {"name": self.name, "address": self.address, "profile": self.profile.name,
                "features": list(self.features), "leaves": list(self.leaves)}


@dataclass(frozen=True, slots=True)
class Switch:
    name: str
    nodes: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MemberPartition:
    spec: Partition
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class ValidCluster:
    spec: Cluster
    version: SlurmVersion
    nodes: tuple[Node, ...]
    partitions: tuple[MemberPartition, ...]
    leaves: tuple[Switch, ...]
    spines: tuple[Switch, ...]
    slurm_conf_extra: dict[str, str | None] = field(default_factory=dict)
    cgroup_conf_extra: dict[str, str | None] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"ValidCluster({self.name}, Slurm {self.version}, {len(self.nodes)} nodes)"

    def to_json(self) -> dict[str, object]:
        """How ``pyinfra ... debug-inventory`` shows the cluster in every host's data."""
        return {"cluster": self.name, "slurm_version": str(self.version), "nodes": len(self.nodes),
                "partitions": [p.spec.name for p in self.partitions]}

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def has_fabric(self) -> bool:
        return self.spec.fabric is not None

    @property
    def gpu_profiles(self) -> tuple[Profile, ...]:
        return tuple(p for p in self.spec.profiles if p.gpus is not None)

    def nodes_of(self, profile: str) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.profile.name == profile)
