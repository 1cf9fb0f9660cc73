"""nfs: the server's exports from the inventory, and the clients' mounts as systemd mount units."""

from __future__ import annotations

from io import StringIO

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.operations import files, server, systemd
from pyinfra.operations.util import any_changed

from ..model import NfsMount, ValidCluster
from ..render import nfs as render_nfs
from .packages import install
from .waits import until

EXPORTS = "/etc/exports.d/clusterforge.exports"
GANESHA_CONF = "/etc/ganesha/ganesha.conf"


@deploy("nfs server")
def nfs_server() -> None:
    valid: ValidCluster = host.data.clusterforge
    nfs = valid.nfs
    assert nfs is not None
    for export in nfs.exports:
        files.directory(name=f"exported {export.path}", path=export.path, mode="0755")
    if nfs.software == "ganesha":
        install("nfs server", ["nfs-ganesha", "nfs-ganesha-vfs"])
        conf = files.put(name=GANESHA_CONF, src=StringIO(render_nfs.ganesha_conf(valid)), dest=GANESHA_CONF,
                         mode="0644")
        started = systemd.service(name="nfs-ganesha is running and enabled", service="nfs-ganesha", running=True,
                                  enabled=True)
        restarted = systemd.service(name="restart nfs-ganesha for its new exports", service="nfs-ganesha",
                                    restarted=True, _if=conf.did_change)
        # systemd reports the start before Ganesha has read its config; a bad export only shows when it exits.
        server.shell(name="wait until NFS-Ganesha serves",
                     commands=[until("systemctl is-active --quiet nfs-ganesha && "
                                     "bash -c 'exec 3<>/dev/tcp/127.0.0.1/2049'", "NFS-Ganesha listens on port 2049",
                                     timeout_s=30)],
                     _if=any_changed(started, restarted))
        return
    install("nfs server", ["nfs-kernel-server"])
    files.directory(name="/etc/exports.d", path="/etc/exports.d", mode="0755")
    exports = files.put(name=EXPORTS, src=StringIO(render_nfs.exports(valid)), dest=EXPORTS, mode="0644")
    systemd.service(name="nfs-server is running and enabled", service="nfs-server", running=True, enabled=True)
    server.shell(name="exportfs -ra: publish the new exports", commands=["exportfs -ra"], _if=exports.did_change)


def mounts_here(valid: ValidCluster) -> list[NfsMount]:
    nfs = valid.nfs
    if nfs is None:
        return []
    groups = set(host.data.clusterforge_machine.groups)
    return [m for m in nfs.mounts if set(m.on) & groups]


@deploy("nfs client")
def nfs_client() -> None:
    valid: ValidCluster = host.data.clusterforge
    nfs = valid.nfs
    wanted = mounts_here(valid)
    if nfs is None or not wanted:
        return
    install("nfs client", ["nfs-common"])
    for mount in wanted:
        unit = render_nfs.unit_name(mount.mount_point)
        files.directory(name=f"mount point {mount.mount_point}", path=mount.mount_point, mode="0755")
        put = files.put(name=f"mount unit {unit}", src=StringIO(render_nfs.mount_unit(valid, mount)),
                        dest=f"/etc/systemd/system/{unit}", mode="0644")
        systemd.daemon_reload(name=f"systemd reads {unit}", _if=put.did_change)
        systemd.service(name=f"{unit} is enabled" + (" and mounted" if nfs.mount_now else ""), service=unit,
                        enabled=True, running=True if nfs.mount_now else None)
        if nfs.mount_now:
            systemd.service(name=f"remount {mount.mount_point}", service=unit, restarted=True, _if=put.did_change)
