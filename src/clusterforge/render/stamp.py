"""/etc/clusterforge/deployed.json on every host: which clusterforge deployed it, from which inventory, when and by
whom. The deploy writes it as its last step on the host (roles/stamp.py), and `clusterforge check` reads it
(check/deployed.py).

    {"schema": 1, "clusterforge": "0.1.dev5+g1a2b3c4", "inventory": "<sha256>", "cluster": "prod",
     "deployed_at": "2025-06-01T09:30:00Z", "deployed_by": "alice", "deployed_from": "admin01"}

``inventory`` is the inventory's digest (model/digest.py); ``deployed_at`` is UTC.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

PATH = "/etc/clusterforge/deployed.json"
SCHEMA = 1  # goes up when a field is removed, renamed or changes its meaning; a new field leaves it


@dataclass(frozen=True, slots=True)
class Stamp:
    clusterforge: str  # the version that deployed the host
    inventory: str     # the inventory's digest
    cluster: str
    deployed_at: str   # ISO 8601, UTC
    deployed_by: str   # the login name on the deploying machine
    deployed_from: str  # the deploying machine's host name

    def same_deploy(self, other: Stamp) -> bool:
        """Whether both say the same clusterforge deployed the same inventory (whenever, whoever)."""
        return (self.clusterforge, self.inventory) == (other.clusterforge, other.inventory)


class NotAStamp(ValueError):
    """The file is not a stamp this clusterforge reads."""


def render(stamp: Stamp) -> str:
    return json.dumps({"schema": SCHEMA, **asdict(stamp)}, indent=1) + "\n"


def read(text: str) -> Stamp:
    """The stamp a file holds, or NotAStamp saying why not."""
    try:
        found = json.loads(text)
    except ValueError:
        raise NotAStamp("not JSON") from None
    if not isinstance(found, dict) or found.get("schema") != SCHEMA:
        raise NotAStamp(f"not a stamp of schema {SCHEMA}")
    fields = Stamp.__dataclass_fields__
    missing = [name for name in fields if not isinstance(found.get(name), str)]
    if missing:
        raise NotAStamp(f"without {', '.join(missing)}")
    return Stamp(**{name: found[name] for name in fields})
