"""The cluster: the root of an inventory."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PrivateAttr

from ..versions import SlurmVersion
from .accounting import Accounting
from .base import Named
from .fabric import Fabric
from .hardware import Profile
from .hosts import Host, Nfs
from .nodes import Nodes
from .partitions import Partition
from .resolved import ValidCluster
from .setup import Setup
from .vault import Vault

OverrideValue = str | int | bool | None


class Cluster(Named):
    """Everything clusterforge renders and deploys, described once.

    Building a Cluster checks only the types of its fields; ``validated()`` checks every rule across entries and
    reports all problems together.
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
    slurm_conf_extra: dict[str, OverrideValue] = Field(
        default_factory=dict, description="extra slurm.conf keys; None removes one clusterforge writes by default"
    )
    cgroup_conf_extra: dict[str, OverrideValue] = Field(default_factory=dict)

    # (owner, results by release): model_copy() copies private attributes, so a copy must not reuse the cache of
    # the cluster it was copied from.
    _validated: tuple[Cluster, dict[SlurmVersion | None, ValidCluster]] | None = PrivateAttr(default=None)

    def validated(self, slurm_version: SlurmVersion | None = None) -> ValidCluster:
        """The checked cluster, for its own Slurm release or another; raises InventoryError with every problem."""
        from .validate import validate

        if self._validated is None or self._validated[0] is not self:
            self._validated = (self, {})
        results = self._validated[1]
        if slurm_version not in results:
            results[slurm_version] = validate(self, slurm_version)
        return results[slurm_version]
