"""Partitions: which nodes, limits, priority and preemption."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Named, slurm_key


class Partition(Named):
    nodes: str | None = Field(default=None, description="hostlist of member nodes",
                              json_schema_extra=slurm_key("slurm.conf", "Nodes", line="PartitionName"))
    profiles: tuple[str, ...] = Field(default=(), description="every node of these profiles is a member")
    default: bool = Field(default=False, description="Default=YES in slurm.conf: jobs naming no partition run here; "
                                                     "exactly one partition is the default",
                          json_schema_extra=slurm_key("slurm.conf", "Default", line="PartitionName"))
    max_time: str | None = Field(default=None, description="Slurm time, e.g. '2-00:00:00' or 'UNLIMITED'",
                                 json_schema_extra=slurm_key("slurm.conf", "MaxTime", line="PartitionName"))
    default_time: str | None = Field(default=None, description="DefaultTime in slurm.conf, a Slurm time, at most "
                                                               "max_time; None: not written",
                                     json_schema_extra=slurm_key("slurm.conf", "DefaultTime", line="PartitionName"))
    priority_tier: int = Field(default=1, description="PriorityTier in slurm.conf; a partition that preempts another "
                                                      "needs a higher one",
                               json_schema_extra=slurm_key("slurm.conf", "PriorityTier", line="PartitionName"))
    preempts: tuple[str, ...] = Field(default=(), description="partitions whose jobs this one's jobs preempt",
                                      json_schema_extra=slurm_key("slurm.conf", "PreemptType"))
    preempt_mode: Literal["requeue", "cancel", "suspend"] = Field(
        default="requeue", description="what happens to this partition's jobs when another partition preempts them",
        json_schema_extra=slurm_key("slurm.conf", "PreemptMode", line="PartitionName")
    )
    max_nodes: int | None = Field(default=None, description="MaxNodes in slurm.conf, nodes per job, positive; None: "
                                                            "not written",
                                  json_schema_extra=slurm_key("slurm.conf", "MaxNodes", line="PartitionName"))
    qos: str | None = Field(default=None, description="partition QOS; must be one of accounting.qos",
                            json_schema_extra=slurm_key("slurm.conf", "QOS", line="PartitionName"))
    allow_qos: tuple[str, ...] = Field(default=(), description="AllowQos in slurm.conf, each one of accounting.qos; "
                                                               "(): not written",
                                       json_schema_extra=slurm_key("slurm.conf", "AllowQos", line="PartitionName"))
    allow_accounts: tuple[str, ...] = Field(
        default=(), description="AllowAccounts in slurm.conf, each 'root' or one of accounting.accounts where those "
                                "are given; (): not written",
        json_schema_extra=slurm_key("slurm.conf", "AllowAccounts", line="PartitionName"))
    # What a job gets when it asks for none; left out, they are derived from the smallest member node: its memory
    # per CPU, and on GPU nodes its memory and CPUs per GPU.
    def_mem_per_cpu: int | None = Field(default=None, description="MiB per allocated CPU when a job asks no memory",
                                        json_schema_extra=slurm_key("slurm.conf", "DefMemPerCPU", line="PartitionName"))
    def_mem_per_gpu: int | None = Field(default=None, description="MiB per allocated GPU when a GPU job asks none",
                                        json_schema_extra=slurm_key("slurm.conf", "DefMemPerGPU", line="PartitionName"))
    def_cpu_per_gpu: int | None = Field(default=None, description="CPUs per allocated GPU when a GPU job asks none",
                                        json_schema_extra=slurm_key("slurm.conf", "DefCpuPerGPU", line="PartitionName"))
    exclusive_user: bool = Field(default=False, description="ExclusiveUser=YES in slurm.conf when True; False: not "
                                                            "written",
                                 json_schema_extra=slurm_key("slurm.conf", "ExclusiveUser", line="PartitionName"))
    topology: str | None = Field(
        default=None, description="the topology this partition's jobs are placed by (Slurm 25.05+): the fabric's "
                                  "(Fabric(topology=)) or one of the cluster's topologies; None: "
                                  "the cluster's default, the fabric's (without one, the first of topologies)",
        json_schema_extra=slurm_key("slurm.conf", "Topology", line="PartitionName"))
