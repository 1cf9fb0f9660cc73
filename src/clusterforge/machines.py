"""Every host of a cluster once, with the groups it belongs to: what a deploy targets and a Vagrantfile creates."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import hostlists
from .model import Node, ValidCluster
from .model.hosts import HostGroup

@dataclass(frozen=True)
class Machine:
    name: str
    address: str | None
    groups: tuple[HostGroup, ...]
    node: Node | None = None
    device_files: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "address": self.address, "groups": list(self.groups),
                "device_files": list(self.device_files)}


def machines(valid: ValidCluster) -> list[Machine]:
    """Service hosts first (controller, backup, database, login, NFS server), then compute nodes in name order; a host
    that serves several purposes appears once, with all its groups."""
    spec = valid.spec
    order: dict[str, tuple[str | None, list[HostGroup]]] = {}

    def add(name: str, address: str | None, group: HostGroup) -> None:
        known = order.setdefault(name, (address, []))
        if group not in known[1]:
            known[1].append(group)

    for host in (spec.controller, spec.backup_controller):
        if host is not None:
            add(host.name, host.address, "controller")
    if spec.database is not None:
        add(spec.database.name, spec.database.address, "database")
    for host in spec.login:
        add(host.name, host.address, "login")
    if spec.nfs is not None:
        add(spec.nfs.server.name, spec.nfs.server.address, "nfs")
    out = [Machine(name, address, tuple(groups)) for name, (address, groups) in order.items()]
    for node in valid.nodes:
        gpus = node.profile.gpus
        files = tuple(hostlists.expand(gpus.files)) if gpus and gpus.files else ()
        out.append(Machine(node.name, node.address, ("compute",), node, files))
    return out
