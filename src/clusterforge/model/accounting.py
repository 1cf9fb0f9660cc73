"""Accounting through slurmdbd: the database, multifactor priority with fairshare, and QOS."""

from __future__ import annotations

from pydantic import Field

from .base import Entry, Named


class PriorityWeights(Entry):
    fairshare: int = 10000
    age: int = 1000
    job_size: int = 0
    partition: int = 1000
    qos: int = 2000


class Qos(Named):
    priority: int = 0
    preempt: tuple[str, ...] = ()
    max_wall: str | None = None
    max_tres_per_user: str | None = Field(default=None, description="e.g. 'gres/gpu=64'")
    grp_tres: str | None = None


class Accounting(Entry):
    database: str = "slurm_acct_db"
    user: str = Field(default="slurm", description="the MariaDB user slurmdbd connects as")
    weights: PriorityWeights = PriorityWeights()
    decay_half_life: str = Field(default="7-0", description="PriorityDecayHalfLife, a Slurm time")
    enforce: tuple[str, ...] = ("associations", "limits", "qos", "safe")
    qos: tuple[Qos, ...] = ()
