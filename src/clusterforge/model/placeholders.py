"""What an example inventory leaves for the site to fill: values written ``placeholder(example, what)``, and digests
written as 64 zeros. The example value keeps the file runnable (``show`` and ``render`` work on it), while validation
and every command that reaches hosts refuse each one left, naming its line and what to put there.

    hcas=placeholder(("mlx5_0", "mlx5_1"), "the HCAs' names: `ibdev2netdev` on one node"),
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

from ..errors import Problem
from .base import caller_origin, collecting_into
from .cluster import Cluster
from .containers import Artifact
from .gather import entries

T = TypeVar("T")
ZEROS = "0" * 64


@dataclass(frozen=True, slots=True)
class Placeholder:
    what: str
    origin: str | None
    filename: str | None  # the inventory file's, as the interpreter ran it


# Every placeholder made in this process outside a loader's `collecting()`: the ones pyinfra's own run of an inventory
# file made, which `host_groups` refuses.
_made: list[Placeholder] = []
_collector: ContextVar[list[Placeholder] | None] = ContextVar("clusterforge_placeholders", default=None)


def placeholder(example: T, what: str) -> T:
    """``example``, marked as a value the site must replace: ``what`` says what to put there and where to find it."""
    origin = caller_origin()
    made = Placeholder(what, str(origin) if origin is not None else None,
                       origin.filename if origin is not None else None)
    collector = _collector.get()
    (collector if collector is not None else _made).append(made)
    return example


def collecting() -> AbstractContextManager[list[Placeholder]]:
    """The placeholders made inside, in order (an inventory file run by the loader)."""
    return collecting_into(_collector)


def outside_loader(cluster: Cluster) -> list[Problem]:
    """What ``unfilled`` finds where no loader collects (an inventory file pyinfra runs itself, which must stop before
    any connection); nothing under a loader, which reports them with the file's other problems."""
    if _collector.get() is not None:
        return []
    filename = cluster._origin.filename if cluster._origin is not None else None
    return unfilled(cluster, [p for p in _made if p.filename == filename])


def unfilled(cluster: Cluster | None, made: tuple[Placeholder, ...] | list[Placeholder]) -> list[Problem]:
    """One problem for each placeholder made and for each artifact pinned to 64 zeros, with what to put there."""
    problems = [Problem("placeholder", f"replace it with {p.what}", p.origin) for p in dict.fromkeys(made)]
    if cluster is None:
        return problems
    for path, entry in entries(cluster):
        if isinstance(entry, Artifact) and entry.sha256 == ZEROS:
            fetch = f"download {entry.url}" if entry.url else f"take {entry.source}"
            problems.append(Problem(f"{path}.sha256", f"a placeholder (64 zeros): {fetch} once and pin what "
                                    f"`sha256sum {entry.filename}` prints", entry.origin_of("sha256")))
    return problems
