"""Run an inventory file and find its Cluster, turning every mistake in it into a located, readable problem."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pydantic

from .errors import ClusterforgeError, InventoryError, Problem
from .model import Cluster, Machine, ValidCluster, resolve
from .model.base import Entry, deferring, type_problems
from .model.gather import stray
from .model.placeholders import Placeholder, collecting, unfilled
from .versions import SlurmVersion


def _line_in(path: Path, error: BaseException) -> str:
    """``file:line`` of the innermost traceback frame inside the inventory file."""
    location = str(path)
    for frame in traceback.extract_tb(error.__traceback__):
        if Path(frame.filename).resolve() == path.resolve():
            location = f"{os.path.relpath(frame.filename)}:{frame.lineno}"
    return location


def _type_problems(path: Path, error: pydantic.ValidationError) -> InventoryError:
    """A type error raised outside an entry's constructor (which reports its own), located by the traceback."""
    origin = _line_in(path, error)
    return InventoryError([replace(p, origin=origin) for p in type_problems(None, error.title, error, None)])


@dataclass(frozen=True, slots=True)
class Loaded:
    """An inventory file, run and resolved: its cluster, and the pyinfra hosts its groups expose."""

    path: str
    cluster: Cluster
    valid: ValidCluster
    hosts: dict[str, dict[str, Any]]   # each pyinfra host the file's groups expose, once: its name and host data


def load_cluster(path: str | Path) -> Cluster:
    """The one Cluster an inventory file defines, unresolved. Raises one InventoryError with every entry built wrong
    (each named by where it sits in the cluster), or a ClusterforgeError for any other mistake in the file."""
    namespace, broken, _ = _run_deferring(path)
    cluster = cluster_of(path, namespace)
    if strays := stray(cluster, broken):
        raise InventoryError(strays)
    return cluster


def every_problem(path: str | Path, version: SlurmVersion | None = None) -> ValidCluster:
    """The resolved cluster of an inventory file, or one InventoryError with every problem in it (``load``)."""
    return load(path, version).valid


def load(path: str | Path, version: SlurmVersion | None = None) -> Loaded:
    """An inventory file run and resolved, or one InventoryError with every problem in it: the entries' type
    mistakes (kept while the file runs, instead of stopping it at the first) and the cross-entry rules' problems on
    the entries that could be built, each named by where it is in the cluster, and the placeholders left unfilled
    (model/placeholders.py). Every command loads an inventory so, and reports what `clusterforge validate` reports."""
    namespace, broken, made = _run_deferring(path)
    cluster = cluster_of(path, namespace)
    strays = stray(cluster, broken)
    left = unfilled(cluster, made)
    try:
        valid = resolve(cluster, version)
    except InventoryError as error:
        raise InventoryError([*strays, *error.problems, *left]) from None
    if strays or left:
        raise InventoryError([*strays, *left])
    hosts = exposed(namespace)
    if not hosts:
        # pyinfra would deploy to no host and call it a success.
        raise ClusterforgeError(f"{path}: exposes no hosts to pyinfra: add "
                                "`controller, compute, login, database, nfs = host_groups(cluster, ssh_user=...)`")
    return Loaded(str(path), cluster, valid, hosts)


def exposed(namespace: dict[str, object]) -> dict[str, dict[str, Any]]:
    """The pyinfra hosts of an inventory's groups (``inventory.host_groups``), each once, in the order found."""
    found: dict[str, dict[str, Any]] = {}
    for value in namespace.values():
        if not isinstance(value, (list, tuple)):
            continue
        for item in value:
            if (isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], dict)
                    and isinstance(item[1].get("clusterforge_machine"), Machine)):
                found.setdefault(item[0], item[1])
    return found


def _run_deferring(path: str | Path) -> tuple[dict[str, object], list[Entry], list[Placeholder]]:
    """The names an inventory file defines, run with its entries' type mistakes kept (``deferring``), the entries
    built wrong, and the placeholders it made; a file that stops on its own problems raises them all together."""
    with deferring() as broken, collecting() as made:
        try:
            return run_inventory(path), broken, made
        except InventoryError as error:
            # The file resolved its cluster itself (host_groups): add the entries built wrong outside it.
            shown = {(p.message, p.value, p.origin) for p in error.problems}
            outside = [e for e in broken if not any((p.message, p.value, p.origin) in shown for p in e.type_errors)]
            raise InventoryError([*stray(None, outside), *error.problems]) from None
        except ClusterforgeError as error:
            if not broken:
                raise
            # The file's own code tripped over an entry built without its wrong fields: those mistakes come first.
            raise InventoryError([*stray(None, broken), Problem("inventory", str(error))]) from None


def run_inventory(path: str | Path) -> dict[str, object]:
    """The names an inventory file defines once run (its Cluster, its pyinfra host groups), every mistake in it
    turned into a ClusterforgeError/InventoryError."""
    path = Path(path)
    if not path.is_file():
        raise ClusterforgeError(f"{path}: no such inventory file")
    if "." not in sys.path:  # as pyinfra does, so an inventory can import modules next to it
        sys.path.append(".")
    try:
        namespace = runpy.run_path(str(path), run_name="__clusterforge_inventory__")
    except InventoryError:
        raise
    except pydantic.ValidationError as error:
        raise _type_problems(path, error) from None
    except SyntaxError as error:
        raise ClusterforgeError(f"{path}:{error.lineno}: invalid Python: {error.msg}") from None
    except ClusterforgeError as error:
        raise ClusterforgeError(f"{_line_in(path, error)}: {error}") from None
    except Exception as error:  # noqa: BLE001 - any failure of the admin's own code is reported, not raised
        raise ClusterforgeError(f"{_line_in(path, error)}: {type(error).__name__}: {error}") from None
    return namespace


def cluster_of(path: str | Path, namespace: dict[str, object]) -> Cluster:
    """The one Cluster among the names an inventory file defined."""
    clusters = {name: value for name, value in namespace.items() if isinstance(value, Cluster)}
    if not clusters:
        raise ClusterforgeError(f"{path}: defines no Cluster (build one: cluster = Cluster(...))")
    distinct = {id(c): c for c in clusters.values()}
    if len(distinct) > 1:
        raise ClusterforgeError(f"{path}: defines several clusters ({', '.join(sorted(clusters))}); keep one per file")
    return next(iter(distinct.values()))
