"""The cluster: the root of an inventory."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .acceptance import Acceptance
from .accounting import Accounting
from .base import Named
from .containers import Containers
from .fabric import Fabric
from .hardware import Profile
from .hosts import Host, Nfs
from .nodes import Nodes
from .partitions import Partition
from .setup import Setup
from .vault import Vault

OverrideValue = str | int | bool | None


class Cluster(Named):
    """Everything clusterforge renders and deploys, described once.

    Building a Cluster checks only the types of its fields; ``resolve(cluster)`` checks every rule across entries,
    reports all problems together, and derives what the renderers and roles read.
    """

    slurm_version: str = Field(description="the Slurm release the cluster runs, major.minor: '22.05', '24.11'")
    auth: Literal["munge", "slurm"] = "munge"
    controller: Host | None = None
    backup_controller: Host | None = None
    database: Host | None = Field(default=None, description="runs slurmdbd and MariaDB")
    login: tuple[Host, ...] = ()
    nfs: Nfs | None = None
    profiles: tuple[Profile, ...] = ()
    nodes: tuple[Nodes, ...] = ()
    fabric: Fabric | None = None
    partitions: tuple[Partition, ...] = ()
    accounting: Accounting = Accounting()
    vault: Vault | None = None
    setup: Setup = Setup()
    containers: Containers | None = Field(default=None, description="Enroot and Pyxis for container jobs")
    slurm_conf_extra: dict[str, OverrideValue] = Field(
        default_factory=dict, description="extra slurm.conf keys; None removes one clusterforge writes by default"
    )
    cgroup_conf_extra: dict[str, OverrideValue] = Field(default_factory=dict)
    acceptance: Acceptance = Field(default=Acceptance(), description="what `clusterforge check` accepts")

    # Resolving is cached per object (model/resolve.py): a cluster is identified by identity, not by its fields
    # (which hold dicts and are not hashable), so a copy is resolved afresh.
    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return self is other
