"""What the deploy writes for the cluster's people (each person's authorized_keys), where their homes are, and what
in a home keeps the deploy out of it. Pure: what `check` judges of a home is judged the same way."""

from __future__ import annotations

from typing import Protocol

from ..model import ValidCluster
from ..model.identity import Person

LOGIN_GROUPS = frozenset({"login", "compute"})


def authorized_keys(person: Person) -> str:
    """The inventory's keys, one a line, in its order."""
    return "".join(f"{key.strip()}\n" for key in person.ssh_keys)


def shared_home(valid: ValidCluster) -> tuple[str, frozenset[str]] | None:
    """Where the homes' directory is on the NFS server, and the groups that mount it; None where no NFS mount
    serves it."""
    spec, nfs = valid.identity, valid.nfs
    if spec is None or nfs is None:
        return None
    base = spec.home_base.rstrip("/")
    for mount in nfs.mounts:
        point = mount.mount_point.rstrip("/")
        if base == point or base.startswith(point + "/"):
            return mount.export.rstrip("/") + base[len(point):], frozenset(mount.on)
    return None


def home_directory(valid: ValidCluster, groups: tuple[str, ...] | frozenset[str]) -> str | None:
    """The directory this host makes the homes in (as its own path), or None where it makes none."""
    spec = valid.identity
    if spec is None or not spec.people:
        return None
    shared = shared_home(valid)
    if shared is not None:
        server, mounted_by = shared
        if "nfs" in groups:
            return server
        if mounted_by & set(groups):
            return None
    return spec.home_base.rstrip("/") if LOGIN_GROUPS & set(groups) else None


def home_paths(base: str, person: Person) -> tuple[str, str, str]:
    home = f"{base}/{person.name}"
    return home, f"{home}/.ssh", f"{home}/.ssh/authorized_keys"


class PathSeen(Protocol):
    """A path as read without following a link: its kind ("file", "dir", "link", "other") and its owner's uid, as
    text (a host new to a shared /home has no name yet for the people whose homes are there)."""

    kind: str
    user: str


def foreign_home(home: PathSeen | None, ssh: PathSeen | None, person: Person, home_path: str, ssh_path: str) -> str:
    """Why the deploy writes nothing in the person's home (their home or its ``.ssh`` is not a directory of their
    own: a link, a file, someone else's), or "" where both are theirs or absent."""
    for seen, path in ((home, home_path), (ssh, ssh_path)):
        if seen is None or (seen.kind == "dir" and seen.user == str(person.uid)):
            continue
        what = {"link": "a symbolic link", "file": "a file", "dir": "a directory"}.get(seen.kind, "not a directory")
        owner = f", owned by uid {seen.user}" if seen.user != str(person.uid) else ""
        return (f"{path} is {what}{owner}, not a directory of {person.name}'s own: left untouched, and the "
                f"inventory's keys for {person.name} are not written (make it a directory {person.name} owns, or "
                "remove it)")
    return ""
