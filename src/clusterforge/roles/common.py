"""common: what every host needs before any Slurm package: apt proxy, /etc/hosts, the daemons' users, time (and
slurmrestd's user on its host).

munge and slurm are created with the inventory's fixed ids before their packages, which then keep them; a host
where either exists with other ids is refused, because changing an id under running daemons and existing files
breaks more than it fixes.
"""

from __future__ import annotations

from functools import lru_cache

from ..errors import DeployError, for_pyinfra
from ..model import SystemUser, ValidCluster
from ..render import etc_hosts
from ..render.slurmrestd import USER
from ..engine import ops
from ..engine.footprint import Footprint
from ..engine.run import Here, step
from ..engine.state import State

BLOCK_START, BLOCK_END = "# BEGIN clusterforge hosts", "# END clusterforge hosts"
APT_PROXY_FILE = "/etc/apt/apt.conf.d/01clusterforge-proxy"
ETC_HOSTS = "/etc/hosts"


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """The apt proxy, /etc/hosts (its text: the cluster's block goes into the one there), what every host gets
    first, and the daemons' users and groups, by name and by id."""
    setup = valid.setup
    users = {"munge": setup.munge_user, "slurm": setup.slurm_user}
    if valid.rest is not None and "rest" in groups:
        users[USER] = setup.slurmrestd_user
    accounts = [*users, *{str(i) for u in users.values() for i in (u.uid, u.gid)}]
    return Footprint(paths=(APT_PROXY_FILE, ETC_HOSTS), texts=(ETC_HOSTS,), shown=(APT_PROXY_FILE,),
                     packages=("ca-certificates", "procps"), known=("ca-certificates", "procps"),
                     accounts=tuple(sorted(accounts)))


def _check_ids(here: Here, name: str, wanted: SystemUser) -> None:
    found = here.state
    problems = []
    uid, gid = found.user_id(name), found.group_id(name)
    if uid is not None and uid != wanted.uid:
        problems.append(f"user {name} has uid {uid}, the inventory says {wanted.uid}")
    if gid is not None and gid != wanted.gid:
        problems.append(f"group {name} has gid {gid}, the inventory says {wanted.gid}")
    if found.user_named(wanted.uid) not in (None, name):
        problems.append(f"uid {wanted.uid} belongs to {found.user_named(wanted.uid)}")
    if found.group_named(wanted.gid) not in (None, name):
        problems.append(f"gid {wanted.gid} belongs to group {found.group_named(wanted.gid)}")
    if problems:
        raise for_pyinfra(DeployError(f"{here.name}: {'; '.join(problems)}. Set setup={name}_user=SystemUser("
                                      "uid=..., gid=...) in the inventory to ids that are free (or already used for "
                                      "this) on every host"))


def account_commands(found: State, name: str, wanted: SystemUser) -> list[str]:
    commands = []
    if found.group_id(name) is None:
        commands.append(f"groupadd --system --gid {wanted.gid} {name}")
    if found.user_id(name) is None:
        commands.append(f"useradd --system --uid {wanted.uid} --gid {name} --home-dir /nonexistent --no-create-home "
                        f"--shell /usr/sbin/nologin {name}")
    return commands


@lru_cache(maxsize=4)
def _hosts_block(valid: ValidCluster) -> str:
    return "\n".join([BLOCK_START, *etc_hosts.lines(valid), BLOCK_END])


def with_block(text: str, block: str) -> str:
    """/etc/hosts with the cluster's block in place of the one there, or appended."""
    lines = text.splitlines()
    if BLOCK_START in lines and BLOCK_END in lines[lines.index(BLOCK_START):]:
        start = lines.index(BLOCK_START)
        end = lines.index(BLOCK_END, start)
        lines[start:end + 1] = block.splitlines()
    else:
        lines += block.splitlines()
    return "\n".join(lines) + "\n"


@step("common", footprint=footprint)
def common(here: Here) -> None:
    valid = here.valid
    setup = valid.setup
    found = here.state
    if setup.apt_proxy:
        ops.file(here, name=f"apt proxy {setup.apt_proxy}", path=APT_PROXY_FILE,
                 content=f'Acquire::http::Proxy "{setup.apt_proxy}";\n')
    if setup.etc_hosts:
        ops.file(here, name="/etc/hosts: the cluster's hosts", path=ETC_HOSTS,
                 content=with_block(found.texts.get(ETC_HOSTS, ""), _hosts_block(valid)))
    _check_ids(here, "munge", setup.munge_user)
    _check_ids(here, "slurm", setup.slurm_user)
    ops.commands(here, name=f"users munge ({setup.munge_user.uid}) and slurm ({setup.slurm_user.uid})",
                 commands=account_commands(found, "munge", setup.munge_user)
                 + account_commands(found, "slurm", setup.slurm_user),
                 otherwise="munge and slurm exist with the inventory's ids")
    if valid.rest is not None and "rest" in here.groups:
        # slurmrestd's own user, on its host only: slurmrestd refuses root (roles/rest.py).
        _check_ids(here, USER, setup.slurmrestd_user)
        ops.commands(here, name=f"user {USER} ({setup.slurmrestd_user.uid})",
                     commands=account_commands(found, USER, setup.slurmrestd_user),
                     otherwise=f"{USER} exists with the inventory's ids")
