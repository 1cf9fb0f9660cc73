"""Service hosts (controller, database, login, NFS) and what NFS shares."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Entry, Named


class Host(Named):
    address: str | None = Field(default=None, description="IP or DNS name to reach the host at")
    memory: int | None = Field(default=None, description="MiB of RAM; sizes MariaDB's buffer pool on the database host")


# "rest": the host that runs slurmrestd, always one of the cluster's Slurm hosts as well (model/rules/rest.py).
HostGroup = Literal["controller", "compute", "login", "database", "nfs", "monitoring", "rest"]
# The groups whose hosts run a Slurm daemon or Slurm's commands, and so get slurm.conf and the packages.
SLURM_GROUPS: frozenset[HostGroup] = frozenset({"controller", "compute", "login", "database"})


class NfsExport(Entry):
    path: str = Field(description="the absolute path the server exports")
    clients: str = Field(default="*", description="who may mount: a CIDR, a host pattern or '*'")
    options: tuple[str, ...] = Field(
        default=("rw", "sync", "no_subtree_check", "root_squash"),
        description="export options as /etc/exports writes them; NFS-Ganesha reads only 'ro' and 'no_root_squash'")


class NfsMount(Entry):
    export: str = Field(description="the exported path on the NFS server")
    mount_point: str = Field(description="the absolute path it is mounted at, by a systemd mount unit")
    on: tuple[HostGroup, ...] = Field(default=("compute", "login"), description="the host groups that mount it: "
                                                                               "controller, compute, login, database "
                                                                               "or nfs")
    options: tuple[str, ...] = Field(default=("defaults", "_netdev"), description="mount options, Options= of the "
                                                                                  "mount unit ('_netdev' left out: "
                                                                                  "the unit waits for the network)")


class Nfs(Entry):
    server: Host = Field(description="the host that runs the NFS server; clients mount from its address, else "
                                     "its name")
    software: Literal["kernel", "ganesha"] = Field(
        default="kernel", description="the server: the kernel's nfsd (nfs-kernel-server), or NFS-Ganesha in user "
                                      "space (for servers whose kernel has no nfsd, such as containers)")
    ganesha_core: dict[str, str] = Field(
        default_factory=dict, description="extra NFS_CORE_PARAM settings for NFS-Ganesha, as the installed release "
                                          "names them, e.g. {'allow_set_io_flusher_fail': 'true'}")
    mount_now: bool = Field(default=True, description="mount on the clients during the deploy; False only writes "
                                                      "and enables the mount units (hosts without an NFS client)")
    exports: tuple[NfsExport, ...] = Field(default=(), description="the directories the server shares")
    mounts: tuple[NfsMount, ...] = Field(default=(), description="where the cluster's hosts mount the exports")
