"""Rules for the cluster's people (Identity): names useradd takes, ids that are the same person's on every host and
collide with nothing a host already has, groups and an admin group that exist, keys sshd can read, and the Slurm
settings pam_slurm_adopt needs."""

from __future__ import annotations

import base64
import binascii
import re
import struct
from collections.abc import Mapping

from ..base import Entry
from ..identity import Identity
from .check import Check
from .directory import directory
from .paths import WHAT, plain_path

# Debian's adduser.conf: FIRST_UID/FIRST_GID 1000, LAST_UID/LAST_GID 59999. Below is the system's (useradd --system
# hands out 100-999 downward from 999), above are Debian's fixed ids (slurm's 64030, nobody's 65534).
FIRST_ID, LAST_ID = 1000, 59999
# useradd's default NAME_REGEX (Debian's shadow), and its length limit.
NAME = re.compile(r"^[a-z_][a-z0-9_-]*$")
MAX_NAME = 32
# The accounts and groups a Debian host has from base-passwd and the packages the deploy installs: a person or
# group of the inventory named like one would be refused by useradd, or would silently join it.
SYSTEM_NAMES = frozenset({
    "root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp", "proxy", "www-data",
    "backup", "list", "irc", "gnats", "nobody", "nogroup", "_apt", "adm", "tty", "disk", "kmem", "dialout", "fax",
    "voice", "cdrom", "floppy", "tape", "sudo", "audio", "dip", "operator", "src", "shadow", "utmp", "video", "sasl",
    "plugdev", "staff", "users", "input", "sgx", "kvm", "render", "crontab", "netdev", "messagebus", "sshd", "ssh",
    "systemd-journal", "systemd-network", "systemd-resolve", "systemd-timesync", "systemd-coredump", "_chrony",
    "munge", "slurm", "slurmrestd", "mysql", "statd", "_rpc", "prometheus", "nvidia-persistenced", "polkitd",
})
# What sshd takes in authorized_keys (ssh-keygen -t), by the name the key's own blob starts with.
KEY_TYPES = frozenset({"ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
                       "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com"})
# A group named in pam_access's list, sshd's Match and SSSD's simple_allow_groups: none of their separators (blank,
# comma, colon) or pattern characters (*, ?, !, parentheses).
SERVICE_GROUP = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]*$")
SHELL = re.compile(r"^/[A-Za-z0-9._/-]+$")
# slurm.conf's settings pam_slurm_adopt needs (Slurm's pam_slurm_adopt page, every release), and clusterforge's.
ADOPT_NEEDS = {"ProctrackType": "proctrack/cgroup", "TaskPlugin": "task/cgroup"}
DEFAULTS = {"ProctrackType": "proctrack/cgroup", "TaskPlugin": "task/cgroup,task/affinity"}


def key_problem(line: str) -> str | None:
    """Why sshd could not use ``line`` as an authorized key, or None: one line of type, base64 blob, optional comment,
    the blob naming the same type."""
    if "\n" in line or "\r" in line:
        return "holds a line break: give each key as its own string"
    parts = line.split(None, 2)
    if len(parts) < 2:
        return "is not 'type base64 [comment]'"
    kind, blob = parts[0], parts[1]
    if kind not in KEY_TYPES:
        return f"{kind!r} is not an OpenSSH public key type ({', '.join(sorted(KEY_TYPES))})"
    try:
        data = base64.b64decode(blob, validate=True)
        (length,) = struct.unpack(">I", data[:4])
        inner = data[4:4 + length].decode()
    except (binascii.Error, struct.error, UnicodeDecodeError):
        return "its key is not base64 of an OpenSSH public key"
    if inner != kind:
        return f"its key is a {inner!r} key, not {kind!r}"
    return None


def identity(check: Check, slurm_extra: Mapping[str, str | None]) -> None:
    spec = check.cluster.identity
    if spec is None:
        return
    _names(check, spec)
    _ids(check, spec)
    groups = {g.name for g in spec.groups}
    for person in spec.people:
        where = f"identity.people[{person.name}]"
        for group in person.groups:
            if group not in groups and not check.refers_to_left_out(f"identity.groups[{group}]"):
                check.add(f"{where}.groups", f"{group!r} is not a group of identity.groups", person, "groups")
        if not SHELL.match(person.shell):
            check.add(f"{where}.shell", f"{person.shell!r} is not an absolute path to a shell", person, "shell")
        for number, key in enumerate(person.ssh_keys, 1):
            problem = key_problem(key)
            if problem is not None:
                check.add(f"{where}.ssh_keys", f"key {number} {problem}", person, "ssh_keys")
    directory(check, spec)
    # A directory's groups are not seen here: `clusterforge check` looks the admin group up on every host.
    if spec.admin_group is not None and spec.directory is None and spec.admin_group not in groups \
            and not check.lacks("identity.groups"):
        check.add("identity.admin_group", f"{spec.admin_group!r} is not a group of identity.groups", spec,
                  "admin_group")
    _service_host_groups(check, spec, groups)
    if not plain_path(spec.home_base) or spec.home_base.rstrip("/") in ("", "/"):
        check.add("identity.home_base", f"{spec.home_base!r} is not a directory other than /, {WHAT}", spec,
                  "home_base")
    _accounting_users(check, spec)
    if spec.adopt:
        _adopt_needs(check, spec, slurm_extra)


def _service_host_groups(check: Check, spec: Identity, groups: set[str]) -> None:
    """Each group let onto the service hosts is one of the declared groups (a directory's are not seen here:
    `clusterforge check` looks them up), named once, and a name pam_access's list and sshd's Match can hold: no
    blank, comma or pattern character. The admin group too: it is named in the same places."""
    seen: set[str] = set()
    for index, name in enumerate(spec.service_host_groups):
        where = f"identity.service_host_groups[{index}]"
        if not SERVICE_GROUP.match(name):
            check.add(where, f"{name!r} is not a group name pam_access and sshd can be given: letters, digits, "
                             "'_', '.', '@' or '-'", spec, "service_host_groups")
        elif name in seen or name == spec.admin_group:
            check.add(where, f"{name!r} is given twice (the admin group is always let in)", spec,
                      "service_host_groups")
        elif spec.directory is None and name not in groups and not check.lacks("identity.groups"):
            check.add(where, f"{name!r} is not a group of identity.groups", spec, "service_host_groups")
        seen.add(name)
    if spec.admin_group is not None and spec.admin_group.strip() and not SERVICE_GROUP.match(spec.admin_group) \
            and not check.found_at("identity.admin_group"):
        check.add("identity.admin_group", f"{spec.admin_group!r} cannot be named in pam_access's list or sshd's "
                  "Match (letters, digits, '_', '.', '@' or '-')", spec, "admin_group")


def _names(check: Check, spec: Identity) -> None:
    for kind, entries in (("people", spec.people), ("groups", spec.groups)):
        for entry in entries:
            where = f"identity.{kind}[{entry.name}]"
            if len(entry.name) > MAX_NAME or not NAME.match(entry.name):
                check.add(where, f"{entry.name!r} is not a name useradd takes: a lower-case letter or '_', then "
                                 f"lower-case letters, digits, '_' or '-', at most {MAX_NAME}", entry)
            elif entry.name in SYSTEM_NAMES:
                check.add(where, f"{entry.name!r} is a system account or group of the hosts", entry)
    # A person's own group is named like them: a site group of that name would be the same group.
    check.duplicates(((p.name, p, f"identity.people[{p.name}]") for p in spec.people), "defined more than once ({at})")
    check.duplicates([*((p.name, p, f"identity.people[{p.name}]") for p in spec.people),
                      *((g.name, g, f"identity.groups[{g.name}]") for g in spec.groups)],
                     "is also a person's name (their own group has it; {at})")


def _system_ids(check: Check) -> dict[int, str]:
    setup = check.cluster.setup
    ids = {setup.munge_user.uid: "the munge user", setup.slurm_user.uid: "the slurm user"}
    if check.cluster.rest is not None:
        ids[setup.slurmrestd_user.uid] = "the slurmrestd user"
    return ids


def _system_gids(check: Check) -> dict[int, str]:
    setup = check.cluster.setup
    gids = {setup.munge_user.gid: "the munge group", setup.slurm_user.gid: "the slurm group"}
    if check.cluster.rest is not None:
        gids[setup.slurmrestd_user.gid] = "the slurmrestd group"
    return gids


def _in_range(check: Check, where: str, what: str, value: int, entry: Entry, field: str) -> bool:
    if FIRST_ID <= value <= LAST_ID:
        return True
    side = "the system range (below 1000)" if value < FIRST_ID else "Debian's fixed ids (above 59999)"
    check.add(where, f"{what} {value} is in {side}: give one from {FIRST_ID} to {LAST_ID}", entry, field)
    return False


def _ids(check: Check, spec: Identity) -> None:
    uids: dict[int, str] = dict(_system_ids(check))
    gids: dict[int, str] = dict(_system_gids(check))
    for person in spec.people:
        where = f"identity.people[{person.name}]"
        if _in_range(check, f"{where}.uid", "uid", person.uid, person, "uid"):
            _unique(check, f"{where}.uid", "uid", person.uid, uids, person.name, person, "uid")
        field = "gid" if person.gid is not None else "uid"
        if person.gid is None or _in_range(check, f"{where}.gid", "gid", person.group_id, person, "gid"):
            _unique(check, f"{where}.{field}", "gid", person.group_id, gids, f"{person.name}'s own group", person,
                    field)
    for group in spec.groups:
        where = f"identity.groups[{group.name}]"
        if _in_range(check, f"{where}.gid", "gid", group.gid, group, "gid"):
            _unique(check, f"{where}.gid", "gid", group.gid, gids, f"group {group.name}", group, "gid")


def _unique(check: Check, where: str, what: str, value: int, taken: dict[int, str], owner: str, entry: Entry,
            field: str) -> None:
    if value in taken and taken[value] != owner:
        check.add(where, f"{what} {value} is also {taken[value]}'s", entry, field)
    else:
        taken[value] = owner


def _accounting_users(check: Check, spec: Identity) -> None:
    """A Slurm user no declared person is would never resolve on the controller: slurmctld could not give it a uid,
    and it could not submit. Only where the inventory declares people (a site's directory is not read here)."""
    if not spec.people:
        return
    people = {p.name for p in spec.people}
    for user in check.cluster.accounting.users:
        if user.name not in people and not check.refers_to_left_out(f"identity.people[{user.name}]"):
            check.add(f"accounting.users[{user.name}]", f"{user.name!r} is not a person of identity.people: Slurm "
                      "could not resolve it on any host", user)


def _adopt_needs(check: Check, spec: Identity, slurm_extra: Mapping[str, str | None]) -> None:
    """pam_slurm_adopt puts an SSH session into the job's cgroup: without proctrack/cgroup and task/cgroup there is
    none, and the module would let the session in unconfined or refuse it (Slurm's page)."""
    for key, needed in ADOPT_NEEDS.items():
        value = slurm_extra.get(key, DEFAULTS[key]) if key in slurm_extra or key in DEFAULTS else None
        plugins = (value or "").split(",")
        if needed not in plugins:
            check.add("identity.adopt", f"pam_slurm_adopt needs {key} to include {needed}, and slurm_conf_extra "
                      f"makes it {value or 'unset'}: set Identity(adopt=False) or keep {needed}", spec, "adopt")
