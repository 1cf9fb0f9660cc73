"""common: what every host needs before any Slurm package: apt proxy, /etc/hosts, the daemons' users, time.

munge and slurm are created with the inventory's fixed ids before their packages, which then keep them; a host
where either exists with other ids is refused, because changing an id under running daemons and existing files
breaks more than it fixes.
"""

from __future__ import annotations

from functools import lru_cache
from io import StringIO

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.facts.server import Command, Users
from pyinfra.operations import files, server, systemd

from ..errors import ClusterforgeError
from ..model import SystemUser, ValidCluster
from ..render import etc_hosts
from .packages import install

APT_PROXY_FILE = "/etc/apt/apt.conf.d/01clusterforge-proxy"
BASE_PACKAGES = ["ca-certificates", "procps"]


class HostSetupError(ClusterforgeError):
    pass


def _group_gids() -> dict[str, int]:
    out: dict[str, int] = {}
    for line in (host.get_fact(Command, command="getent group") or "").splitlines():
        name, _, gid, *_ = line.split(":") + ["", "", ""]
        if gid.isdigit():
            out[name] = int(gid)
    return out


def _check_ids(name: str, wanted: SystemUser) -> None:
    users = host.get_fact(Users) or {}
    gids = _group_gids()
    problems = []
    if name in users and users[name].get("uid") != wanted.uid:
        problems.append(f"user {name} has uid {users[name].get('uid')}, the inventory says {wanted.uid}")
    if name in gids and gids[name] != wanted.gid:
        problems.append(f"group {name} has gid {gids[name]}, the inventory says {wanted.gid}")
    taken = [u for u, info in users.items() if info.get("uid") == wanted.uid and u != name]
    if taken:
        problems.append(f"uid {wanted.uid} belongs to {taken[0]}")
    taken_gid = [g for g, gid in gids.items() if gid == wanted.gid and g != name]
    if taken_gid:
        problems.append(f"gid {wanted.gid} belongs to group {taken_gid[0]}")
    if problems:
        raise HostSetupError(f"{host.name}: {'; '.join(problems)}. Set setup={name}_user=SystemUser(uid=..., "
                             "gid=...) in the inventory to ids that are free (or already used for this) on every host")


def _system_user(name: str, wanted: SystemUser) -> None:
    _check_ids(name, wanted)
    server.group(name=f"group {name} ({wanted.gid})", group=name, gid=wanted.gid, system=True)
    server.user(name=f"user {name} ({wanted.uid})", user=name, uid=wanted.uid, group=name, home="/nonexistent",
                shell="/usr/sbin/nologin", system=True, create_home=False, ensure_home=False)


def in_container() -> bool:
    return host.get_fact(Command, command="systemd-detect-virt --container || true").strip() not in ("", "none")


@lru_cache(maxsize=4)
def _etc_hosts(valid: ValidCluster) -> str:
    return "\n".join(etc_hosts.lines(valid))


@deploy("common")
def common() -> None:
    valid: ValidCluster = host.data.clusterforge
    setup = valid.setup
    if setup.apt_proxy:
        files.put(name=f"apt proxy {setup.apt_proxy}", src=StringIO(f'Acquire::http::Proxy "{setup.apt_proxy}";\n'),
                  dest=APT_PROXY_FILE, mode="0644")
    if setup.etc_hosts:
        files.block(name="/etc/hosts: the cluster's hosts", path="/etc/hosts", content=_etc_hosts(valid),
                    marker="# {mark} clusterforge hosts")
    _system_user("munge", setup.munge_user)
    _system_user("slurm", setup.slurm_user)
    packages = list(BASE_PACKAGES)
    if setup.time_sync:
        packages.append("chrony")
    install("common", packages)
    if setup.time_sync:
        # A container's clock is its host's; chrony's unit skips itself there (ConditionCapability=CAP_SYS_TIME).
        run = not in_container()
        systemd.service(name="chrony is enabled" + (" and running" if run else ""), service="chrony",
                        enabled=True, running=True if run else None)
