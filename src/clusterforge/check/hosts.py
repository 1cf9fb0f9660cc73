"""The machines to check and how to reach them: the inventory file's pyinfra host data (ssh_hostname, ssh_user,
ssh_key, ssh_port, ssh_known_hosts_file, ssh_strict_host_key_checking), written as an ssh_config for testinfra's
ssh backend, and its sudo (pyinfra's _sudo, _sudo_user), so `clusterforge check` connects and runs its commands
exactly as the deploy does."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ClusterforgeError
from ..loader import cluster_of, run_inventory
from ..model import Machine, ValidCluster

CONNECT_TIMEOUT = 10  # seconds for the TCP connection and the SSH handshake

# pyinfra's ssh_strict_host_key_checking values (paramiko's) in OpenSSH's words.
_STRICT = {"off": "no", "no": "no", "false": "no", "accept-new": "accept-new", "yes": "yes", "on": "yes",
           "true": "yes", "ask": "yes"}


@dataclass(frozen=True, slots=True)
class Target:
    machine: Machine
    data: Mapping[str, Any]  # the pyinfra host data the inventory gives it

    @property
    def name(self) -> str:
        return self.machine.name

    @property
    def sudo(self) -> bool:
        """Its commands run through sudo (pyinfra's ``_sudo`` in the host data)."""
        return bool(self.data.get("_sudo"))

    @property
    def sudo_user(self) -> str | None:
        return self.data.get("_sudo_user") or None


def load(inventory: str | Path) -> tuple[ValidCluster, list[Target]]:
    """The resolved cluster and its machines, from the host groups an inventory file defines (each host once)."""
    namespace = run_inventory(inventory)
    cluster_of(inventory, namespace)  # the same "no Cluster" / "several clusters" errors as every command
    found: dict[str, Target] = {}
    for value in namespace.values():
        if not isinstance(value, (list, tuple)):
            continue
        for item in value:
            if (isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], dict)
                    and isinstance(item[1].get("clusterforge_machine"), Machine)):
                found.setdefault(item[0], Target(item[1]["clusterforge_machine"], item[1]))
    if not found:
        raise ClusterforgeError(f"{inventory}: defines no host groups: add "
                                "`controller, compute, login, database, nfs = host_groups(cluster, ssh_user=...)`")
    valid = next(iter(found.values())).data["clusterforge"]
    order = {m.name: i for i, m in enumerate(valid.machines)}
    return valid, sorted(found.values(), key=lambda t: order.get(t.name, len(order)))


def ssh_config(targets: list[Target]) -> str:
    """One ``Host`` block per machine; the user's own ~/.ssh/config still supplies what the inventory does not
    (a ProxyJump), since the first value ssh obtains wins."""
    blocks = []
    for target in targets:
        data = target.data
        address = data.get("ssh_hostname") or target.machine.address or target.name
        lines = [f"Host {target.name}", f"  HostName {address}"]
        if data.get("ssh_user"):
            lines.append(f"  User {data['ssh_user']}")
        if data.get("ssh_port"):
            lines.append(f"  Port {int(data['ssh_port'])}")
        if data.get("ssh_key"):
            lines += [f"  IdentityFile {data['ssh_key']}", "  IdentitiesOnly yes"]
        if data.get("ssh_known_hosts_file"):
            lines.append(f"  UserKnownHostsFile {data['ssh_known_hosts_file']}")
        strict = str(data.get("ssh_strict_host_key_checking", "accept-new")).lower()
        lines.append(f"  StrictHostKeyChecking {_STRICT.get(strict, 'yes')}")
        blocks.append("\n".join(lines))
    # Never a password prompt, and a dead link is given up on instead of hanging the check.
    defaults = ["Host *", "  BatchMode yes", f"  ConnectTimeout {CONNECT_TIMEOUT}", "  ServerAliveInterval 5",
                "  ServerAliveCountMax 3", "  LogLevel ERROR"]
    user_config = Path("~/.ssh/config").expanduser()
    include = [f"Include {user_config}"] if user_config.is_file() else []
    return "\n\n".join([*blocks, "\n".join(defaults), *include]) + "\n"
