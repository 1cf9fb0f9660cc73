"""One host reached both ways, as clusterforge reaches it: OpenSSH through the operations' connections (reach/ssh.py,
as `check` holds them) and pyinfra's own SSH connector (paramiko, as `plan` and `apply` connect), each failure said
through reach/failures.py. Imported by tests/reach/test_failures.py, and run by it in a network namespace of its
own (`python -m reach.sides HOST`, where no address has a route)."""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from clusterforge.reach import failures
from clusterforge.reach.hosts import Target
from clusterforge.reach.ssh import Connections, Unreachable

REACHED = "reached"


@contextmanager
def answering_http() -> Iterator[int]:
    """A port on loopback that answers HTTP to whatever connects: no SSH there."""
    server = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    threading.Thread(target=answer, daemon=True).start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@dataclass(frozen=True)
class Said:
    openssh: str            # Unreachable's line, or REACHED
    pyinfra: str            # the line of the exception pyinfra raised, or REACHED
    pyinfra_text: str       # the line of pyinfra's words alone (what `plan` reads from its output), or REACHED


def openssh(target: Target) -> str:
    with Connections([target]) as connections:
        try:
            connections.runner(target.name)("true")
        except Unreachable as error:
            return str(error)
    return REACHED


def pyinfra(target: Target, timeout: int | None = None) -> tuple[str, str]:
    """pyinfra's connector to the target, with its CONNECT_TIMEOUT where given."""
    from pyinfra.api import Config, Inventory, State
    from pyinfra.api.exceptions import ConnectError
    from pyinfra.connectors.sshuserclient import client

    # Read ~/.ssh/config and known_hosts afresh, as a new pyinfra run does (they are kept for the process).
    client.get_ssh_config.cache.clear()
    client.get_host_keys.cache.clear()
    inventory = Inventory(([(target.name, dict(target.data))], {}))
    State(inventory, Config(**({"CONNECT_TIMEOUT": timeout} if timeout else {})))
    host = inventory.get_host(target.name)
    try:
        host.connect(raise_exceptions=True, show_errors=False)
    except ConnectError as error:
        return (failures.pyinfra(target.name, error, target.reach).line,
                failures.pyinfra(target.name, error.args[0], target.reach).line)
    host.connector.client.close()
    return REACHED, REACHED


def both(target: Target, timeout: int | None = None) -> Said:
    return Said(openssh(target), *pyinfra(target, timeout))


if __name__ == "__main__":
    from clusters import small_cluster

    from clusterforge.model import resolve

    valid = resolve(small_cluster())
    machine = next(m for m in valid.machines if m.name == valid.controller.name)
    said = both(Target(machine, {"ssh_hostname": sys.argv[1], "ssh_user": "root"}))
    print(json.dumps(said.__dict__))
