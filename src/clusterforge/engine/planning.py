"""A deploy run that changes nothing and writes down what it would do: what `clusterforge plan` runs.

With ``CLUSTERFORGE_PLAN`` set to a file, the deploy reads every host's state as always, rehearses its steps
(engine/converge.py), and records each operation that would act, per host, with what it would do: a file's diff
against the installed one (a file that holds a secret only as "changed"), a daemon's start or restart with its
reason, the commands. It then writes that to the file and creates no operation, so pyinfra changes nothing. What is
recorded is the Change each operation was decided into (engine/change.py): the very value a real run executes.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .change import Change

PLAN_FILE = "CLUSTERFORGE_PLAN"
LAYOUT = 1  # of the file written; clusterforge.cli.plan_report reads it


class Recorder:
    """Where a plan is written (``path``); the nodes it would drain first, with the jobs on them, and what else it
    would do before any operation (``first``); and what the deploy would warn of without changing it (``notes``)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.drain: list[str] = []
        self.drain_jobs: list[str] = []
        self.notes: list[str] = []
        self.first: list[str] = []  # what it would do before any operation, beyond the removal's drain

    def write(self, acting: list[tuple[str, str, Change]], planned: list[str], unreachable: list[str]) -> None:
        """The plan: each Change that would act (with its host's name and the operation's name), by host."""
        hosts: dict[str, list[dict[str, Any]]] = {}
        for machine, operation, change in acting:
            why = [f"because {change.why}"] if change.why and change.why not in operation else []
            entry: dict[str, Any] = {"operation": operation, "lines": [*change.said, *why]}
            found = change.diff
            diff = unified(found.path, found.installed, found.wanted) if found is not None else None
            if diff:
                entry["diff"] = diff
            hosts.setdefault(machine, []).append(entry)
        body = {"layout": LAYOUT, "planned": sorted(planned), "unreachable": sorted(unreachable), "hosts": hosts,
                "drain": self.drain, "drain_jobs": self.drain_jobs, "notes": self.notes, "first": self.first}
        Path(self.path).write_text(json.dumps(body, indent=1, sort_keys=True), encoding="utf-8")


def unified(path: str, installed: str | None, rendered: str) -> str:
    """The diff an admin reads: installed file against the one the deploy would write."""
    lines = difflib.unified_diff((installed or "").splitlines(keepends=True), rendered.splitlines(keepends=True),
                                 fromfile=f"{path} (installed)" if installed is not None else "/dev/null",
                                 tofile=f"{path} (inventory)")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
