"""/etc/clusterforge/admission.json on the controller: what each node of a profile with admission must pass, read
by the admission gate (gate/) and by `clusterforge accept`.

    {"cluster": "...", "nodes": {"gpu01": {"profile": "dgx-h100", "budget": 1800, "tests": [entry, ...]}}}

Each entry is admission.tests.entries' (what runs, its floors and unit, its share of the budget). Keys sorted and
nodes in name order, so that the same inventory gives the same bytes and the gate restarts only when it changes.
None where no profile has admission: the file is then removed from the controller.
"""

from __future__ import annotations

import json
from typing import Any

from .. import hostlists
from ..model import ValidCluster

PATH = "/etc/clusterforge/admission.json"
FILE = "admission.json"


def plan(valid: ValidCluster) -> dict[str, Any] | None:
    if not valid.admission:
        return None
    nodes = {}
    for name in sorted(valid.admission, key=hostlists.natural_key):
        found = valid.admission[name]
        nodes[name] = {"profile": found.profile, "budget": found.budget, "tests": [dict(t) for t in found.tests]}
    return {"cluster": valid.name, "nodes": nodes}


def render(valid: ValidCluster) -> str | None:
    """The plan as JSON, one node to a line: a change shows as the nodes it changes, and the file stays a few
    hundred bytes a node (every node carries its tests, so that the gate reads one node's without a lookup)."""
    found = plan(valid)
    if found is None:
        return None
    compact = {"sort_keys": True, "separators": (",", ":")}
    nodes = ",\n".join(f"{json.dumps(name)}:{json.dumps(node, **compact)}" for name, node in found["nodes"].items())
    return f'{{"cluster":{json.dumps(found["cluster"])},"nodes":{{\n{nodes}\n}}}}\n'
