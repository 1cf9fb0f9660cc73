"""The people of a cluster: who they are on every host (the same name, uid and gid everywhere), who may reach a
compute node without a job there (the admin group), and who may log in to the service hosts (the controller, the
database host, the NFS server, the monitoring host: the admin group, and the groups a site adds).

One source per cluster: the inventory itself (``Identity(people=..., groups=...)``, each person made by the deploy on
every host), or a site directory (``Identity(directory=Directory(...))``, read on every host through SSSD from LDAP);
the rules refuse both at once. Neither: the deploy makes nobody, and only the admin-group and adopt settings apply.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Entry, Named
from .containers import Artifact


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


class Directory(Entry):
    """A site directory (LDAP) every host reads the cluster's people and groups from through SSSD, over TLS only:
    ldaps://, or ldap:// with StartTLS, the server's certificate checked against the pinned CA."""

    uris: tuple[str, ...] = Field(description="the LDAP servers, tried in order: all 'ldaps://host[:port]', or all "
                                              "'ldap://host[:port]', which SSSD then upgrades with StartTLS before "
                                              "anything is sent; a plain connection is never made")
    base_dn: str = Field(description="where SSSD searches for users and groups, e.g. 'dc=example,dc=org'")
    user_base: str | None = Field(default=None, description="where users are, if narrower than base_dn, e.g. "
                                                            "'ou=people,dc=example,dc=org'")
    group_base: str | None = Field(default=None, description="where groups are, if narrower than base_dn")
    ca_certificate: Artifact = Field(description="the PEM certificate of the CA that signed the LDAP servers' "
                                                 "certificates, pinned by its sha256; the only CA SSSD trusts for "
                                                 "them (ldap_tls_reqcert=demand)")
    bind_dn: str | None = Field(default=None, description="the DN SSSD binds as; its password comes from Vault "
                                                          "(Vault(ldap_bind_password)), never from the inventory; "
                                                          "None: an anonymous bind")
    ldap_schema: Literal["rfc2307", "rfc2307bis"] = Field(
        default="rfc2307", description="how groups name their members: 'rfc2307' (memberUid holds user names), "
                                       "'rfc2307bis' (member holds DNs)")
    entry_cache_timeout: int = Field(
        default=5400, description="seconds SSSD answers a user or group from its cache before asking the directory "
                                  "again (SSSD's default). A job starting on hundreds of nodes looks its user up "
                                  "on each at the same moment: the cache, refreshed in the background at three "
                                  "quarters of this (refresh_expired_interval), keeps that off the directory, and "
                                  "an entry stays served while the directory is unreachable. The price: a change "
                                  "in the directory reaches the hosts within this time")
    enumerate: bool = Field(default=False, description="whether SSSD downloads every user and group (getent passwd "
                                                       "without a name lists them). Off: on every host of a cluster "
                                                       "it is a periodic full download of the directory, and "
                                                       "nothing in Slurm needs it; lookups by name or id work "
                                                       "either way")
    login_group: str | None = Field(default=None, description="the directory group whose members (and the admin "
                                                              "group's) may log in to the login hosts; None: every "
                                                              "user of the directory may")


class Identity(Entry):
    """Who the cluster's people are, who may reach a compute node without a job, and who may log in to a service
    host (any host that is neither a login host nor a compute node)."""

    people: tuple[Person, ...] = Field(default=(), description="the people the deploy makes on every host, with "
                                                               "their own group, their site groups and their keys")
    groups: tuple[Group, ...] = Field(default=(), description="the site groups the deploy makes on every host")
    directory: Directory | None = Field(default=None, description="the site directory every host reads the people "
                                                                  "from, instead of people and groups declared here")
    admin_group: str | None = Field(default=None, description="one of groups (with a directory: a group of the "
                                                              "directory, which validation cannot see): its members "
                                                              "(and root) log in to any compute node, with or without "
                                                              "a job there, and to the service hosts; None: root "
                                                              "alone")
    home_base: str = Field(default="/home", description="the directory that holds each person's home, "
                                                        "<home_base>/<name>; where an NFS mount serves it, the homes "
                                                        "are made once on the NFS server")
    adopt: bool = Field(default=True, description="pam_slurm_adopt on the compute nodes: SSH there only with a job, "
                                                  "the session put in the job's cgroup; needs "
                                                  "ProctrackType=proctrack/cgroup and task/cgroup")
    service_host_groups: tuple[str, ...] = Field(
        default=(), description="groups whose members may also log in to the service hosts (the controller, the "
                                "database host, the NFS server, the monitoring host: every host that is neither a "
                                "login host nor a compute node), where otherwise only root, the admin group and "
                                "the user the deploy logs in as may; each one of groups (with a directory: a group "
                                "of the directory)")
