"""The inventory's digest: which inventory a host was deployed from (the deploy's stamp, render/stamp.py), compared
by `clusterforge check` with the inventory it is given.

It is the SHA-256 of the cluster's entries as the inventory file built them, not of the file: a comment, the layout
or a variable's name changes nothing, a value does. A field left at its default counts as absent, whether written or
not, so a clusterforge that adds a field (with its default) reads the same inventory to the same digest; what a
clusterforge derives from the entries is its own, and the stamp names that version beside the digest. The entries
hold no secret (Vault holds them; the inventory names only where), so neither does the digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined, to_jsonable_python

from .cluster import Cluster


def inventory_digest(cluster: Cluster) -> str:
    """The hex SHA-256 of ``cluster``'s entries, the same on every machine and in every run."""
    text = json.dumps(_canonical(cluster), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _canonical(value: Any) -> Any:
    """``value`` as plain JSON data: an entry as its fields that are not at their defaults, by value (two entries
    that hold the same are equal here, where pydantic also compares where each was written)."""
    if isinstance(value, BaseModel):
        kept = {}
        for name, field in type(value).model_fields.items():
            held = getattr(value, name)
            default = field.get_default(call_default_factory=True)
            if default is not PydanticUndefined and to_jsonable_python(held) == to_jsonable_python(default):
                continue
            kept[name] = _canonical(held)
        return kept
    if isinstance(value, Mapping):
        return {str(key): _canonical(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(item) for item in value]
    if isinstance(value, (set, frozenset)):  # a set's order is the process's hash seed's: sorted instead
        return sorted((_canonical(item) for item in value), key=lambda item: json.dumps(item, sort_keys=True))
    return to_jsonable_python(value)
