"""Read the default text format of `ibnetdiscover` (infiniband-diags, "TOPOLOGY FILE FORMAT") into nodes and links.

Every line is understood or the dump is refused with its line: a topology built from half a dump would be a partial
topology.conf, which is worse than none. A dump cut at a line boundary is caught by its links: ibnetdiscover prints
every node it found and every link from both ends, so a link to a node without a record, or one the other end does
not list, means the text stops early (or mixes two discoveries).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from ..errors import ClusterforgeError

Kind = Literal["switch", "ca", "router"]
_KINDS: dict[str, Kind] = {"Switch": "switch", "Ca": "ca", "Rt": "router"}

# `Switch	36 "S-0000000000200000"		# "leaf01" base port 0 lid 0 lmc 0` / `Ca	1 "H-..."		# "node01 mlx5_0"`.
# The description runs to the last quote: node descriptions may themselves hold quotes.
_HEADER = re.compile(r'^(?P<kind>Switch|Ca|Rt)\s+(?P<ports>\d+)\s+"(?P<id>[SHR]-(?P<guid>[0-9a-fA-F]{1,16}))"'
                     r'\s*(?:#\s*"(?P<desc>.*)"(?P<rest>[^"]*))?$')
# A switch's port: `[1]	"H-0000000000100000"[1](100001) 		# "node01" lid 0 4xSDR`;
# a CA's port:     `[1](100001) 	"S-0000000000200000"[1]		# lid 0 lmc 0 "leaf01" lid 0 4xSDR`.
# Split (NDR 2x200G) ports carry an extra `[ext N]`, kept out of the way.
_PORT = re.compile(r'^\[(?P<port>\d+)\](?:\[ext \d+\])?(?:\((?P<own>[0-9a-fA-F]+)\))?\s*'
                   r'"(?P<peer>[SHR]-(?P<peer_guid>[0-9a-fA-F]{1,16}))"\[(?P<peer_port>\d+)\](?:\[ext \d+\])?'
                   r'(?:\((?P<peer_port_guid>[0-9a-fA-F]+)\))?\s*(?:#(?P<comment>.*))?$')
_KEY = re.compile(r"^(vendid|devid|sysimgguid|switchguid|caguid|rtguid)=\S+$")
# `ibnetdiscover -p` prints one port per line; say so instead of "cannot read line 1".
_PORTS_REPORT = re.compile(r"^(SW|CA|RT)\s+\d+\s+\d+\s+0x[0-9a-fA-F]+\s")


class DumpError(ClusterforgeError):
    """The dump cannot be read, or is incomplete; the message says where."""


@dataclass(frozen=True, slots=True)
class Link:
    port: int
    peer: str  # the other end's node id as printed, "S-..." or "H-..."
    peer_port: int
    line: int


@dataclass(slots=True)
class IbNode:
    id: str
    kind: Kind
    guid: str  # 16 lowercase hex digits, as `ibstat` prints it after 0x
    description: str
    line: int
    links: dict[int, Link] = field(default_factory=dict)
    port_guids: set[str] = field(default_factory=set)


def guid(text: str) -> str:
    """A GUID in one spelling: 16 lowercase hex digits, no 0x (`ibstat` writes 0xe09d..., ibnetdiscover e09d...)."""
    text = text.strip().lower()
    text = text.removeprefix("0x")
    return text.rjust(16, "0")


def parse_dump(text: str, source: str = "the dump") -> dict[str, IbNode]:
    """Every node of the dump by its id. Several dumps one after another (one per fabric) are read as one."""
    nodes: dict[str, IbNode] = {}
    current: IbNode | None = None
    lines = text.splitlines()
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if _KEY.match(line):
            current = None  # the key=value lines open the next record
            continue
        header = _HEADER.match(line)
        if header:
            current = _record(nodes, header, number, source)
            continue
        port = _PORT.match(line)
        if port and current is not None:
            _link(current, port, number, source)
            continue
        raise DumpError(_unreadable(source, number, raw, len(lines), port is not None))
    if not nodes:
        raise DumpError(f"{source}: holds no switch or CA record; give the text `ibnetdiscover` prints by default "
                        "(not -p, -l or a cache file)")
    _check_links(nodes, source, len(lines))
    return nodes


def _record(nodes: dict[str, IbNode], header: re.Match[str], number: int, source: str) -> IbNode:
    node_id = header["id"]
    kind = _KINDS[header["kind"]]
    seen = nodes.get(node_id)
    if seen is not None:
        # The same node in a second dump of the same fabric (discovered from another port): one node.
        if seen.kind != kind:
            raise DumpError(f"{source}:{number}: {node_id} is a {kind} here but a {seen.kind} at line {seen.line}")
        return seen
    node = IbNode(node_id, kind, guid(header["guid"]), header["desc"] or "", number)
    nodes[node_id] = node
    return node


def _link(node: IbNode, port: re.Match[str], number: int, source: str) -> None:
    link = Link(int(port["port"]), port["peer"], int(port["peer_port"]), number)
    known = node.links.get(link.port)
    if known is not None and (known.peer, known.peer_port) != (link.peer, link.peer_port):
        raise DumpError(f"{source}:{number}: port {link.port} of {node.id} links to {link.peer}[{link.peer_port}] "
                        f"but line {known.line} says {known.peer}[{known.peer_port}]")
    node.links.setdefault(link.port, link)
    if port["own"]:
        node.port_guids.add(guid(port["own"]))


def _unreadable(source: str, number: int, raw: str, total: int, is_port: bool) -> str:
    where = f"{source}:{number}"
    if _PORTS_REPORT.match(raw.strip()):
        return (f"{where}: this is `ibnetdiscover -p` (ports report) output; give the text `ibnetdiscover` prints "
                "by default")
    if is_port:
        return f"{where}: a port line outside any Switch or Ca record: {raw.strip()!r}"
    cut = " (the last line: the dump looks cut short)" if number == total else ""
    return f"{where}: not a line of ibnetdiscover output{cut}: {raw.strip()[:120]!r}"


def _check_links(nodes: dict[str, IbNode], source: str, total: int) -> None:
    """Both ends of every link are listed, the same way: otherwise the dump stops early."""
    for node in nodes.values():
        for link in node.links.values():
            peer = nodes.get(link.peer)
            if peer is None:
                raise DumpError(f"{source}:{link.line}: port {link.port} of {node.id} ({node.description!r}) links "
                                f"to {link.peer}, which has no record of its own: the dump is truncated (it ends at "
                                f"line {total}) or is not all of one discovery")
            back = peer.links.get(link.peer_port)
            if back is None or (back.peer, back.peer_port) != (node.id, link.port):
                said = f"lists {back.peer}[{back.peer_port}] there" if back else "lists no such port"
                raise DumpError(f"{source}:{link.line}: port {link.port} of {node.id} ({node.description!r}) links "
                                f"to port {link.peer_port} of {peer.id} ({peer.description!r}, line {peer.line}), "
                                f"which {said}: the dump is truncated (it ends at line {total}) or mixes "
                                "discoveries")
