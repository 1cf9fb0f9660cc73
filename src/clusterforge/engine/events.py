"""What a pyinfra run tells clusterforge's commands, through pyinfra's API rather than its printed text, one JSON
object a line on the file descriptor the command gives in ``CLUSTERFORGE_EVENTS_FD``:

- ``phase``: pyinfra starts connecting, preparing (each host's state read, the changes decided) or changing, with
  how many hosts it takes into that phase;
- ``connected`` and ``unreachable``: each host, from pyinfra's connect callbacks; a host not reached is said as
  reach/failures.py says it, from the exception pyinfra caught, the same line `check` gives;
- ``planned``: a host planned (the deploy's own word, engine/converge.py);
- ``note``: what the deploy warns of on a host and leaves as it is (engine/run.py's ``Here.warn_once``);
- ``failed``: a host that failed after it was reached, at which operation (none: while it was prepared) and why:
  the failed command's error output as pyinfra received it, else the error clusterforge's own function raised, else
  what pyinfra logged about the host while it failed (a timeout, a lost connection, a fact it could not read);
- ``done``: a host that ran the deploy to its end, with the operations that changed something there;
- ``said``: what pyinfra logged at warning level or above about no host: its word on the run as a whole (the
  error that stopped it before any host's operation).

An event carries host and operation names, counts and error text: never an operation's arguments or commands, which
pyinfra itself prints only at -vv. Error output is what pyinfra prints of a failed command anyway.

The commands run pyinfra's CLI with ``--config`` naming pyinfra_config.py, which calls ``attach``: pyinfra runs that
file once its State exists, before the inventory gives the State its hosts (``State.init``, which makes the list of
callback handlers: the handler is added right after it). pyinfra has no callback for its phases, so ``set_stage``
is wrapped the same way. paramiko's own log of a failed handshake (a traceback a host) is silenced: the host's line
says it.
"""

from __future__ import annotations

import json
import logging
import os
from typing import IO, TYPE_CHECKING, Any

import click
import gevent
from pyinfra import logger as pyinfra_log
from pyinfra.api.state import BaseStateCallback, StateStage
from pyinfra.api.util import log_error_or_warning
from pyinfra.context import ctx_host

from ..reach import failures
from ..reach.hosts import Reach

if TYPE_CHECKING:
    from pyinfra.api import Host, State

EVENTS_FD = "CLUSTERFORGE_EVENTS_FD"
# The last lines of a failure's output an event carries: enough for its cause; pyinfra's text keeps all of it.
CAUSE_LINES = 20
PHASES = {StateStage.Connect: "connecting", StateStage.Prepare: "preparing", StateStage.Execute: "changing"}

_channel: IO[str] | None = None


def _out() -> IO[str] | None:
    global _channel
    if _channel is None and (fd := os.environ.get(EVENTS_FD)):
        _channel = os.fdopen(int(fd), "w", buffering=1, encoding="utf-8")
    return _channel


def emit(event: str, **fields: Any) -> None:
    """One event, where a command listens (nothing otherwise)."""
    if (out := _out()) is not None:
        out.write(json.dumps({"event": event, **fields}) + "\n")


def machine_name(host: Any) -> str:
    """The inventory's name of a pyinfra host (an inventory file may call it otherwise: a connector's prefix)."""
    machine = host.data.get("clusterforge_machine")
    return machine.name if machine is not None else host.name


class _Run(BaseStateCallback):
    """One pyinfra run's events: its callbacks, with what pyinfra logged about each host (``said``, from
    ``_Said``) and the errors clusterforge's own functions raised there (``raised``, from ``failed_with``)."""

    def __init__(self) -> None:
        self.said: dict[Host, list[str]] = {}  # since the host's current operation began
        self.raised: dict[Host, str] = {}
        self.reported: set[Host] = set()
        self.order: list[str] | None = None  # the operations in pyinfra's order, once it starts changing

    def host_connect(self, state: State, host: Host) -> None:
        emit("connected", host=machine_name(host))

    def host_connect_error(self, state: State, host: Host, error: BaseException) -> None:
        name = machine_name(host)
        machine = host.data.get("clusterforge_machine")
        reach = Reach.of(name, host.data, machine.address if machine is not None else None)
        failed = failures.pyinfra(name, error, reach)
        emit("unreachable", host=name, kind=failed.kind, cause=failed.cause, line=failed.line)

    def operation_host_start(self, state: State, host: Host, op_hash: str) -> None:
        self.said.pop(host, None)
        self.raised.pop(host, None)

    def operation_end(self, state: State, op_hash: str) -> None:
        self.report_failed(state)

    def host_disconnect(self, state: State, host: Host) -> None:
        self.report(state, host)

    def stage(self, state: State, stage: StateStage) -> None:
        if stage == StateStage.Execute:
            # Computed once: pyinfra sorts every host's operations again each time it is asked.
            self.order = state.get_op_order()
            self.report_failed(state)  # the hosts that failed while they were prepared
        if stage in PHASES:
            emit("phase", phase=PHASES[stage], hosts=_taken(state, stage))

    def report_failed(self, state: State) -> None:
        for host in state.failed_hosts & state.activated_hosts:  # activated: reached, then failed
            self.report(state, host)

    def report(self, state: State, host: Host) -> None:
        """The host's outcome, once: failed, or done where the run got to its changes."""
        if host in self.reported:
            return
        if host in state.failed_hosts:
            failed = self._failed_operation(state, host)
            emit("failed", host=machine_name(host), operation=_name(state, failed) if failed else None,
                 cause=self._cause(state, host, failed), changed=self._changed(state, host))
        elif self.order is not None:
            emit("done", host=machine_name(host), changed=self._changed(state, host))
        else:
            return
        self.reported.add(host)

    def _operations(self, state: State, host: Host) -> list[str]:
        return [op for op in self.order or () if op in state.ops[host]]

    def _failed_operation(self, state: State, host: Host) -> str | None:
        for op in self._operations(state, host):
            meta = state.ops[host][op].operation_meta
            if meta.is_complete() and meta.did_error():
                return op
        return None

    def _changed(self, state: State, host: Host) -> list[str]:
        """The operations that changed something on the host, as pyinfra's table of results counts them."""
        return [_name(state, op) for op in self._operations(state, host)
                if (meta := state.ops[host][op].operation_meta).is_complete() and meta.did_change()]

    def _cause(self, state: State, host: Host, failed: str | None) -> list[str]:
        if host in self.raised:
            return [self.raised[host]]
        output: list[str] = []
        if failed is not None:
            meta = state.ops[host][failed].operation_meta
            output = meta.stderr_lines or meta.stdout_lines
        return [line for line in output or self.said.get(host, []) if line.strip()][-CAUSE_LINES:]


def _name(state: State, op_hash: str) -> str:
    return ", ".join(sorted(state.get_op_meta(op_hash).names))


def _taken(state: State, stage: StateStage) -> int:
    if stage == StateStage.Connect:
        return sum(1 for host in state.inventory if state.is_host_in_limit(host))
    return len(state.active_hosts)


class _Said(logging.Handler):
    """pyinfra's log at warning level and above: a line about the host whose greenlet logs it (its prefix, the
    host's, taken off) is kept for that host's failure; a line of pyinfra's own flow (the main greenlet, where no
    host is at work), its word on the run, is sent. Any other line (a callback's traceback, a new host key learnt
    while connecting) stays in pyinfra's text alone."""

    def __init__(self, run: _Run) -> None:
        super().__init__(logging.WARNING)
        self.run = run

    def emit(self, record: logging.LogRecord) -> None:
        # pyinfra's closing "Error: ..." after a failure says only that it failed (and a fact's every argument).
        if record.funcName == log_error_or_warning.__name__:
            return
        try:
            text = record.getMessage()
            host = ctx_host.get()
            if host is None and gevent.getcurrent().parent is None:
                emit("said", text=click.unstyle(text).strip().removeprefix("--> "))
            elif host is not None and text.startswith(host.print_prefix):
                self.run.said.setdefault(host, []).append(click.unstyle(text.removeprefix(host.print_prefix)))
        except Exception:
            self.handleError(record)


def failed_with(state: State, host: Host, error: BaseException) -> None:
    """Why clusterforge's own function failed on ``host``, in its own words: pyinfra logs only the exception's
    class and arguments."""
    for handler in getattr(state, "callback_handlers", ()):
        if isinstance(handler, _Run):
            handler.raised[host] = str(error)


def attach(state: Any) -> None:
    """The events of this pyinfra ``state``'s run, once its hosts are known; paramiko's tracebacks silenced."""
    logging.getLogger("paramiko").setLevel(logging.CRITICAL)
    run = _Run()
    pyinfra_log.addHandler(_Said(run))
    initialise, set_stage = state.init, state.set_stage

    def init(*args: Any, **kwargs: Any) -> Any:
        done = initialise(*args, **kwargs)
        state.add_callback_handler(run)
        return done

    def stage(stage: StateStage) -> None:
        set_stage(stage)
        run.stage(state, stage)

    state.init = init
    state.set_stage = stage
