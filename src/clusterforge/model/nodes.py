"""Compute nodes, written one by one or as hostlist ranges."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .base import Entry, slurm_key
from .repair import Bmc


class Nodes(Entry):
    """One compute node or a range of them: ``Nodes("gpu-node-[001-032]", address="10.1.0.[1-32]", ...)``."""

    names: str = Field(description="a node name or a Slurm hostlist",
                       json_schema_extra=slurm_key("slurm.conf", "NodeName"))
    profile: str = Field(description="the name of the nodes' hardware profile, one of the cluster's profiles")
    address: str | None = Field(default=None, description="an address or a hostlist of as many addresses as names",
                                json_schema_extra=slurm_key("slurm.conf", "NodeAddr", line="NodeName"))
    leaf: str | None = Field(default=None, description="the IB leaf switch the nodes hang off")
    features: tuple[str, ...] = Field(default=(), description="node features of these nodes, in Features= of "
                                                              "slurm.conf after the profile's name and features",
                                      json_schema_extra=slurm_key("slurm.conf", "Features", line="NodeName"))
    bmc: Bmc | None = Field(default=None, description="the nodes' BMCs, through which automatic repair power "
                                                     "cycles a node; None: no BMC")

    def __init__(self, names: str | None = None, /, **data: Any) -> None:
        if names is not None:
            data["names"] = names
        super().__init__(**data)
