"""What `clusterforge plan` says while its planning deploy runs: a line per host on stderr as pyinfra connects to it
(its state is read next) and as its steps are planned, and for a host that cannot be reached one line naming it,
what happened and what to check, as the operations say it (reach/failures.py), never the SSH library's own lines.
Read from the events the run sends (engine/events.py: pyinfra's state callbacks and the deploy's own word), not
from pyinfra's printed text, which is kept only for what a failed run says."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from ..errors import ClusterforgeError
from ..words import counted
from .pyinfra_run import host_arguments, pyinfra_command, pyinfra_failure

EVENTS_FD = "CLUSTERFORGE_EVENTS_FD"  # engine/events.py's, named here without importing pyinfra


@dataclass
class PlanningRun:
    returncode: int
    output: str  # pyinfra's stdout and stderr together, for what a failed run says
    unreachable: dict[str, str] = field(default_factory=dict)  # host: why it could not be reached


def run_planning(command: list[str], env: dict[str, str], say: Callable[[str], None]) -> PlanningRun:
    """Run the planning deploy, saying each host's progress with ``say`` as its events come."""
    unreachable: dict[str, str] = {}
    read, write = os.pipe()
    try:
        process = subprocess.Popen(command, env={**env, EVENTS_FD: str(write), "PYTHONUNBUFFERED": "1"},
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                                   pass_fds=(write,))
    finally:
        os.close(write)  # the run holds the only writer: the events end with it
    output: list[str] = []
    # pyinfra's text is read beside the events, so that neither pipe fills while the other is read.
    printed = threading.Thread(target=lambda: output.extend(process.stdout or ()), daemon=True)
    printed.start()
    with os.fdopen(read, encoding="utf-8", errors="replace") as events:
        for line in events:
            event = json.loads(line)
            host = event["host"]
            if event["event"] == "connected":
                say(f"{host}: connected, reading its state")
            elif event["event"] == "unreachable":
                unreachable[host] = event["cause"]
                say(event["line"])
            elif event["event"] == "planned":
                say(f"{host}: planned")
    process.wait()
    printed.join()
    return PlanningRun(process.returncode, "".join(output), unreachable)


def make_plan(inventory: str, hosts: list[str] | None, deploy_file: str,
              exposed: Mapping[str, Mapping[str, Any]]) -> tuple[str, PlanningRun]:
    """The plan of the deploy on ``hosts`` (all, for None) as the planning run wrote it, and the run; a line per
    host on stderr as it goes. ``exposed``: the inventory's pyinfra hosts (loader.Loaded.hosts). Raises ClusterforgeError when no plan could be made."""
    with tempfile.TemporaryDirectory(prefix="clusterforge-plan-") as scratch:
        written = Path(scratch) / "plan.json"
        env = dict(os.environ, CLUSTERFORGE_PLAN=str(written), PYINFRA_PROGRESS="off")
        command = pyinfra_command("-y", "--dry", *host_arguments(hosts, len(exposed)), inventory, deploy_file)
        click.echo(f"plan: connecting to {counted(len(hosts) if hosts is not None else len(exposed), 'host')}",
                   err=True)
        run = run_planning(command, env, say=lambda line: click.echo(f"plan: {line}", err=True))
        if not written.exists() and run.unreachable:  # pyinfra stops when no host is left: each said above
            raise ClusterforgeError("no host could be reached, nothing was planned: "
                                    + ", ".join(sorted(run.unreachable)))
        if not written.exists():  # the run stopped before the plan: an error, named in pyinfra's output
            raise ClusterforgeError(pyinfra_failure(run.output))
        return written.read_text(encoding="utf-8"), run
