"""Work every host of a run would otherwise repeat: pyinfra runs the deploy once per host, and every host holds
the same ValidCluster, so a result derived from the cluster alone is computed by the first host and shared.
Rendering slurm.conf for 10,000 nodes takes a quarter of a second; doing it on every host would take most of an hour.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

from ..model import ValidCluster

T = TypeVar("T")

# Keyed by identity (ValidCluster holds dicts and is not hashable); the cluster is kept with its result, so its
# id cannot be reused by another object while the entry lives.
_RESULTS: dict[tuple[Callable[..., object], int], tuple[ValidCluster, object]] = {}


def once_per_cluster(function: Callable[[ValidCluster], T]) -> Callable[[ValidCluster], T]:
    @functools.wraps(function)
    def shared(valid: ValidCluster) -> T:
        key = (function, id(valid))
        if key not in _RESULTS:
            _RESULTS[key] = (valid, function(valid))
        return _RESULTS[key][1]  # type: ignore[return-value]

    return shared
