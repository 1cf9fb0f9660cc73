"""What `clusterforge apply` says while the deploy runs, read from the events pyinfra's run sends
(engine/events.py), never from its printed text: a line when each phase starts (connecting, preparing, changing),
a line per host as it is connected or not reached, a line per host at its end (done with its changes, or failed at
which operation and why), and one summary line a script can read:

    apply: 4 hosts, 12 changes, 1 failed, 1 not reached

pyinfra's own text goes to a log file of this run (``log_file``), named when the run did not end well; with -v it is
shown as well, on stderr. The log is kept in the XDG state directory (~/.local/state/clusterforge), not a temporary
one: it is what the admin reads after a failed deploy, maybe the next day, after the temporary directory was
cleaned. It is the admin's alone (0600): it holds what pyinfra printed of the hosts, their commands too at -vv."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import click

from ..errors import ClusterforgeError
from ..words import counted
from .pyinfra_run import PyinfraRun, host_line, pyinfra_failure, run_pyinfra

INTERRUPTED = 130
KEPT_LOGS = 20  # the newest logs kept; older ones are removed as a new one is made
NAMED = 5  # the steps a done host's line names before "and N more"


def deploy(command: list[str], deploy_file: str, hosts: int, shown: bool) -> int:
    """Run pyinfra's ``command`` on ``hosts`` hosts, saying how each fares; ``shown``: pyinfra's own text on stderr
    too. Returns apply's exit status: 0 done, 1 a host failed or was not reached or the run stopped, 130
    interrupted."""
    path = log_file()
    with path.open("w", encoding="utf-8") as log:
        run = run_pyinfra(command, dict(os.environ, PYINFRA_PROGRESS="off"),
                          on_event=lambda event, so_far: _say_event(event, deploy_file, so_far.interrupted),
                          text=lambda line: _keep(log, line, shown))
    return _ended(run, path, hosts)


def _keep(log: IO[str], line: str, shown: bool) -> None:
    log.write(line + "\n")
    if shown:
        click.echo(line, err=True)


def _say(line: str) -> None:
    click.echo(f"apply: {line}")


def _say_event(event: Mapping[str, Any], deploy_file: str, interrupted: bool) -> None:
    if (line := said(event, deploy_file, interrupted)) is not None:
        _say(line)


def said(event: Mapping[str, Any], deploy_file: str, interrupted: bool = False) -> str | None:
    """apply's line for an event, None for those it does not speak of; ``interrupted``: the admin interrupted the
    run, which pyinfra ends as if its hosts were done."""
    kind, host = event["event"], event.get("host")
    if kind == "phase":
        hosts = counted(event["hosts"], "host")
        return {"connecting": f"connecting to {hosts}",
                "preparing": f"preparing {hosts} with the deploy file {deploy_file}",
                "changing": f"changing {hosts}"}.get(event["phase"])
    if kind == "connected":
        return f"{host}: connected"
    if kind == "note":
        return f"{host}: note: {event['text']}"
    if kind == "done":
        return f"{host}: {'interrupted' if interrupted else 'done'}, {_changes(event['changed'])}"
    return host_line(event)


def _changes(operations: list[str]) -> str:
    """"N changes: the steps they were made by": the first few, and how many more, so one line however many."""
    if not operations:
        return "no changes"
    # The deploy names each operation "step | operation" (engine/run.py's Here.label); another deploy file's
    # operations are steps of their own.
    steps = list(dict.fromkeys(name.split(" | ", 1)[0] for name in operations))
    more = f", and {len(steps) - NAMED} more" if len(steps) > NAMED else ""
    return f"{counted(len(operations), 'change')}: {', '.join(steps[:NAMED])}{more}"


def summary(run: PyinfraRun, hosts: int) -> str:
    """The run in one line a script can read: ``hosts`` where pyinfra did not say how many it took."""
    taken = run.hosts if run.hosts is not None else hosts
    return (f"{counted(taken, 'host')}, {counted(run.changes, 'change')}, {len(run.failed)} failed, "
            f"{len(run.unreachable)} not reached")


def _ended(run: PyinfraRun, log: Path, hosts: int) -> int:
    _say(summary(run, hosts))
    if run.interrupted or run.returncode == INTERRUPTED:
        _say("interrupted. What changed so far stays changed; every restart or reconfigure it owes is still owed, "
             "and the next deploy makes it")
        _say(f"pyinfra's own output: {log}")
        return INTERRUPTED
    if run.returncode == 0:
        return 0
    if run.failed or run.unreachable:
        _say("fix these hosts and run the deploy again: nothing they owe is lost")
    else:
        click.echo("Error: the deploy stopped: " + "\n  ".join(pyinfra_failure(run)), err=True)
    _say(f"pyinfra's own output: {log}")
    return 1


def log_file() -> Path:
    """A new file, the admin's alone, for this run's pyinfra text; the oldest beyond ``KEPT_LOGS`` removed."""
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    directory = state / "clusterforge"
    path = directory / f"apply-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        for old in sorted(directory.glob("apply-*.log"))[:-(KEPT_LOGS - 1)]:
            old.unlink(missing_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except OSError as error:
        raise ClusterforgeError(f"{directory}: pyinfra's log cannot be kept there ({error.strerror}): set "
                                "XDG_STATE_HOME to a directory of yours") from None
    return path
