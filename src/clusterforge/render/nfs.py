"""NFS: the server's exports (kernel nfsd or NFS-Ganesha) and each client mount as a systemd mount unit."""

from __future__ import annotations

from ..model import NfsMount, ValidCluster
from .text import fill, header

_UNIT_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.")


def unit_name(mount_point: str) -> str:
    """The mount unit systemd requires for a path (what ``systemd-escape --path --suffix=mount`` prints)."""
    path = mount_point.strip("/")
    if not path:
        return "-.mount"
    out = []
    for i, char in enumerate(path):
        if char == "/":
            out.append("-")
        elif char in _UNIT_SAFE and not (i == 0 and char == "."):
            out.append(char)
        else:
            out.extend(f"\\x{byte:02x}" for byte in char.encode())
    return "".join(out) + ".mount"


def exports(valid: ValidCluster) -> str:
    assert valid.nfs is not None
    lines = [f"{e.path} {e.clients}({','.join(e.options)})" for e in valid.nfs.exports]
    return fill("lines.conf.j2", header=header(valid), lines=lines)


def ganesha_conf(valid: ValidCluster) -> str:
    nfs = valid.nfs
    assert nfs is not None
    blocks = []
    for number, export in enumerate(nfs.exports, start=1):
        options = set(export.options)
        blocks.append({"id": number, "path": export.path, "clients": export.clients,
                       "access": "RO" if "ro" in options else "RW",
                       "squash": "No_Root_Squash" if "no_root_squash" in options else "Root_Squash"})
    core = [("Protocols", "3, 4"), *sorted(nfs.ganesha_core.items())]
    return fill("ganesha.conf.j2", header=header(valid), core=core, exports=blocks)


def mount_unit(valid: ValidCluster, mount: NfsMount) -> str:
    assert valid.nfs is not None
    server = valid.nfs.server.address or valid.nfs.server.name
    # _netdev is fstab's way of saying what a systemd mount unit says with its dependencies.
    return fill("nfs.mount.j2", header=header(valid), what=f"{server}:{mount.export}", where=mount.mount_point,
                options=",".join(o for o in mount.options if o != "_netdev"))
