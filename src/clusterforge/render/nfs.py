"""NFS: the server's exports (kernel nfsd or NFS-Ganesha) and each client mount as a systemd mount unit."""

from __future__ import annotations

from ..model import ValidCluster
from ..model.hosts import NfsMount
from .text import header

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
    nfs = valid.spec.nfs
    assert nfs is not None
    lines = [f"{e.path} {e.clients}({','.join(e.options)})" for e in nfs.exports]
    return header(valid) + "\n" + "".join(f"{line}\n" for line in lines)


def ganesha_conf(valid: ValidCluster) -> str:
    nfs = valid.spec.nfs
    assert nfs is not None
    core = [("Protocols", "3, 4"), *sorted(nfs.ganesha_core.items())]
    blocks = ["NFS_CORE_PARAM {\n" + "".join(f"    {key} = {value};\n" for key, value in core) + "}\n"]
    for number, export in enumerate(nfs.exports, start=1):
        options = set(export.options)
        access = "RO" if "ro" in options else "RW"
        squash = "No_Root_Squash" if "no_root_squash" in options else "Root_Squash"
        blocks.append(
            "EXPORT {\n"
            f"    Export_Id = {number};\n    Path = {export.path};\n    Pseudo = {export.path};\n"
            f"    Protocols = 3, 4;\n    Transports = TCP;\n    SecType = sys;\n    Squash = {squash};\n"
            "    Access_Type = None;\n"
            f"    CLIENT {{\n        Clients = {export.clients};\n        Access_Type = {access};\n    }}\n"
            "    FSAL {\n        Name = VFS;\n    }\n}\n")
    return header(valid) + "\n\n" + "\n".join(blocks)


def mount_unit(valid: ValidCluster, mount: NfsMount) -> str:
    nfs = valid.spec.nfs
    assert nfs is not None
    server = nfs.server.address or nfs.server.name
    return (header(valid) + "\n"
            + "[Unit]\nDescription=NFS " + f"{server}:{mount.export}\n"
            + "Wants=network-online.target\nAfter=network-online.target\n\n"
            + f"[Mount]\nWhat={server}:{mount.export}\nWhere={mount.mount_point}\nType=nfs\n"
            + f"Options={','.join(o for o in mount.options if o != '_netdev')}\n\n"
            + "[Install]\nWantedBy=remote-fs.target\n")
