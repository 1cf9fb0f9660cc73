"""The type mistakes of a cluster built while deferring (``base.deferring``), each named by where its entry sits in
the cluster, as the rules name entries (``profiles[dgx-h100].sockets``, ``nodes[gpu-[001-016]].leaf``,
``partitions[gpu].nodes``); and the cluster the rules then run on: the same, less every entry holding a wrong value
(it stands at a default, or is missing), and what was so left out, so that a rule does not call a name referring
to one unknown, nor judge all profiles with one missing. An entry whose only mistake is an unknown field is kept."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from .. import hostlists
from ..errors import Problem
from .base import Entry, Named
from .cluster import Cluster
from .hosts import NfsExport, NfsMount
from .nodes import Nodes

# The field that names an entry of a tuple in the rules' paths, where it is not ``name``.
_KEYS = {Nodes: "names", NfsMount: "mount_point", NfsExport: "path"}


@dataclass(frozen=True)
class LeftOut:
    """What the rules do not see: the paths of the entries left out, the names of the nodes they held, and the
    collections (``profiles``, ``fabric.leaves``) holding one left out whose name is not known, its name being
    its mistake: a name referring to any of them may refer to it."""

    entries: frozenset[str] = frozenset()
    nodes: frozenset[str] = frozenset()
    unnamed: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Gathered:
    """The type problems, named; the cluster for the rules (None where the cluster itself could not be built);
    what it lacks; and the paths of the wrong fields of entries kept (a rule's problem there repeats the mistake)."""

    problems: tuple[Problem, ...]
    cluster: Cluster | None
    left_out: LeftOut
    wrong_fields: tuple[str, ...]


def _key_field(entry: Entry) -> str | None:
    return _KEYS.get(type(entry), "name" if isinstance(entry, Named) else None)


def _key(entry: Entry, index: int) -> str:
    field = _key_field(entry)
    value = entry.__dict__.get(field) if field is not None else None
    return str(value) if isinstance(value, str) else str(index)


def _unnamed(entry: Entry) -> bool:
    """Whether the entry is one of a collection named by a field (its name) that holds no name."""
    field = _key_field(entry)
    return field is not None and not isinstance(entry.__dict__.get(field), str)


def _children(entry: Entry, path: str) -> Iterator[tuple[str, str, Entry]]:
    """(field, path, child) of every entry held by ``entry``'s fields."""
    prefix = f"{path}." if path else ""
    for field in type(entry).model_fields:
        value = entry.__dict__.get(field)
        if isinstance(value, Entry):
            yield field, f"{prefix}{field}", value
        elif isinstance(value, tuple):
            for index, item in enumerate(value):
                if isinstance(item, Entry):
                    yield field, f"{prefix}{field}[{_key(item, index)}]", item


def _paths(entry: Entry, path: str = "") -> Iterator[tuple[str, Entry]]:
    yield path, entry
    for _, child_path, child in _children(entry, path):
        yield from _paths(child, child_path)


def entries(cluster: Cluster) -> Iterator[tuple[str, Entry]]:
    """Every entry of the cluster, the cluster first, with its path as the rules name it."""
    return _paths(cluster)


def _named(path: str, problem: Problem) -> Problem:
    where = ".".join(part for part in (path, problem.where) if part)
    return replace(problem, where=where)


def gather(cluster: Cluster) -> Gathered:
    """Every type problem of the entries in ``cluster``, named by its path, and the cluster the rules can read."""
    placed = list(_paths(cluster))
    broken = [(path, entry) for path, entry in placed if entry.type_errors]
    if not broken:
        return Gathered((), cluster, LeftOut(), ())
    problems = tuple(_named(path, p) for path, entry in broken for p in entry.type_errors)
    wrong = tuple(_named(path, p).where for path, entry in broken for p in entry.type_errors)
    left: list[tuple[str, Entry]] = []
    kept = _without_incomplete(cluster, "", left)
    nodes = frozenset(name for _, entry in left if isinstance(entry, Nodes) for name in _node_names(entry))
    unnamed = frozenset(path.rsplit("[", 1)[0] for path, entry in left if path.endswith("]") and _unnamed(entry))
    return Gathered(problems, kept if isinstance(kept, Cluster) else None,
                    LeftOut(frozenset(path for path, _ in left), nodes, unnamed), wrong)


def stray(cluster: Cluster | None, broken: list[Entry]) -> list[Problem]:
    """The type problems of entries built wrong but not in ``cluster`` (any, without one), named by their class."""
    placed = {id(entry) for _, entry in _paths(cluster)} if cluster is not None else set()
    return [_named(type(e).__name__, p) for e in broken if id(e) not in placed for p in e.type_errors]


def _node_names(entry: Nodes) -> list[str]:
    names = entry.__dict__.get("names")
    try:
        return hostlists.expand(names) if isinstance(names, str) else []
    except hostlists.HostlistError:
        return []


def _without_incomplete(entry: Entry, path: str, left: list[tuple[str, Entry]]) -> Entry | None:
    """``entry`` without the entries below it that could not be built (noted in ``left``), or None where it could
    not be built itself, or needs one that could not."""
    if not (entry.whole or (entry.complete and not path)):  # a cluster with a wrong field keeps its rules
        left.append((path, entry))
        return None
    update: dict[str, object] = {}
    for field, child_path, child in _children(entry, path):
        kept = _without_incomplete(child, child_path, left)
        if kept is child:
            continue
        value = update.get(field, entry.__dict__[field])
        if isinstance(value, tuple):
            update[field] = tuple(kept if item is child else item for item in value if item is not child or kept)
            continue
        info = type(entry).model_fields[field]
        if kept is None and info.is_required():
            left.append((path, entry))
            return None
        update[field] = kept if kept is not None else info.get_default(call_default_factory=True)
    return entry.model_copy(update=update) if update else entry
