"""Run an inventory file and find its Cluster, turning every mistake in it into a located, readable problem."""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from dataclasses import replace
from pathlib import Path

import pydantic

from .errors import ClusterforgeError, InventoryError, Problem
from .model import Cluster, ValidCluster, resolve
from .model.base import deferring, type_problems
from .model.gather import stray
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


def load_cluster(path: str | Path) -> Cluster:
    """The one Cluster an inventory file defines. Raises ClusterforgeError/InventoryError for any mistake in it."""
    return cluster_of(path, run_inventory(path))


def every_problem(path: str | Path, version: SlurmVersion | None = None) -> ValidCluster:
    """The resolved cluster of an inventory file, or one InventoryError with every problem in it: the entries' type
    mistakes (kept while the file runs, instead of stopping it at the first) and the cross-entry rules' problems on
    the entries that could be built, each named by where it is in the cluster."""
    with deferring() as broken:
        try:
            namespace = run_inventory(path)
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
    cluster = cluster_of(path, namespace)
    strays = stray(cluster, broken)
    try:
        valid = resolve(cluster, version)
    except InventoryError as error:
        raise InventoryError([*strays, *error.problems]) from None
    if strays:
        raise InventoryError(strays)
    return valid


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
