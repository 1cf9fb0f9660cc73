"""What `clusterforge check` judges of the people's homes where a host makes them (render/identity.py), pure: a home
or its ``.ssh`` that is not a directory of the person's own (a link, a file, someone else's) keeps the deploy out of
it, and the inventory's keys from it. Read as root without following a link (``stat`` without ``-L``)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..model.identity import Identity
from ..render.identity import foreign_home, home_paths
from .findings import Finding

_KINDS = {"directory": "dir", "regular file": "file", "regular empty file": "file", "symbolic link": "link"}


@dataclass(frozen=True, slots=True)
class Seen:
    kind: str
    user: str


def read_command(spec: Identity, base: str) -> str:
    """The homes and .ssh of the people the inventory gives keys, one ``kind|owner's uid|path`` a line; a missing
    path prints nothing."""
    paths = [path for p in spec.people if p.ssh_keys for path in home_paths(base, p)[:2]]
    return f"stat -c '%F|%u|%n' -- {shlex.join(paths)} 2>/dev/null || true"


def homes(spec: Identity, base: str, stat: str) -> tuple[str, list[Finding]]:
    seen = {}
    for line in stat.splitlines():
        kind, _, rest = line.partition("|")
        user, _, path = rest.partition("|")
        if path:
            seen[path] = Seen(_KINDS.get(kind, "other"), user)
    problems = []
    people = [p for p in spec.people if p.ssh_keys]
    for person in people:
        home, ssh, _ = home_paths(base, person)
        why = foreign_home(seen.get(home), seen.get(ssh), person, home, ssh)
        if why:
            problems.append(Finding(why))
    return f"{len(people) - len(problems)} of {len(people)} homes in {base} take the inventory's keys", problems
