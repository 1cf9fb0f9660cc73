"""What `clusterforge plan` says while its planning deploy runs: a line per host on stderr as pyinfra connects to it
(its state is read next) and as its steps are planned, and for a host that cannot be reached one line naming it,
what happened and what to check, as the operations say it (reach/failures.py), never the SSH library's own lines.
Read from pyinfra's output as it comes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import ClusterforgeError
from ..words import counted
from .pyinfra_run import PYINFRA, host_arguments, pyinfra_failure

if TYPE_CHECKING:
    from ..reach.hosts import Reach

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# "    [@fake/gpu01]  Connected": pyinfra's line about one host; a connector prefix (@fake/, @local/) is no part of
# the host's inventory name.
_HOST_LINE = re.compile(r"^\s*\[(?:@[\w-]+/)?(?P<host>[^\]]+)\]\s+(?P<said>.+?)\s*$")


@dataclass
class PlanningRun:
    returncode: int
    output: str  # pyinfra's stdout and stderr together, for what a failed run says
    unreachable: dict[str, str] = field(default_factory=dict)  # host: why it could not be reached


def run_planning(command: list[str], env: dict[str, str], say: Callable[[str], None],
                 reaches: Mapping[str, Reach] | None = None) -> PlanningRun:
    """Run the planning deploy, saying each host's progress with ``say`` as pyinfra reports it; ``reaches``, how
    each host is reached (for what a failure names), by its name."""
    from ..reach import failures

    lines: list[str] = []
    unreachable: dict[str, str] = {}
    phase = ""
    with subprocess.Popen(command, env={**env, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace") as process:
        assert process.stdout is not None
        for raw in process.stdout:
            line = _ANSI.sub("", raw.rstrip("\n"))
            lines.append(line)
            if line.startswith("--> "):
                phase = line
                continue
            found = _HOST_LINE.match(line)
            if found is None:
                continue
            host, said = found.group("host"), found.group("said")
            if phase.startswith("--> Connecting"):
                if said.startswith("Connected"):
                    say(f"{host}: connected, reading its state")
                else:
                    failed = failures.pyinfra(host, said, (reaches or {}).get(host))
                    unreachable[host] = failed.cause
                    say(failed.line)
            elif phase.startswith("--> Preparing") and said.startswith("Ready"):
                say(f"{host}: planned")
    return PlanningRun(process.returncode, "\n".join(lines), unreachable)


def make_plan(inventory: str, hosts: list[str] | None, deploy_file: str,
              exposed: Mapping[str, Mapping[str, Any]]) -> tuple[str, PlanningRun]:
    """The plan of the deploy on ``hosts`` (all, for None) as the planning run wrote it, and the run; a line per
    host on stderr as it goes. ``exposed``: the inventory's pyinfra hosts (loader.Loaded.hosts), how each is
    reached. Raises ClusterforgeError when no plan could be made."""
    from ..reach.hosts import Reach

    reaches = {(m := data["clusterforge_machine"]).name: Reach.of(m.name, data, m.address) for data in exposed.values()}
    with tempfile.TemporaryDirectory(prefix="clusterforge-plan-") as scratch:
        written = Path(scratch) / "plan.json"
        env = dict(os.environ, CLUSTERFORGE_PLAN=str(written), PYINFRA_PROGRESS="off")
        command = [sys.executable, "-c", PYINFRA, "-y", "--dry", *host_arguments(hosts, len(exposed)), inventory, deploy_file]
        click.echo(f"plan: connecting to {counted(len(hosts) if hosts is not None else len(exposed), 'host')}",
                   err=True)
        run = run_planning(command, env, say=lambda line: click.echo(f"plan: {line}", err=True), reaches=reaches)
        if not written.exists() and run.unreachable:  # pyinfra stops when no host is left: each said above
            raise ClusterforgeError("no host could be reached, nothing was planned: "
                                    + ", ".join(sorted(run.unreachable)))
        if not written.exists():  # the run stopped before the plan: an error, named in pyinfra's output
            raise ClusterforgeError(pyinfra_failure(run.output))
        return written.read_text(encoding="utf-8"), run
