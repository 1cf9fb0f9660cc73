"""How every host is prepared before Slurm: package proxy, name resolution, the daemons' users, time."""

from __future__ import annotations

from pydantic import Field

from .base import Entry


class SystemUser(Entry):
    """A daemon account with the same ids on every host, so files on shared storage and munge credentials agree."""

    uid: int = Field(ge=1, le=65533, description="free on every host, outside the range of people's accounts")
    gid: int = Field(ge=1, le=65533, description="the gid of its group, of the same name; free on every host")


class Setup(Entry):
    apt_proxy: str | None = Field(default=None, description="http://host:port of an apt proxy for every host")
    etc_hosts: bool = Field(default=False, description="write every cluster host's name and address to /etc/hosts "
                                                       "(for sites without DNS for the cluster network)")
    # Debian's slurm packages create slurm as 64030 when it is missing; munge gets no fixed id there.
    munge_user: SystemUser = Field(default=SystemUser(uid=990, gid=990), description="the ids of the munge user and "
                                                                                     "group on every host")
    slurm_user: SystemUser = Field(default=SystemUser(uid=64030, gid=64030), description="the ids of the slurm user "
                                                                                         "and group the daemons run "
                                                                                         "as; not the munge ids")
    # slurmrestd refuses to run as root (24.11 as the slurm user or group too): it gets a user of its own, on its host
    # only. 989, below munge's 990: useradd --system and systemd-sysusers hand out ids downward from 999, so a host
    # needs ten such accounts before one takes it (the deploy then refuses the host, naming the ids to choose).
    slurmrestd_user: SystemUser = Field(default=SystemUser(uid=989, gid=989),
                                        description="the ids of the slurmrestd user and group slurmrestd runs as, on "
                                                    "its host (with Rest); not the munge or slurm ids")
    time_sync: bool = Field(default=True, description="run chrony (skipped inside containers, whose clock is "
                                                      "the host's)")
