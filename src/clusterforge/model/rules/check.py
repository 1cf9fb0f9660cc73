"""What every rule family shares: the cluster under check, the problems found so far, and the small helpers that
several rules need (expand a hostlist or report it, report names defined twice, names Slurm would refuse)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from ... import hostlists
from ...errors import Problem
from ...versions import SlurmVersion
from ..base import Entry, closest
from ..gather import LeftOut

if TYPE_CHECKING:
    from ..cluster import Cluster

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                      r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
MAX_NAME = 63  # HOST_NAME_MAX less the terminating NUL
# What slurm.conf's parser treats specially, checked against the real slurmctld (tests/realslurm): NodeName=ALL
# is fatal and NodeName=DEFAULT / PartitionName=DEFAULT set defaults instead of making a node or partition.
RESERVED_NODE_NAMES = frozenset({"all", "default"})
RESERVED_PARTITION_NAMES = frozenset({"default"})


_NUMBER = re.compile(r"[0-9]+")


def _shape(name: str) -> tuple[str, tuple[int, ...]]:
    """A node name's letters with each number as '#', and its numbers: gpu-node-032 -> ('gpu-node-#', (32,))."""
    return _NUMBER.sub("#", name), tuple(int(n) for n in _NUMBER.findall(name))


def nodes_meant(unknown: Sequence[str], known: Iterable[str]) -> list[str] | None:
    """The known node each of ``unknown`` most likely misspells, or None where one of them misspells none. A name
    misspells a node whose letters are a little different (gpu-nod-032, gpu-node-032) or whose numbers are padded
    differently (gpu-node-32); never one of the same letters and another number: gpu05 beside gpu[01-04] is a node
    that is not there, not gpu04."""
    by_shape: dict[tuple[str, tuple[int, ...]], str] = {}
    for name in known:
        by_shape.setdefault(_shape(name), name)
    letters = {shape for shape, _ in by_shape}
    close_to: dict[str, str | None] = {}  # the names of a range share their letters: each looked up once
    meant = []
    for name in unknown:
        shape, numbers = _shape(name)
        found = by_shape.get((shape, numbers))
        if found is None and shape not in letters:
            close = close_to[shape] if shape in close_to else close_to.setdefault(shape, closest(shape, letters))
            found = by_shape.get((close, numbers)) if close is not None else None
        if found is None:
            return None
        meant.append(found)
    return meant


def address_ok(address: str) -> bool:
    try:
        ipaddress.ip_address(address)
        return True
    except ValueError:
        return bool(HOSTNAME.match(address))


class Check:
    def __init__(self, cluster: Cluster, version: SlurmVersion, left_out: LeftOut | None = None) -> None:
        self.cluster = cluster
        self.version = version
        self.problems: list[Problem] = []
        # Entries left out for a type mistake (model/gather.py): a name referring to one is not reported unknown.
        self.left_out = left_out if left_out is not None else LeftOut()
        # Whether a node entry's names are not a hostlist (reported): any name may have been one of its nodes.
        self.names_unread = False

    def refers_to_left_out(self, where: str) -> bool:
        """Whether the entry at ``where`` (``profiles[dgx-h100]``) was left out for a type mistake, or may have been:
        an entry of its collection was left out whose name is not known (its name was the mistake)."""
        return where in self.left_out.entries or where.split("[", 1)[0] in self.left_out.unnamed

    def node_left_out(self, name: str) -> bool:
        """Whether node ``name`` was, or may have been, in an entry left out for a type mistake or whose names are
        not a hostlist: a list naming it does not name an unknown node, nor does any rule judge its nodes."""
        return name in self.left_out.nodes or self.nodes_left_out()

    def nodes_left_out(self) -> bool:
        """Whether a node entry was left out whose names are not known, or whose names are not a hostlist."""
        return "nodes" in self.left_out.unnamed or self.names_unread

    def lacks(self, collection: str) -> bool:
        """Whether an entry of ``collection`` (``profiles``) was left out: a rule over all of them would guess."""
        return any(path.startswith(collection + "[") for path in self.left_out.entries)

    def add(self, where: str, message: str, entry: Entry | None = None, field: str | None = None,
            key: str | None = None) -> None:
        """Record a problem at ``where``; the origin is the line of ``field`` (and ``key`` in it) in ``entry``'s
        call when given, else the entry's own line."""
        origin = None
        if entry is not None:
            origin = entry.origin_of(field, key) if field is not None else entry.origin
        self.problems.append(Problem(where, message, origin))

    def found_at(self, where: str) -> bool:
        """Whether a problem was already recorded at ``where`` or below it."""
        return any(p.where == where or p.where.startswith(where + ".") for p in self.problems)

    def sample(self, names: Iterable[str], limit: int = 8) -> str:
        names = list(dict.fromkeys(names))
        text = hostlists.compress(names, self.version)
        return text if len(names) <= limit else f"{text} ({len(names)} nodes)"

    @staticmethod
    def meant(name: str, known: Collection[str]) -> str:
        """`` (did you mean 'x'?)``, naming the one of ``known`` that ``name`` most likely misspells, or ''."""
        close = closest(name, known)
        return f" (did you mean {close!r}?)" if close is not None else ""

    def unknown_nodes(self, where: str, unknown: Sequence[str], known: Collection[str], entry: Entry) -> None:
        """Report ``unknown``, named where a node list gave them, as not nodes of this cluster, with the nodes they
        most likely misspell where each has one."""
        meant = nodes_meant(unknown, known)
        hint = f" (did you mean {self.sample(meant)}?)" if meant else ""
        self.add(where, f"{self.sample(unknown)} {'is not a node' if len(unknown) == 1 else 'are not nodes'} of this "
                        f"cluster{hint}", entry)

    def expand(self, where: str, expression: str, entry: Entry, field: str | None = None) -> list[str] | None:
        """The names of a hostlist, or None with the problem recorded."""
        try:
            return hostlists.expand(expression)
        except hostlists.HostlistError as error:
            self.add(where, str(error), entry, field)
            return None

    def duplicates(self, items: Iterable[tuple[str, Entry, str]], message: str) -> None:
        """Report every name given again, at the entry that repeats it; each item is (name, entry, where), and
        ``{at}`` in the message says where the first one was written."""
        first: dict[str, Entry] = {}
        for name, entry, where in items:
            if name not in first:
                first[name] = entry
                continue
            at = f"at {first[name].origin}" if first[name].origin else "earlier"
            self.add(where, message.format(at=at), entry)

    def name(self, where: str, name: str, entry: Entry, what: str,
             reserved: frozenset[str] = frozenset()) -> bool:
        """Whether Slurm would accept ``name``; if not, the problem is recorded."""
        if not NAME.match(name):
            self.add(where, f"{name!r} is not a valid {what} name: use letters, digits, '.', '-' or '_'", entry)
        elif len(name) > MAX_NAME:
            self.add(where, f"{name!r} is longer than {MAX_NAME} characters", entry)
        elif name.lower() in reserved:
            self.add(where, f"{name!r} is a reserved word in Slurm and cannot name a {what}", entry)
        else:
            return True
        return False

    def address(self, where: str, address: str, entry: Entry) -> None:
        if not address_ok(address):
            self.add(where, f"{address!r} is neither an IP address nor a DNS name", entry)

    def feature(self, where: str, feature: str, entry: Entry) -> None:
        if not re.match(r"^[A-Za-z0-9_.-]+$", feature):
            self.add(where, f"{feature!r} is not a valid node feature: letters, digits, '.', '-' or '_'", entry)

    def positive(self, where: str, value: int | None, entry: Entry) -> None:
        if value is not None and value <= 0:
            self.add(where, f"must be positive, not {value}", entry)

