"""Each node's record as the admission gate keeps it on the controller (admission/records.py, under
``/var/lib/clusterforge/gate/records``, files readable by all; `clusterforge accept` appends its results there too):
per node and test, its last number, its baseline (its first passing result) and the median of its profile's nodes,
which the alert NodeTestFalling holds the node to.

A node's profile is the one /etc/clusterforge/admission.json gives it; a node it does not list (its profile lost
admission, or the file is gone) is compared with no other node. Read afresh at each scrape, as Slurm is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..admission import records

PLAN = "/etc/clusterforge/admission.json"  # the gate's plan (render/admission.py): each node's profile


@dataclass(frozen=True, slots=True)
class Standing:
    """records.Standing with the node's profile ("" where the plan does not list it)."""

    profile: str
    standing: records.Standing


def profiles(plan_text: str | None) -> dict[str, str]:
    """Each node's profile from admission.json's text; none where there is no plan."""
    if plan_text is None:
        return {}
    nodes = json.loads(plan_text)["nodes"]
    return {str(node): str(entry["profile"]) for node, entry in nodes.items()}


def standings(fleet: dict[str, list[dict]], profile_of: dict[str, str]) -> list[Standing]:
    """Every node's last number per test against its baseline and its profile's median, by node then test."""
    groups: dict[str, dict[str, list[dict]]] = {}
    for node, results in fleet.items():
        groups.setdefault(profile_of.get(node) or f"/{node}", {})[node] = results
    found = [Standing(profile_of.get(s.node, ""), s) for group in groups.values() for s in records.standings(group)]
    return sorted(found, key=lambda f: (f.standing.node, f.standing.test))


def read(directory: str = records.ON_CONTROLLER, plan: str = PLAN) -> list[Standing]:
    """The standings of the gate's records; a plan that cannot be found compares each node with none other."""
    try:
        plan_text: str | None = Path(plan).read_text(encoding="utf-8")
    except FileNotFoundError:
        plan_text = None
    return standings(records.read_all(Path(directory)), profiles(plan_text))
