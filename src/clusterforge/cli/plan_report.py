"""What `clusterforge plan` prints from the file a planning deploy run wrote (engine/planning.py), and its exit code.

Exit codes as terraform plan's: 0 the plan was made, 1 an error (a host could not be reached, or the run failed);
with --detailed-exitcode, as `terraform plan -detailed-exitcode`: 0 nothing to do, 1 an error, 2 changes pending.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ClusterforgeError
from ..engine.planning import LAYOUT
from ..words import counted

NOTHING = 0
INCOMPLETE = 1  # an error: a host not planned, or no plan at all
PENDING = 2  # with --detailed-exitcode only; without it changes pending exit NOTHING, as terraform plan does


@dataclass(frozen=True)
class Operation:
    name: str
    lines: tuple[str, ...]
    diff: str | None = None


@dataclass(frozen=True)
class PlanReport:
    planned: tuple[str, ...]
    unreachable: tuple[str, ...] = ()
    hosts: dict[str, tuple[Operation, ...]] = field(default_factory=dict)
    drain: tuple[str, ...] = ()
    drain_jobs: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # what the deploy would warn of and leave as it is
    first: tuple[str, ...] = ()  # what the deploy would do before any operation (drain the nodes a driver moves on)

    @property
    def changes(self) -> int:
        return sum(len(found) for found in self.hosts.values()) + len(self.drain)

    def exit_code(self, detailed: bool) -> int:
        if self.unreachable:
            return INCOMPLETE
        return PENDING if detailed and self.changes else NOTHING

    def operations(self) -> set[str]:
        """The names of the operations that would act somewhere, as pyinfra names them in its results."""
        return {o.name for found in self.hosts.values() for o in found}


def parse(text: str) -> PlanReport:
    body: dict[str, Any] = json.loads(text)
    if body.get("layout") != LAYOUT:
        raise ClusterforgeError("the plan was written by another version of clusterforge's deploy")
    return PlanReport(
        planned=tuple(body["planned"]), unreachable=tuple(body.get("unreachable", ())),
        hosts={name: tuple(Operation(o["operation"], tuple(o["lines"]), o.get("diff")) for o in found)
               for name, found in body["hosts"].items()},
        drain=tuple(body.get("drain", ())), drain_jobs=tuple(body.get("drain_jobs", ())),
        notes=tuple(body.get("notes", ())), first=tuple(body.get("first", ())))


def render(report: PlanReport, hosts: Callable[[list[str]], str] = ", ".join,
           reasons: Mapping[str, str] | None = None) -> str:
    """The plan as an admin reads it: each operation that would act and what it would do, once for the hosts that
    would do exactly the same (``hosts`` names a group of them, in order, e.g. as a Slurm hostlist); ``reasons``
    says why a host could not be reached, where pyinfra said it."""
    out: list[str] = []
    if report.drain:
        # What the deploy does by default (--data drain_wait=0): drain, look once, stop while a job runs there.
        jobs = (f"; jobs there now: {', '.join(report.drain_jobs)}. The deploy would drain "
                f"{'it' if len(report.drain) == 1 else 'them'} and stop, changing nothing, until these jobs end "
                "(--data drain_wait=SECONDS waits for them)") if report.drain_jobs else "; no job runs there"
        out += [f"Nodes removed from the inventory, to drain first: {hosts(list(report.drain))}{jobs}", ""]
    if report.first:
        out += [*(f"Before any change: {line}" for line in report.first), ""]
    same: dict[tuple[Operation, ...], list[str]] = {}
    for name in report.planned:
        same.setdefault(report.hosts.get(name, ()), []).append(name)
    for found, names in same.items():
        if not found:
            continue
        out.append(f"{hosts(names)}: {len(found)} to do")
        for operation in found:
            out.append(f"  {operation.name}")
            out += [f"      {line}" for line in operation.lines]
            if operation.diff:
                out += [f"      {line}" for line in operation.diff.rstrip("\n").splitlines()]
    idle = same.get((), [])
    if idle:
        out.append(f"{hosts(idle)}: nothing to do")
    for name in report.unreachable:
        why = (reasons or {}).get(name)
        out.append(f"{name}: COULD NOT BE REACHED, not planned" + (f" ({why})" if why else ""))
    out += [f"Note, the deploy changes nothing here: {note}" for note in report.notes]
    busy = len(report.planned) - len(idle)
    count = len(report.planned)
    summary = (f"Plan: {counted(report.changes, 'change')} on {busy} of {counted(count, 'host')}" if report.changes
               else f"Plan: nothing to do on {counted(count, 'host')}")
    if report.unreachable:
        summary += f"; {len(report.unreachable)} could not be reached ({', '.join(report.unreachable)})"
    return "\n".join([*out, "", summary + "."])
