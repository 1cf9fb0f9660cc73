"""Partitions: which nodes, limits, priority and preemption."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Named


class Partition(Named):
    nodes: str | None = Field(default=None, description="hostlist of member nodes")
    profiles: tuple[str, ...] = Field(default=(), description="every node of these profiles is a member")
    default: bool = False
    max_time: str | None = Field(default=None, description="Slurm time, e.g. '2-00:00:00' or 'UNLIMITED'")
    default_time: str | None = None
    priority_tier: int = 1
    preempts: tuple[str, ...] = Field(default=(), description="partitions whose jobs this one's jobs preempt")
    preempt_mode: Literal["requeue", "cancel", "suspend"] = Field(
        default="requeue", description="what happens to this partition's jobs when another partition preempts them"
    )
    max_nodes: int | None = None
    qos: str | None = Field(default=None, description="partition QOS; must be one of accounting.qos")
    allow_qos: tuple[str, ...] = ()
    allow_accounts: tuple[str, ...] = ()
    # What a job gets when it asks for none; left out, they are derived from the smallest member node: its memory
    # per CPU, and on GPU nodes its memory and CPUs per GPU.
    def_mem_per_cpu: int | None = Field(default=None, description="MiB per allocated CPU when a job asks no memory")
    def_mem_per_gpu: int | None = Field(default=None, description="MiB per allocated GPU when a GPU job asks none")
    def_cpu_per_gpu: int | None = Field(default=None, description="CPUs per allocated GPU when a GPU job asks none")
    exclusive_user: bool = False
