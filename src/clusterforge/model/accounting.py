"""Accounting through slurmdbd: the database, multifactor priority with fairshare, QOS, and the account tree with
its users, which the deploy converges the database to."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Entry, Named, slurm_key

TresLimit = str | None  # "name=count[,name=count]", e.g. "gres/gpu=64,cpu=512"


class PriorityWeights(Entry):
    fairshare: int = Field(default=10000, description="PriorityWeightFairshare in slurm.conf; not negative",
                           json_schema_extra=slurm_key("slurm.conf", "PriorityWeightFairshare"))
    age: int = Field(default=1000, description="PriorityWeightAge in slurm.conf; not negative",
                     json_schema_extra=slurm_key("slurm.conf", "PriorityWeightAge"))
    job_size: int = Field(default=0, description="PriorityWeightJobSize in slurm.conf; not negative",
                          json_schema_extra=slurm_key("slurm.conf", "PriorityWeightJobSize"))
    partition: int = Field(default=1000, description="PriorityWeightPartition in slurm.conf; not negative",
                           json_schema_extra=slurm_key("slurm.conf", "PriorityWeightPartition"))
    qos: int = Field(default=2000, description="PriorityWeightQOS in slurm.conf; not negative",
                     json_schema_extra=slurm_key("slurm.conf", "PriorityWeightQOS"))


class Qos(Named):
    priority: int = Field(default=0, description="Priority of the QOS in the accounting database (sacctmgr)")
    preempt: tuple[str, ...] = Field(default=(), description="QOS whose jobs this QOS' jobs may preempt")
    preempt_mode: str | None = Field(default=None, description="off, cancel, requeue or suspend (',gang' may "
                                                               "follow); None: the cluster's PreemptMode")
    flags: tuple[str, ...] = Field(default=(), description="e.g. ('DenyOnLimit', 'NoDecay')")
    max_wall: str | None = Field(default=None, description="MaxWall of the QOS, a Slurm time such as '1-00:00:00'; "
                                                           "None: no limit")
    max_tres_per_user: TresLimit = Field(default=None, description="e.g. 'gres/gpu=64'")
    max_tres_per_job: TresLimit = Field(default=None, description="MaxTRESPerJob of the QOS, e.g. 'gres/gpu=16'; "
                                                                  "None: no limit")
    max_jobs_per_user: int | None = Field(default=None, description="MaxJobsPerUser of the QOS, a number of jobs, not "
                                                                    "negative; None: no limit")
    grp_tres: TresLimit = Field(default=None, description="GrpTRES of the QOS, e.g. 'gres/gpu=128'; None: no limit")
    grp_tres_mins: TresLimit = Field(default=None, description="e.g. 'gres/gpu=43200': 720 GPU-hours")


class Association(Named):
    """What Slurm keeps per association, for an account and for each of a user's accounts alike. None (or ()) is
    "not set here": the parent's value applies, as in Slurm."""

    fairshare: int | Literal["parent"] = Field(default=1, description="Fairshare= shares, or 'parent'")
    default_qos: str | None = Field(default=None, description="DefaultQOS of the association, one of accounting.qos "
                                                              "(and of qos where given); None: not set here")
    qos: tuple[str, ...] = Field(default=(), description="the QOS allowed; () inherits the parent's")
    grp_tres: TresLimit = Field(default=None, description="GrpTRES of the association, e.g. 'gres/gpu=64'; "
                                                          "None: not set here")
    grp_tres_mins: TresLimit = Field(default=None, description="e.g. 'gres/gpu=43200': 720 GPU-hours")
    max_tres_per_job: TresLimit = Field(default=None, description="MaxTRESPerJob of the association, e.g. "
                                                                  "'gres/gpu=8'; None: not set here")
    max_jobs: int | None = Field(default=None, description="MaxJobs of the association, a number of jobs, not "
                                                           "negative; None: not set here")
    max_submit_jobs: int | None = Field(default=None, description="MaxSubmitJobs of the association, a number of "
                                                                  "jobs, not negative; None: not set here")
    max_wall: str | None = Field(default=None, description="MaxWall of the association, a Slurm time such as "
                                                           "'2-00:00:00'; None: not set here")


class Account(Association):
    parent: str = Field(default="root", description="the account above this one (Parent= in sacctmgr): 'root', "
                                                    "Slurm's top account, or one of accounting.accounts")
    description: str | None = Field(default=None, description="None: left as it is (sacctmgr's default: the name)")
    organization: str | None = Field(default=None, description="None: left as it is")


class User(Association):
    """A login name in one or more accounts; its association fields apply to each of them."""

    accounts: tuple[str, ...] = Field(default=(), description="the accounts the user is in, an association in each: "
                                                              "at least one, each 'root' or one of accounting.accounts")
    default_account: str | None = Field(default=None, description="required when accounts has several")
    admin: Literal["none", "operator", "admin"] | None = Field(default=None, description="None: left as it is")

    @property
    def default(self) -> str | None:
        return self.default_account or (self.accounts[0] if len(self.accounts) == 1 else None)


class Accounting(Entry):
    database: str = Field(default="slurm_acct_db", description="the MariaDB database slurmdbd keeps accounting in "
                                                               "(StorageLoc in slurmdbd.conf)",
                          json_schema_extra=slurm_key("slurmdbd.conf", "StorageLoc"))
    user: str = Field(default="slurm", description="the MariaDB user slurmdbd connects as",
                      json_schema_extra=slurm_key("slurmdbd.conf", "StorageUser"))
    weights: PriorityWeights = Field(default=PriorityWeights(), description="the multifactor priority weights, "
                                                                            "PriorityWeight* in slurm.conf")
    decay_half_life: str = Field(default="7-0", description="PriorityDecayHalfLife, a Slurm time",
                                 json_schema_extra=slurm_key("slurm.conf", "PriorityDecayHalfLife"))
    enforce: tuple[str, ...] = Field(
        default=("associations", "limits", "qos", "safe"),
        description="AccountingStorageEnforce in slurm.conf, each one of associations, limits, nojobs, nosteps, qos, "
                    "safe, wckeys",
        json_schema_extra=slurm_key("slurm.conf", "AccountingStorageEnforce"))
    qos: tuple[Qos, ...] = Field(default=(), description="the QOS the deploy brings the accounting database to; "
                                                         "'normal', which slurmdbd makes, exists listed or not")
    accounts: tuple[Account, ...] = Field(default=(), description="the accounts below Slurm's 'root' account that the "
                                                                  "deploy brings the accounting database to")
    users: tuple[User, ...] = Field(default=(), description="the users of those accounts that the deploy brings the "
                                                            "accounting database to")
    prune: bool = Field(default=False, description="delete accounts, users and QOS the inventory does not name")
