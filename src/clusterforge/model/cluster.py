"""The cluster: the root of an inventory."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .acceptance import Acceptance
from .accounting import Accounting
from .base import Named, slurm_key
from .containers import Containers
from .fabric import BlockTopology, Fabric
from .hardware import Profile
from .health import Health
from .hosts import Host, Nfs
from .identity import Identity
from .monitoring import Monitoring
from .nodes import Nodes
from .partitions import Partition
from .repair import Breaker
from .rest import Rest
from .setup import Setup
from .stack import Stack
from .vault import Vault

OverrideValue = str | int | bool | None


class Cluster(Named):
    """Everything clusterforge renders and deploys, described once.

    Building a Cluster checks only the types of its fields; ``resolve(cluster)`` checks every rule across entries,
    reports all problems together, and derives what the renderers and roles read.
    """

    slurm_version: str = Field(description="the Slurm release the cluster runs, major.minor: '22.05', '24.11'")
    auth: Literal["munge", "slurm"] = Field(
        default="munge", description="AuthType in slurm.conf and slurmdbd.conf: auth/munge, or auth/slurm with "
                                     "slurm.key and no munged (Slurm 23.11+)",
        json_schema_extra=slurm_key("slurm.conf", "AuthType"))
    controller: Host | None = Field(default=None, description="the host slurmctld runs on, the first SlurmctldHost in "
                                                              "slurm.conf; required",
                                    json_schema_extra=slurm_key("slurm.conf", "SlurmctldHost"))
    backup_controller: Host | None = Field(default=None, description="a second host slurmctld runs on, the second "
                                                                     "SlurmctldHost in slurm.conf; not the controller",
                                           json_schema_extra=slurm_key("slurm.conf", "SlurmctldHost"))
    database: Host | None = Field(default=None, description="runs slurmdbd and MariaDB",
                                  json_schema_extra=slurm_key("slurm.conf", "AccountingStorageHost"))
    login: tuple[Host, ...] = Field(default=(), description="hosts users submit jobs from: they get slurm.conf and "
                                                            "Slurm's commands, and sackd with auth='slurm'")
    configless: bool = Field(
        default=False, description="configless Slurm: the compute nodes' slurmd fetches the Slurm files from "
                                   "slurmctld (--conf-server), so a change is one upload on the controller and "
                                   "`scontrol reconfigure`; the controllers and login hosts keep their own copies",
        json_schema_extra=slurm_key("slurm.conf", "SlurmctldParameters"))
    nfs: Nfs | None = Field(default=None, description="the NFS server, its exports and where the cluster's hosts mount "
                                                      "them; None: no NFS")
    profiles: tuple[Profile, ...] = Field(default=(), description="the hardware profiles nodes name; at least one")
    nodes: tuple[Nodes, ...] = Field(default=(), description="the compute nodes, the NodeName lines of slurm.conf")
    fabric: Fabric | None = Field(default=None, description="the InfiniBand fabric, rendered as topology.conf "
                                                            "(topology.yaml from Slurm 25.05); None: neither")
    topologies: tuple[BlockTopology, ...] = Field(
        default=(), description="block topologies besides the fabric, in topology.yaml (Slurm 25.05+)")
    partitions: tuple[Partition, ...] = Field(default=(), description="the PartitionName lines of slurm.conf; at "
                                                                      "least one, and exactly one the default")
    accounting: Accounting = Field(default=Accounting(), description="slurmdbd's database, the priority weights, and "
                                                                     "the QOS, accounts and users the deploy keeps")
    vault: Vault | None = Field(default=None, description="where the cluster's secrets are; None: the deploy and "
                                                          "`clusterforge secrets` stop at the first secret they need")
    setup: Setup = Field(default=Setup(), description="how every host is prepared before Slurm")
    containers: Containers | None = Field(default=None, description="Enroot and Pyxis for container jobs")
    slurm_conf_extra: dict[str, OverrideValue] = Field(
        default_factory=dict, description="extra slurm.conf keys; None removes one clusterforge writes by default"
    )
    cgroup_conf_extra: dict[str, OverrideValue] = Field(
        default_factory=dict, description="extra cgroup.conf keys; None removes one clusterforge writes by default"
    )
    stack: Stack | None = Field(default=None, description="the packages pinned to exact versions and held: Slurm's "
                                                          "and the GPU stack; None: nothing pinned or held")
    health: Health = Field(default=Health(), description="the node health check on every compute node")
    monitoring: Monitoring | None = Field(default=None, description="Prometheus and Alertmanager on one host, node "
                                                                    "exporter on every host, a Slurm exporter on the "
                                                                    "controller; None: no monitoring")
    rest: Rest | None = Field(default=None, description="slurmrestd, Slurm's REST API, with JWT authentication: "
                                                        "its key from Vault, loaded by slurmctld and slurmdbd; "
                                                        "None: no REST API",
                              json_schema_extra=slurm_key("slurm.conf", "AuthAltTypes"))
    acceptance: Acceptance = Field(default=Acceptance(), description="what `clusterforge check` accepts")
    identity: Identity | None = Field(default=None, description="the cluster's people and site groups, made on every "
                                                                "host, and who reaches a compute node without a job; "
                                                                "None: people are not made by the deploy")
    disruption_budget: int = Field(
        default=4, description="the most compute nodes one deploy may take out of service at once (a GPU driver "
                               "move, nodes removed from the inventory): beyond it the deploy changes nothing and says "
                               "how to do it in batches (clusterforge roll); nodes already out do not count")
    repair_budget: int | None = Field(
        default=None, description="the most compute nodes automatic repair (Profile(repair=...)) holds in repair at "
                                  "once, fleet-wide: a faulted node past it waits; None: the disruption_budget")
    repair_breaker: Breaker = Field(default=Breaker(), description="when automatic repair stops starting repairs "
                                                                   "because too many nodes fault at once")

    # Resolving is cached per object (model/resolve.py): a cluster is identified by identity, not by its fields
    # (which hold dicts and are not hashable), so a copy is resolved afresh.
    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return self is other
