"""The people of a cluster: who they are on every host (the same name, uid and gid everywhere), and who may reach a
compute node without a job there (the admin group).

One source per cluster. Today that is the inventory itself: ``Identity(people=..., groups=...)``, each person made
by the deploy on every host. The other source, a site directory read through SSSD (LDAP), is meant to sit beside
``people`` as a field of its own (its URIs, base DN, CA certificate and bind credentials), with the rules choosing
exactly one; it is not built yet.
"""

from __future__ import annotations

from pydantic import Field

from .base import Entry, Named


class Group(Named):
    """A site group, made on every host with its gid; people name it in their ``groups``."""

    gid: int = Field(description="the group's gid on every host, outside the system range (1000 to 59999)")


class Person(Named):
    """Someone who logs in: a Unix account with the same ids on every host, and the SSH keys they log in with."""

    uid: int = Field(description="the person's uid on every host, outside the system range (1000 to 59999)")
    gid: int | None = Field(default=None, description="the gid of the person's own group, named like the person and "
                                                      "made with them; None: the uid")
    groups: tuple[str, ...] = Field(default=(), description="the site groups (identity.groups) the person is also in")
    shell: str = Field(default="/bin/bash", description="the login shell, an absolute path present on every host")
    ssh_keys: tuple[str, ...] = Field(default=(), description="the OpenSSH public keys (one line each: type, base64, "
                                                              "comment) written to the person's authorized_keys")
    locked: bool = Field(default=False, description="the account stays, with its home, but nobody logs in as it: "
                                                    "password locked and the account expired (what removing the "
                                                    "person from the inventory also does)")

    @property
    def group_id(self) -> int:
        return self.gid if self.gid is not None else self.uid


class Identity(Entry):
    """Who the cluster's people are, and who may reach a compute node without a job."""

    people: tuple[Person, ...] = Field(default=(), description="the people the deploy makes on every host, with "
                                                               "their own group, their site groups and their keys")
    groups: tuple[Group, ...] = Field(default=(), description="the site groups the deploy makes on every host")
    admin_group: str | None = Field(default=None, description="one of groups: its members (and root) log in to any "
                                                              "compute node, with or without a job there; None: root "
                                                              "alone")
    home_base: str = Field(default="/home", description="the directory that holds each person's home, "
                                                        "<home_base>/<name>; where an NFS mount serves it, the homes "
                                                        "are made once on the NFS server")
    adopt: bool = Field(default=True, description="pam_slurm_adopt on the compute nodes: SSH there only with a job, "
                                                  "the session put in the job's cgroup; needs "
                                                  "ProctrackType=proctrack/cgroup and task/cgroup")
