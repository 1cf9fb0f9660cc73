"""What `clusterforge apply`, `plan` and `roll` share to run the deploy through pyinfra: the deploy file by
default, pyinfra's entry point, the run itself with the events it sends (engine/events.py: pyinfra's callbacks and
log, read on a pipe of their own, never from pyinfra's printed text), and what a failed run says went wrong."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..words import counted

if TYPE_CHECKING:
    from ..model import ValidCluster

# The deploy file shipped in the package (clusterforge/deploy/cluster.py), found without importing the deploy: pyinfra
# runs it by its path. An installed wheel holds it as a plain file.
DEPLOY = Path(str(files("clusterforge").joinpath("deploy", "cluster.py")))
# pyinfra's own entry point, run by this interpreter: the one whose clusterforge the deploy imports.
PYINFRA = "import sys; from pyinfra_cli.main import main; sys.argv[0] = 'pyinfra'; sys.exit(main())"
# pyinfra's config file for these runs: it attaches the events the commands read (engine/events.py).
CONFIG = Path(str(files("clusterforge").joinpath("engine", "pyinfra_config.py")))
EVENTS_FD = "CLUSTERFORGE_EVENTS_FD"  # engine/events.py's, named here without importing pyinfra
# pyinfra's last printed lines kept, for what only its text says (pyinfra_failure); all of it goes to ``text``.
TAIL = 50
NO_CAUSE = "it printed no error output"


def refuse_plain_http_vault(valid: ValidCluster) -> None:
    """A plain http:// VAULT_ADDR the inventory does not allow, refused before pyinfra connects to any host: the
    deploy reads the secrets only once it runs on the hosts (deploy/order.py)."""
    if valid.vault is not None:
        from ..secrets.settings import address_from_env  # the Vault client only for the commands that deploy

        address_from_env(valid.vault)


def pyinfra_command(*arguments: str) -> list[str]:
    """pyinfra's command line, run by this interpreter, with clusterforge's config file."""
    return [sys.executable, "-c", PYINFRA, "--config", str(CONFIG), *arguments]


def host_arguments(hosts: list[str] | None, every: int) -> list[str]:
    """pyinfra's --limit for exactly these hosts, as pyinfra names them (``pyinfra_names``): each name matches
    itself alone as pyinfra's glob; and its --parallel for all of them (``every``: the inventory's hosts, where
    there is no limit). pyinfra's own default is 20 hosts a CPU: on a deploy host of 2 CPUs, 200 hosts that do not
    answer cost five connection timeouts instead of one (benchmarks/unreachable.py)."""
    count = len(hosts) if hosts is not None else every
    return [*(arg for name in hosts or () for arg in ("--limit", name)), "--parallel", str(max(1, count))]


def pyinfra_names(exposed: Mapping[str, Mapping[str, Any]], machines: list[str] | None) -> list[str] | None:
    """The names pyinfra knows these machines by (``loader.Loaded.hosts``: an inventory file may name its pyinfra
    hosts otherwise, with a connector's prefix); None for None (every host)."""
    if machines is None:
        return None
    named = {data["clusterforge_machine"].name: name for name, data in exposed.items()}
    return [named[machine] for machine in machines]


@dataclass(frozen=True)
class Failed:
    """A host that failed after it was reached: at which operation (None: while it was prepared), why (the error
    output's last lines), and what it had changed before."""

    operation: str | None
    cause: tuple[str, ...]
    changed: tuple[str, ...]

    @classmethod
    def of(cls, event: Mapping[str, Any]) -> Failed:
        return cls(event["operation"], tuple(event["cause"]), tuple(event["changed"]))

    @property
    def why(self) -> str:
        return "; ".join(self.cause[-3:]) or NO_CAUSE

    def line(self, host: str) -> str:
        """One line: the host, where it failed, and the last lines of why (pyinfra's text has them all)."""
        where = f"failed at {self.operation}" if self.operation else "failed while it was prepared"
        after = f" after {counted(len(self.changed), 'change')}" if self.changed else ""
        return f"{host}: {where}{after}: {self.why}"


def host_line(event: Mapping[str, Any]) -> str | None:
    """What every command says of a host not reached (reach/failures.py's line) or failed after it was reached;
    None for the events each command words its own way."""
    if event["event"] == "unreachable":
        return event["line"]
    if event["event"] == "failed":
        return Failed.of(event).line(event["host"])
    return None


@dataclass
class PyinfraRun:
    """What a pyinfra run told, from its events; ``tail``: the last lines it printed."""

    returncode: int = 0
    interrupted: bool = False
    hosts: int | None = None  # those it connected to, or tried to
    unreachable: dict[str, str] = field(default_factory=dict)  # host: why it could not be reached
    unreachable_lines: dict[str, str] = field(default_factory=dict)  # host not reached: its line (reach/failures.py)
    failed: dict[str, Failed] = field(default_factory=dict)
    done: dict[str, tuple[str, ...]] = field(default_factory=dict)  # host: the operations that changed something
    said: list[str] = field(default_factory=list)  # pyinfra's word on the run as a whole: its errors
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL))

    @property
    def reasons(self) -> dict[str, str]:
        """Why each host that was not reached, or failed after it was, is not planned or changed."""
        return {**self.unreachable, **{host: failed.why for host, failed in self.failed.items()}}

    @property
    def changes(self) -> int:
        return sum(map(len, self.done.values())) + sum(len(f.changed) for f in self.failed.values())

    def record(self, event: Mapping[str, Any]) -> None:
        kind, host = event["event"], event.get("host", "")
        if kind == "phase" and event["phase"] == "connecting":
            self.hosts = event["hosts"]
        elif kind == "unreachable":
            self.unreachable[host], self.unreachable_lines[host] = event["cause"], event["line"]
        elif kind == "failed":
            self.failed[host] = Failed.of(event)
        elif kind == "done":
            self.done[host] = tuple(event["changed"])
        elif kind == "said":
            self.said.append(event["text"])


def run_pyinfra(command: list[str], env: Mapping[str, str],
                on_event: Callable[[Mapping[str, Any], PyinfraRun], None] = lambda event, run: None,
                text: Callable[[str], None] | None = None) -> PyinfraRun:
    """Run pyinfra's ``command``, handing each event it sends to ``on_event`` as it comes, with the run so far (the
    event recorded in it), and each line it prints to ``text``. The terminal's Ctrl-C reaches pyinfra too (one
    process group): this process notes it and waits for pyinfra to end its run, so that it says what was
    interrupted."""
    run = PyinfraRun()
    read, write = os.pipe()
    try:
        process = subprocess.Popen(command, env={**env, EVENTS_FD: str(write), "PYTHONUNBUFFERED": "1"},
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                                   pass_fds=(write,))
    finally:
        os.close(write)  # the run holds the only writer: the events end with it
    # pyinfra's text is read beside the events, so that neither pipe fills while the other is read.
    printed = threading.Thread(target=_printed, args=(process, run, text), daemon=True)
    printed.start()
    with _interrupts_noted(run), os.fdopen(read, encoding="utf-8", errors="replace") as events:
        for line in events:
            try:
                event = json.loads(line)
            except ValueError:  # a line cut short where pyinfra's process was killed mid-write
                continue
            run.record(event)
            on_event(event, run)
        run.returncode = process.wait()
    printed.join()
    return run


def _printed(process: subprocess.Popen[str], run: PyinfraRun, text: Callable[[str], None] | None) -> None:
    for line in process.stdout or ():
        line = line.rstrip("\n")
        run.tail.append(line)
        if text is not None:
            text(line)


@contextmanager
def _interrupts_noted(run: PyinfraRun) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():  # only there can a signal be handled
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: setattr(run, "interrupted", True))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def pyinfra_failure(run: PyinfraRun) -> list[str]:
    """What went wrong in a failed run, a line each: every host not reached or failed, from its events. Where no
    host says it, pyinfra stopped before any host's operation (its inventory, a deploy file that raised): its word
    on the run, from its log; and its last printed line, which only its text has where the deploy file raised an
    exception pyinfra does not know (after the traceback it prints, the exception's own line)."""
    lines = [*run.unreachable_lines.values(), *(failed.line(host) for host, failed in run.failed.items())]
    if lines:
        return lines
    last = [line.strip() for line in run.tail if line.strip()][-1:]
    return [*run.said, *(line for line in last if not any(line.endswith(said) for said in run.said))]
