"""What a pyinfra run tells clusterforge's commands, through pyinfra's API rather than its printed text: each host
connected to or not reached (its state callbacks), and each host planned (the deploy's own word), one JSON object a
line on the file descriptor the command gives in ``CLUSTERFORGE_EVENTS_FD``.

The commands run pyinfra's CLI with ``--config`` naming pyinfra_config.py, which calls ``attach``: pyinfra runs that
file once its State exists, before the inventory gives the State its hosts (``State.init``, which makes the list of
callback handlers: the handler is added right after it). A host not reached is said as reach/failures.py says it,
from the exception pyinfra caught, the same line `check` gives. paramiko's own log of a failed handshake (a
traceback a host) is silenced: the host's line says it.
"""

from __future__ import annotations

import json
import logging
import os
from typing import IO, Any

from pyinfra.api.state import BaseStateCallback

from ..reach import failures
from ..reach.hosts import Reach

EVENTS_FD = "CLUSTERFORGE_EVENTS_FD"

_channel: IO[str] | None = None


def _out() -> IO[str] | None:
    global _channel
    if _channel is None and (fd := os.environ.get(EVENTS_FD)):
        _channel = os.fdopen(int(fd), "w", buffering=1, encoding="utf-8")
    return _channel


def emit(event: str, host: str, **fields: Any) -> None:
    """One event, where a command listens (nothing otherwise)."""
    if (out := _out()) is not None:
        out.write(json.dumps({"event": event, "host": host, **fields}) + "\n")


def machine_name(host: Any) -> str:
    """The inventory's name of a pyinfra host (an inventory file may call it otherwise: a connector's prefix)."""
    machine = host.data.get("clusterforge_machine")
    return machine.name if machine is not None else host.name


class _Handler(BaseStateCallback):
    @staticmethod
    def host_connect(state: Any, host: Any) -> None:
        emit("connected", machine_name(host))

    @staticmethod
    def host_connect_error(state: Any, host: Any, error: BaseException) -> None:
        name = machine_name(host)
        machine = host.data.get("clusterforge_machine")
        reach = Reach.of(name, host.data, machine.address if machine is not None else None)
        failed = failures.pyinfra(name, error, reach)
        emit("unreachable", name, kind=failed.kind, cause=failed.cause, line=failed.line)


def attach(state: Any) -> None:
    """The events of this pyinfra ``state``'s run, once its hosts are known; paramiko's tracebacks silenced."""
    logging.getLogger("paramiko").setLevel(logging.CRITICAL)
    initialise = state.init

    def init(*args: Any, **kwargs: Any) -> Any:
        done = initialise(*args, **kwargs)
        state.add_callback_handler(_Handler())
        return done

    state.init = init
