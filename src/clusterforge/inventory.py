"""What a pyinfra inventory file calls: validate the cluster and expose its hosts as pyinfra groups.

    controller, compute, login, database, nfs = host_groups(cluster, ssh_user="root")

Each host's data carries ``clusterforge`` (the validated cluster) and, for compute hosts, ``clusterforge_node``.
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

from .errors import InventoryError
from .model import Cluster, ValidCluster
from .model.hosts import Host

PyinfraHost = tuple[str, dict[str, Any]]


class HostGroups(NamedTuple):
    controller: list[PyinfraHost]
    compute: list[PyinfraHost]
    login: list[PyinfraHost]
    database: list[PyinfraHost]
    nfs: list[PyinfraHost]


def _pyinfra_error(error: InventoryError) -> Exception:
    """Under the pyinfra CLI, an error of pyinfra's own kind is printed as one clean message, not a traceback."""
    from pyinfra.api.exceptions import PyinfraError

    class InventoryProblems(InventoryError, PyinfraError):
        pass

    return InventoryProblems(error.problems)


def _data(valid: ValidCluster, address: str | None, host_data: dict[str, Any]) -> dict[str, Any]:
    data = dict(host_data)
    if address is not None:
        data.setdefault("ssh_hostname", address)
    data["clusterforge"] = valid
    return data


def host_groups(cluster: Cluster, **host_data: Any) -> HostGroups:
    """The pyinfra groups of a valid cluster; ``host_data`` (ssh_user, ssh_key, ...) goes to every host."""
    try:
        valid = cluster.validated()
    except InventoryError as error:
        if "pyinfra_cli" in sys.modules:
            raise _pyinfra_error(error) from None
        raise

    def hosts(*entries: Host | None) -> list[PyinfraHost]:
        return [(h.name, _data(valid, h.address, host_data)) for h in entries if h is not None]

    compute = []
    for node in valid.nodes:
        data = _data(valid, node.address, host_data)
        data["clusterforge_node"] = node
        compute.append((node.name, data))
    spec = valid.spec
    return HostGroups(
        controller=hosts(spec.controller, spec.backup_controller),
        compute=compute,
        login=hosts(*spec.login),
        database=hosts(spec.database),
        nfs=hosts(spec.nfs.server if spec.nfs else None),
    )
