"""What `clusterforge check` judges of a site directory (model/identity.py's Directory) on one host, pure: SSSD runs,
the directory answers for the names the inventory gives (the accounting users Slurm is told about, the admin and
login groups: validation cannot see them), and the host's NSS gives the directory's answer, not a local account's.

Cheap and honest: a lookup by name through SSSD alone (``getent -s sss``), which asks the directory where SSSD's cache
has no fresh entry, and the same lookup through nsswitch.conf, as Slurm makes it. Not a proof that the directory is
reachable this second (a cached entry answers while it is not), nor that ids agree across hosts (each host is
judged alone, its uids shown)."""

from __future__ import annotations

from collections.abc import Sequence

from .findings import Finding


def _entries(getent: str) -> dict[str, list[str]]:
    found = {}
    for line in getent.splitlines():
        fields = line.strip().split(":")
        if len(fields) >= 3 and fields[2].isdigit():
            found[fields[0]] = fields
    return found


def directory(active: str, users: Sequence[str], groups: Sequence[str], sss_passwd: str, nss_passwd: str,
              sss_group: str) -> tuple[str, list[Finding]]:
    """``active``: what ``systemctl is-active sssd`` says; the getent outputs of the ``users`` (through SSSD, and
    through NSS) and of the ``groups`` (through SSSD)."""
    if active.strip() != "active":
        return f"sssd {active.strip() or 'unknown'}", [Finding(f"sssd is {active.strip() or 'not running'}: no "
                                                               "lookup reaches the directory")]
    directory_users, host_users, directory_groups = _entries(sss_passwd), _entries(nss_passwd), _entries(sss_group)
    problems = []
    for name in users:
        entry, seen = directory_users.get(name), host_users.get(name)
        if entry is None:
            problems.append(Finding(f"{name}, a Slurm user of the inventory, is not in the directory (getent -s sss "
                                    "passwd): Slurm cannot resolve them"))
        elif seen is None:
            problems.append(Finding(f"{name} is in the directory (uid {entry[2]}) but not resolved through "
                                    "nsswitch.conf: its passwd line does not ask sss"))
        elif seen[2] != entry[2]:
            problems.append(Finding(f"{name} resolves to uid {seen[2]} here, the directory says {entry[2]}: a local "
                                    "account of that name comes first"))
    problems += [Finding(f"group {name} is not in the directory (getent -s sss group)") for name in groups
                 if name not in directory_groups]
    shown = [f"{name} uid {directory_users[name][2]}" for name in users if name in directory_users]
    if not users and not groups:
        return "sssd active; no names to look up (no accounting users, admin or login group)", problems
    return "sssd active; " + ", ".join([*shown, f"{len(directory_groups)} of {len(groups)} groups"]), problems
