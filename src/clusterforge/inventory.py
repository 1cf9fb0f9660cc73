"""What a pyinfra inventory file calls: validate the cluster and expose its hosts as pyinfra groups.

    controller, compute, login, database, nfs = host_groups(cluster, ssh_user="root")
    monitoring = host_group(cluster, "monitoring", ssh_user="root")   # where the inventory has Monitoring(...)

Where root may not log in over SSH, a user with sudo: ``host_groups(cluster, ssh_user="admin", sudo=True)``, which is
pyinfra's own ``_sudo`` host data (``_sudo_user`` and the others may be given as pyinfra names them; not
``_sudo_password``, which pyinfra puts on every remote command line: the deploy refuses it). The deploy, `plan`,
`check` and `roll` then run every command through sudo.

pyinfra knows a host only through the groups the inventory file binds, so every group with a host of its own must
be bound (the deploy names one that is not). Each host's data carries ``clusterforge`` (the validated cluster),
``clusterforge_machine`` (its name, address, groups and GPU device files) and, for compute hosts,
``clusterforge_node``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .errors import ClusterforgeError, InventoryError, for_pyinfra
from .model import Cluster, HostGroup, resolve
from .model.placeholders import outside_loader

PyinfraHost = tuple[str, dict[str, Any]]


class HostGroups(NamedTuple):
    controller: list[PyinfraHost]
    compute: list[PyinfraHost]
    login: list[PyinfraHost]
    database: list[PyinfraHost]
    nfs: list[PyinfraHost]


def _groups(cluster: Cluster, host_data: dict[str, Any], sudo: bool) -> dict[str, list[PyinfraHost]]:
    if not isinstance(sudo, bool):
        raise ClusterforgeError(f"host_groups(..., sudo={sudo!r}): give True (every command through sudo) or False")
    if sudo:
        host_data = {**host_data, "_sudo": True}
    valid = resolve(cluster)  # its problems, printed by pyinfra as one message, stop the run before any connection
    if left := outside_loader(cluster):
        raise for_pyinfra(InventoryError(left))
    groups: dict[str, list[PyinfraHost]] = {}
    for machine in valid.machines:
        data = dict(host_data)
        if machine.address is not None:
            data.setdefault("ssh_hostname", machine.address)
        data["clusterforge"] = valid
        data["clusterforge_machine"] = machine
        if machine.node is not None:
            data["clusterforge_node"] = machine.node
        for group in machine.groups:
            groups.setdefault(group, []).append((machine.name, data))
    return groups


def host_groups(cluster: Cluster, *, sudo: bool = False, **host_data: Any) -> HostGroups:
    """The pyinfra groups of a valid cluster; ``host_data`` (ssh_user, ssh_key, ...) goes to every host, and
    ``sudo`` is pyinfra's ``_sudo``: the SSH user runs every command through sudo."""
    groups = _groups(cluster, host_data, sudo)
    return HostGroups(**{name: groups.get(name, []) for name in HostGroups._fields})


def host_group(cluster: Cluster, group: HostGroup, *, sudo: bool = False, **host_data: Any) -> list[PyinfraHost]:
    """One pyinfra group of a valid cluster (``monitoring``: the host of ``Monitoring``), with ``host_data`` and
    ``sudo`` as ``host_groups`` takes them."""
    return _groups(cluster, host_data, sudo).get(group, [])
