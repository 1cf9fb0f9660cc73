"""How each host is reached, read once from the inventory's pyinfra host data (``ssh_hostname``, ``ssh_user``,
``ssh_key``, ``ssh_port``, ``ssh_known_hosts_file``, ``ssh_strict_host_key_checking``, and pyinfra's ``_sudo`` and
``_sudo_user``): pyinfra connects the deploy with that data itself, and the operations (`check`, `roll`, `accept`,
`admit`) get it written as an ssh_config for OpenSSH, with pyinfra's defaults where the inventory gives none, so that
both reach a host as the same user, by the same key and port, checking its host key the same way against the same
known_hosts (known_hosts.py: ``$HOME``'s, as paramiko finds it, never the password database's home OpenSSH would
take, nor its global or second files, which pyinfra does not read), and run their commands through sudo alike. The
machines an inventory file exposes (``load``) come from the same data.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..loader import Loaded
from ..loader import load as load_inventory
from ..model import Machine, ValidCluster
from . import known_hosts as known_hosts_file

# Seconds for the TCP connection and the SSH handshake: pyinfra's own (its Config.CONNECT_TIMEOUT), which the deploy
# connects with; tests/reach holds the two equal.
CONNECT_TIMEOUT = 10
# pyinfra's default ssh_strict_host_key_checking, as its SSH connector declares it: a new host's key is learnt, a
# changed one refused.
STRICT_DEFAULT = "accept-new"
# pyinfra's ssh_strict_host_key_checking values (paramiko's) in OpenSSH's words; anything else is "yes".
_STRICT = {"off": "no", "no": "no", "false": "no", "accept-new": "accept-new", "yes": "yes", "on": "yes",
           "true": "yes", "ask": "yes"}
# pyinfra's host data that changes who runs a command; passed on as it is written in the inventory.
SUDO_KEYS = ("_sudo", "_sudo_user", "_use_sudo_login", "_sudo_password", "_preserve_sudo_env")


def uses_sudo(data: Mapping[str, Any]) -> bool:
    """The host's commands run through sudo (pyinfra's ``_sudo`` in its data)."""
    return bool(data.get("_sudo"))


def sudo_arguments(data: Mapping[str, Any]) -> dict[str, Any]:
    """The sudo settings of a host's data as pyinfra's connector arguments, for a command it does not run as an
    operation."""
    return {key: value for key in SUDO_KEYS if (value := data.get(key)) not in (None, False, "")}


@dataclass(frozen=True, slots=True)
class Reach:
    """How one host is reached: its inventory data, read."""

    name: str
    hostname: str
    user: str | None = None
    key: str | None = None
    port: int | None = None
    known_hosts: str | None = None
    strict: str = STRICT_DEFAULT     # as pyinfra takes it
    sudo: bool = False
    sudo_user: str | None = None

    @classmethod
    def of(cls, name: str, data: Mapping[str, Any], address: str | None = None) -> Reach:
        """From a host's pyinfra data; ``address``, the inventory's, where the data names no ``ssh_hostname``."""
        port = data.get("ssh_port")
        return cls(name, data.get("ssh_hostname") or address or name, data.get("ssh_user") or None,
                   data.get("ssh_key") or None, int(port) if port else None, data.get("ssh_known_hosts_file") or None,
                   str(data.get("ssh_strict_host_key_checking") or STRICT_DEFAULT), uses_sudo(data),
                   data.get("_sudo_user") or None)

    @property
    def known_hosts_path(self) -> str:
        """The known_hosts its host key is checked against and recorded in: the inventory's, ``~`` expanded from
        ``$HOME`` as pyinfra expands it, or ``$HOME/.ssh/known_hosts``."""
        return os.path.expanduser(self.known_hosts) if self.known_hosts else str(known_hosts_file.default())

    @property
    def who(self) -> str:
        """The SSH user, as a message names it."""
        return self.user or "the SSH user"

    def ssh_config(self) -> str:
        """Its ``Host`` block for OpenSSH."""
        lines = [f"Host {self.name}", f"  HostName {self.hostname}"]
        if self.user:
            lines.append(f"  User {self.user}")
        if self.port:
            lines.append(f"  Port {self.port}")
        if self.key:
            # ~ from $HOME, as pyinfra expands it (OpenSSH would take the password database's home).
            lines += [f"  IdentityFile {_quoted(os.path.expanduser(self.key))}", "  IdentitiesOnly yes"]
        if self.known_hosts:
            lines.append(f"  UserKnownHostsFile {_quoted(self.known_hosts_path)}")
        lines.append(f"  StrictHostKeyChecking {_STRICT.get(self.strict.lower(), 'yes')}")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Target:
    """A machine of the inventory, with the pyinfra host data the inventory gives it."""

    machine: Machine
    data: Mapping[str, Any]
    host: str = ""  # what pyinfra calls it, where the inventory file names it otherwise (a connector's prefix)

    @property
    def pyinfra_name(self) -> str:
        return self.host or self.machine.name

    @property
    def name(self) -> str:
        return self.machine.name

    @property
    def reach(self) -> Reach:
        return Reach.of(self.name, self.data, self.machine.address)

    @property
    def sudo(self) -> bool:
        return uses_sudo(self.data)

    @property
    def sudo_user(self) -> str | None:
        return self.data.get("_sudo_user") or None


def load(inventory: str | Path) -> tuple[ValidCluster, list[Target]]:
    """The resolved cluster and its machines, from the host groups an inventory file defines (each host once), or
    every problem of the inventory, as `clusterforge validate` reports them."""
    loaded, targets = load_with_entries(inventory)
    return loaded.valid, targets


def load_with_entries(inventory: str | Path) -> tuple[Loaded, list[Target]]:
    """``load``, with the inventory's entries as written (``Loaded.cluster``), for what compares those."""
    loaded = load_inventory(inventory)
    order = {m.name: i for i, m in enumerate(loaded.valid.machines)}
    targets = [Target(data["clusterforge_machine"], data, host) for host, data in loaded.hosts.items()]
    return loaded, sorted(targets, key=lambda t: order.get(t.name, len(order)))


def ssh_config(targets: list[Target]) -> str:
    """One ``Host`` block per machine; the user's own ~/.ssh/config still supplies what the inventory does not
    (a ProxyJump), since the first value ssh obtains wins."""
    blocks = [target.reach.ssh_config() for target in targets]
    # Never a password prompt, and a dead link is given up on instead of hanging the command. No global known_hosts:
    # pyinfra reads none.
    defaults = ["Host *", "  BatchMode yes", f"  ConnectTimeout {CONNECT_TIMEOUT}", "  ServerAliveInterval 5",
                "  ServerAliveCountMax 3", "  LogLevel ERROR", "  GlobalKnownHostsFile none"]
    user_config = Path("~/.ssh/config").expanduser()
    include = [f"Include {_quoted(str(user_config))}"] if user_config.is_file() else []
    # Where neither the inventory nor the user's config names a known_hosts: pyinfra's, $HOME's (last, so that
    # theirs comes first, as pyinfra takes it).
    known = ["Host *", f"  UserKnownHostsFile {_quoted(str(known_hosts_file.default()))}"]
    return "\n\n".join([*blocks, "\n".join(defaults), *include, "\n".join(known)]) + "\n"


def _quoted(path: str) -> str:
    """A path as ssh_config reads it: in double quotes where it has a space."""
    return f'"{path}"' if any(c.isspace() for c in path) else path
