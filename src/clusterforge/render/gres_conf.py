"""gres.conf: each GPU profile's device files, grouped by the CPU socket they sit on."""

from __future__ import annotations

from .. import hostlists
from ..model import Profile, ValidCluster
from .text import fill, header, pairs


def socket_cores(profile: Profile, socket: int) -> str:
    """Slurm's logical core indices of one socket: all its cores, never hyperthread ids."""
    first = socket * profile.cores_per_socket
    return f"{first}-{first + profile.cores_per_socket - 1}"


def profile_lines(profile: Profile, nodes: str, valid: ValidCluster) -> list[str]:
    gpus = profile.gpus
    assert gpus is not None
    lines = []
    if gpus.autodetect != "off":
        lines.append(pairs([("NodeName", nodes), ("AutoDetect", gpus.autodetect)]))
    if gpus.files is None:
        return lines
    files = hostlists.expand(gpus.files)
    socket_of = {gpu: socket for socket, indices in gpus.sockets.items() for gpu in indices}
    groups: dict[int | None, list[str]] = {}
    for index, file in enumerate(files):
        groups.setdefault(socket_of.get(index), []).append(file)
    for socket in sorted(groups, key=lambda s: (s is None, s)):
        lines.append(pairs([
            ("NodeName", nodes),
            ("Name", "gpu"),
            ("Type", gpus.type),
            ("File", hostlists.compress(groups[socket], valid.version)),
            ("Cores", socket_cores(profile, socket) if socket is not None else None),
        ]))
    return lines


def render(valid: ValidCluster) -> str:
    lines: list[str] = []
    for profile in valid.gpu_profiles:
        names = [n.name for n in valid.nodes_of(profile.name)]
        if names:
            lines.extend(profile_lines(profile, hostlists.compress(names, valid.version), valid))
    return fill("lines.conf.j2", header=header(valid), lines=lines)
