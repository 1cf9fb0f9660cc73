"""Which host each HCA belongs to: its node description (`gpu-node-001 mlx5_0`, `gpu-node-001 HCA-1`), or a file of
port GUIDs collected on the hosts for HCAs that still carry the vendor's description; SHARP aggregation nodes apart.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ClusterforgeError
from .parse import IbNode, guid
from .rails import DEVICE, PORT_LABEL, SITE

# NVIDIA's SHARP aggregation manager shows up as an extra CA on each switch ("Mellanox Technologies Aggregation Node").
_SHARP = re.compile(r"aggregation\s+node", re.IGNORECASE)
# rdma-ndd's default "%h %d": the host, then the device; the device is optional for hosts named by hand.
_HOST_DESCRIPTION = re.compile(r"^(?P<host>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\s+(?P<hca>\S+))?$")
# Host names a machine has before it is named (the kernel's, the installers'): rdma-ndd described its HCAs before
# then, so they name no one machine (several may share the name) and are listed apart, never taken as a node.
DEFAULT_HOST_NAMES = frozenset({"(none)", "localhost", "localhost.localdomain", "ubuntu", "ubuntu-server", "debian",
                                "rocky", "almalinux", "centos", "rhel"})
# The kernel's name of an RDMA device, driver then index (`mlx5_0`): what NCCL_IB_HCA takes. A DGX's port label
# (`HCA-1`, as its cables and UFM name them) names a host's HCAs too, and keys a rail, but is no device name.
_DEVICE = re.compile(r"^[a-z][a-z0-9]*_\d+$")
_HCA_LABEL = re.compile(r"^HCA-\d+$")
_GUID = re.compile(r"^(0x)?[0-9a-fA-F]{16}$")


def is_sharp(node: IbNode) -> bool:
    return _SHARP.search(node.description) is not None


def host_in(description: str, known: Collection[str] | None = None) -> str | None:
    """The host a description names, if any. With the inventory's nodes known, a fully qualified name whose first
    label is a node is that node."""
    match = _HOST_DESCRIPTION.match(description.strip())
    if match is None or default_name(description) is not None:
        return None
    host = match["host"]
    if known is not None and host not in known and host.split(".")[0] in known:
        return host.split(".")[0]
    return host


def default_name(description: str) -> str | None:
    """The default host name a description starts with (`ubuntu mlx5_0` -> ubuntu), if it does."""
    first = description.strip().split(maxsplit=1)[:1]
    return first[0].lower() if first and first[0].lower() in DEFAULT_HOST_NAMES else None


def device_in(description: str) -> str | None:
    """The RDMA device a description names after its host (`gpu-node-001 mlx5_0` -> mlx5_0), if any."""
    match = _HOST_DESCRIPTION.match(description.strip())
    hca = match["hca"] if match is not None else None
    return hca if hca is not None and _DEVICE.match(hca) else None


def label_in(description: str, site: re.Pattern[str] | None = None) -> tuple[str, str] | None:
    """(kind, label): the port label a description names after its host, if one (`dgx-001 HCA-4` ->
    ("HCA-N", "HCA-4")); the kinds are rails.KINDS. ``site``: the inventory's ``Fabric.port_label``, for labels
    of the site's own."""
    match = _HOST_DESCRIPTION.match(description.strip())
    label = match["hca"] if match is not None else None
    if label is None:
        return None
    if _DEVICE.match(label):
        return DEVICE, label
    if _HCA_LABEL.match(label):
        return PORT_LABEL, label
    if site is not None and site.fullmatch(label):
        return SITE, label
    return None


def read_guid_file(path: str | Path) -> dict[str, str]:
    """GUID -> host from lines holding a host and a GUID in either order, e.g. what
    ``pdsh -w 'gpu-node-[001-032]' ibstat -p > guids.txt`` writes (``gpu-node-001: 0xe09d7303007a4bd8``).
    Node or port GUIDs both work; '#' starts a comment."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ClusterforgeError(f"{path}: cannot read the GUID file: {error.strerror}") from None
    hosts: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        tokens = [t.rstrip(":") for t in raw.split("#", 1)[0].split()]
        tokens = [t for t in tokens if t]
        if not tokens:
            continue
        guids = [t for t in tokens if _GUID.match(t)]
        names = [t for t in tokens if not _GUID.match(t)]
        if len(guids) != 1 or not names:
            raise ClusterforgeError(f"{path}:{number}: expected a host and one GUID (`gpu-node-001: "
                                    f"0xe09d7303007a4bd8`), found {raw.strip()!r}")
        key = guid(guids[0])
        if hosts.get(key, names[0]) != names[0]:
            raise ClusterforgeError(f"{path}:{number}: GUID 0x{key} is given to {hosts[key]} and to {names[0]}")
        hosts[key] = names[0]
    return hosts


@dataclass
class Naming:
    """Every CA of the dump in exactly one place: named (id -> host), SHARP, described by a default host name, or
    unnamed."""

    host_of: dict[str, str] = field(default_factory=dict)
    sharp: list[IbNode] = field(default_factory=list)
    defaulted: dict[str, str] = field(default_factory=dict)  # id -> the default name (`ubuntu`)
    unnamed: list[IbNode] = field(default_factory=list)
    device_of: dict[str, str] = field(default_factory=dict)  # id -> `mlx5_0`, where the description says
    label_of: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (kind, `HCA-1`), where it says
    by_guid_file: int = 0
    # The GUID file and the description disagree: the file wins (it was read on the host itself).
    conflicts: list[str] = field(default_factory=list)


def name_hcas(nodes: Mapping[str, IbNode], guids: Mapping[str, str],
              known: Collection[str] | None = None, site: re.Pattern[str] | None = None) -> Naming:
    naming = Naming()
    for node in nodes.values():
        if node.kind != "ca":
            continue
        if is_sharp(node):
            naming.sharp.append(node)
            continue
        described = host_in(node.description, known)
        listed = next((guids[g] for g in (node.guid, *sorted(node.port_guids)) if g in guids), None)
        device = device_in(node.description)
        if device is not None:
            naming.device_of[node.id] = device
        if (label := label_in(node.description, site)) is not None:
            naming.label_of[node.id] = label
        if listed is not None:
            naming.host_of[node.id] = listed
            naming.by_guid_file += 1
            if described is not None and described != listed:
                naming.conflicts.append(f"{node.id} ({node.description!r}) is {listed} in the GUID file")
        elif described is not None:
            naming.host_of[node.id] = described
        elif (default := default_name(node.description)) is not None:
            naming.defaulted[node.id] = default
        else:
            naming.unnamed.append(node)
    return naming
