"""gres.conf: each GPU profile's device files, grouped by the CPU socket they sit on."""

from __future__ import annotations

from .. import hostlists
from ..model import Hardware, ValidCluster
from .text import fill, header, pairs


def hardware_lines(hardware: Hardware, nodes: str, valid: ValidCluster) -> list[str]:
    gpus = hardware.profile.gpus
    assert gpus is not None
    lines = []
    if gpus.autodetect != "off":
        lines.append(pairs([("NodeName", nodes), ("AutoDetect", gpus.autodetect)]))
    for group in hardware.gpu_groups:
        lines.append(pairs([
            ("NodeName", nodes),
            ("Name", "gpu"),
            ("Type", gpus.type),
            ("File", hostlists.compress(group.files, valid.version)),
            ("Cores", group.cores),
        ]))
    return lines


def render(valid: ValidCluster) -> str:
    lines: list[str] = []
    for hardware in valid.gpu_hardware:
        if hardware.nodes:
            lines.extend(hardware_lines(hardware, hostlists.compress(hardware.nodes, valid.version), valid))
    return fill("lines.conf.j2", header=header(valid), lines=lines)
