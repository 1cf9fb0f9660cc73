"""Small inventories built in code for the tests, and a helper that returns a cluster's problems as text."""

from __future__ import annotations

from typing import Any

import pytest

from clusterforge.errors import InventoryError
from clusterforge.model import Cluster, Fabric, Gpus, Host, Leaf, Nodes, Partition, Profile, resolve
from clusterforge.versions import SlurmVersion


def gpu_profile(**overrides: Any) -> Profile:
    fields: dict[str, Any] = dict(
        sockets=2, cores_per_socket=4, threads_per_core=1, real_memory=4000,
        gpus=Gpus(type="h100", count=4, files="/dev/nvidia[0-3]", sockets={0: [0, 1], 1: [2, 3]}),
    )
    fields.update(overrides)
    return Profile("gpu", **fields)


def small_cluster(**overrides: Any) -> Cluster:
    """Four GPU nodes on one leaf, one partition: valid as it is; each test breaks one thing."""
    fields: dict[str, Any] = dict(
        slurm_version="22.05",
        controller=Host("ctl", address="10.9.0.1"),
        database=Host("ctl", address="10.9.0.1", memory=8192),
        profiles=(gpu_profile(),),
        nodes=(Nodes("gpu[01-04]", address="10.9.1.[1-4]", profile="gpu", leaf="leaf1"),),
        fabric=Fabric(leaves=(Leaf("leaf1"),)),
        partitions=(Partition("batch", profiles=("gpu",), default=True),),
    )
    fields.update(overrides)
    return Cluster("t", **fields)


def problems(cluster: Cluster, version: str | None = None) -> list[str]:
    with pytest.raises(InventoryError) as raised:
        resolve(cluster, SlurmVersion.parse(version) if version else None)
    return [str(p) for p in raised.value.problems]


def only_problem(cluster: Cluster, version: str | None = None) -> str:
    found = problems(cluster, version)
    assert len(found) == 1, found
    return found[0]
