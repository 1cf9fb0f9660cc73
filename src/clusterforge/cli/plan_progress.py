"""What `clusterforge plan` says while its planning deploy runs: a line per host on stderr as pyinfra connects to it
(its state is read next) and as its steps are planned, and for a host that cannot be reached one line naming it,
what happened and what to check, as the operations say it (reach/failures.py), never the SSH library's own lines.
Read from the events the run sends (engine/events.py: pyinfra's state callbacks and the deploy's own word), not
from pyinfra's printed text."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from ..errors import ClusterforgeError
from ..words import counted
from .pyinfra_run import PyinfraRun, host_arguments, host_line, pyinfra_command, pyinfra_failure, run_pyinfra


def said(event: Mapping[str, Any]) -> str | None:
    """What `plan` says of an event: a host connected, not reached (why, and what to check), planned, or failed
    after it was reached (its state could not be read)."""
    kind, host = event["event"], event.get("host")
    if kind == "connected":
        return f"{host}: connected, reading its state"
    if kind == "planned":
        return f"{host}: planned"
    return host_line(event)


def _say(event: Mapping[str, Any], run: PyinfraRun) -> None:
    if (line := said(event)) is not None:
        click.echo(f"plan: {line}", err=True)


def make_plan(inventory: str, hosts: list[str] | None, deploy_file: str,
              exposed: Mapping[str, Mapping[str, Any]]) -> tuple[str, PyinfraRun]:
    """The plan of the deploy on ``hosts`` (all, for None) as the planning run wrote it, and the run; a line per
    host on stderr as it goes. ``exposed``: the inventory's pyinfra hosts (loader.Loaded.hosts). Raises
    ClusterforgeError when no plan could be made, KeyboardInterrupt when the admin interrupted it."""
    with tempfile.TemporaryDirectory(prefix="clusterforge-plan-") as scratch:
        written = Path(scratch) / "plan.json"
        env = dict(os.environ, CLUSTERFORGE_PLAN=str(written), PYINFRA_PROGRESS="off")
        command = pyinfra_command("-y", "--dry", *host_arguments(hosts, len(exposed)), inventory, deploy_file)
        click.echo(f"plan: connecting to {counted(len(hosts) if hosts is not None else len(exposed), 'host')}",
                   err=True)
        run = run_pyinfra(command, env, _say)
        if run.interrupted:
            raise KeyboardInterrupt
        if not written.exists() and run.unreachable:  # pyinfra stops when no host is left: each said above
            raise ClusterforgeError("no host could be reached, nothing was planned: "
                                    + ", ".join(sorted(run.unreachable)))
        if not written.exists() and run.returncode == 0:
            raise ClusterforgeError(f"{deploy_file} ran to its end without writing a plan: only clusterforge's deploy "
                                    "(its deploy/order.py) plans")
        if not written.exists():  # the run stopped before the plan
            raise ClusterforgeError("the plan could not be made:\n  " + "\n  ".join(pyinfra_failure(run)))
        return written.read_text(encoding="utf-8"), run
