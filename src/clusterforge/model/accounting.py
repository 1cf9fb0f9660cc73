"""Accounting through slurmdbd: the database, multifactor priority with fairshare, QOS, and the account tree with
its users, which the deploy converges the database to."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Entry, Named

TresLimit = str | None  # "name=count[,name=count]", e.g. "gres/gpu=64,cpu=512"


class PriorityWeights(Entry):
    fairshare: int = 10000
    age: int = 1000
    job_size: int = 0
    partition: int = 1000
    qos: int = 2000


class Qos(Named):
    priority: int = 0
    preempt: tuple[str, ...] = Field(default=(), description="QOS whose jobs this QOS' jobs may preempt")
    preempt_mode: str | None = Field(default=None, description="off, cancel, requeue or suspend (',gang' may "
                                                               "follow); None: the cluster's PreemptMode")
    flags: tuple[str, ...] = Field(default=(), description="e.g. ('DenyOnLimit', 'NoDecay')")
    max_wall: str | None = None
    max_tres_per_user: TresLimit = Field(default=None, description="e.g. 'gres/gpu=64'")
    max_tres_per_job: TresLimit = None
    max_jobs_per_user: int | None = None
    grp_tres: TresLimit = None
    grp_tres_mins: TresLimit = Field(default=None, description="e.g. 'gres/gpu=43200': 720 GPU-hours")


class Association(Named):
    """What Slurm keeps per association, for an account and for each of a user's accounts alike. None (or ()) is
    "not set here": the parent's value applies, as in Slurm."""

    fairshare: int | Literal["parent"] = Field(default=1, description="Fairshare= shares, or 'parent'")
    default_qos: str | None = None
    qos: tuple[str, ...] = Field(default=(), description="the QOS allowed; () inherits the parent's")
    grp_tres: TresLimit = None
    grp_tres_mins: TresLimit = Field(default=None, description="e.g. 'gres/gpu=43200': 720 GPU-hours")
    max_tres_per_job: TresLimit = None
    max_jobs: int | None = None
    max_submit_jobs: int | None = None
    max_wall: str | None = None


class Account(Association):
    parent: str = "root"
    description: str | None = Field(default=None, description="None: left as it is (sacctmgr's default: the name)")
    organization: str | None = Field(default=None, description="None: left as it is")


class User(Association):
    """A login name in one or more accounts; its association fields apply to each of them."""

    accounts: tuple[str, ...] = ()
    default_account: str | None = Field(default=None, description="required when accounts has several")
    admin: Literal["none", "operator", "admin"] | None = Field(default=None, description="None: left as it is")

    @property
    def default(self) -> str | None:
        return self.default_account or (self.accounts[0] if len(self.accounts) == 1 else None)


class Accounting(Entry):
    database: str = "slurm_acct_db"
    user: str = Field(default="slurm", description="the MariaDB user slurmdbd connects as")
    weights: PriorityWeights = PriorityWeights()
    decay_half_life: str = Field(default="7-0", description="PriorityDecayHalfLife, a Slurm time")
    enforce: tuple[str, ...] = ("associations", "limits", "qos", "safe")
    qos: tuple[Qos, ...] = ()
    accounts: tuple[Account, ...] = ()
    users: tuple[User, ...] = ()
    prune: bool = Field(default=False, description="delete accounts, users and QOS the inventory does not name")
