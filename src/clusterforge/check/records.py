"""`clusterforge check`'s records check: each node's last result per test against its baseline (its first passing
result) and the median of its profile's nodes, from the gate's records on the controller (read over check's
connection) merged with `clusterforge accept`'s on this machine (admission/records.py: one format, one reader). A
node more than its profile's ``Admission.falling_percent`` below either is a finding: a node falling behind before it
fails a floor.

The median is over the nodes of one profile: an H200's all_reduce is not held to an H100's.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from ..admission import records
from ..model import ValidCluster
from .findings import Finding

GATE_RECORDS = records.ON_CONTROLLER


def read_command() -> str:
    """Every record file of the gate, one after the other; nothing where the gate has written none."""
    where = shlex.quote(GATE_RECORDS)
    return f"test -d {where} || exit 0; find {where} -maxdepth 1 -type f -name '*{records.SUFFIX}' -exec cat {{}} +"


def _figure(value: float) -> str:
    return f"{value:.4g}" if abs(value) < 1000 else f"{value:.0f}"


def _share(below: float | None) -> str:
    return "" if below is None else f" ({-below * 100 + 0.0:+.1f} %)"


def _against(standing: records.Standing) -> str:
    unit = f" {standing.unit}" if standing.unit else ""
    base = "none" if standing.baseline is None else _figure(standing.baseline) + _share(standing.below_baseline)
    median = "none" if standing.median is None else _figure(standing.median) + _share(standing.below_median)
    return f"{standing.test} {_figure(standing.value)}{unit} (baseline {base}, median {median})"


def _profiles(valid: ValidCluster, fleet: Mapping[str, list[dict]]) -> dict[str, dict[str, list[dict]]]:
    """The fleet by the nodes' profiles; a node the inventory no longer holds to admission is a group of its own."""
    groups: dict[str, dict[str, list[dict]]] = {}
    for node, results in fleet.items():
        plan = valid.admission.get(node)
        groups.setdefault(plan.profile if plan is not None else f"node {node}", {})[node] = results
    return groups


def compare(valid: ValidCluster, fleet: Mapping[str, list[dict]]) -> tuple[str, list[Finding]]:
    """What check shows (each node's last number per test, against its baseline and its profile's median) and a
    finding for each more than the node's falling_percent below either."""
    standing = sorted((s for group in _profiles(valid, fleet).values() for s in records.standings(group)),
                      key=lambda s: (s.node, s.test))
    if not standing:
        return "no node has a record with a number yet", []
    by_node: dict[str, list[records.Standing]] = {}
    for s in standing:
        by_node.setdefault(s.node, []).append(s)
    detail = "; ".join(f"{node}: " + ", ".join(_against(s) for s in found) for node, found in by_node.items())
    findings = []
    for s in standing:
        plan = valid.admission.get(s.node)
        if plan is None or not s.falls(plan.spec.falling_percent / 100):
            continue
        below = [f"{b * 100:.1f} % below its {what} {_figure(ref)}"
                 for what, b, ref in (("baseline", s.below_baseline, s.baseline), ("profile's median", s.below_median,
                                                                                   s.median))
                 if b is not None and ref is not None and b > plan.spec.falling_percent / 100]
        unit = f" {s.unit}" if s.unit else ""
        findings.append(Finding(f"{s.node} {s.test} {_figure(s.value)}{unit} is " + " and ".join(below)
                                + f" (more than the {plan.spec.falling_percent:g} % its profile {plan.profile} "
                                  "allows)"))
    return detail, findings


def fleet(gate_text: str, where: str, local: Mapping[str, list[dict]]) -> dict[str, list[dict]]:
    """The gate's records (``gate_text``, read from ``where``) merged with this machine's."""
    return records.merge(records.parse(gate_text, where), local)
