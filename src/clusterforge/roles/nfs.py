"""nfs: the server's exports from the inventory, and the clients' mounts as systemd mount units."""

from __future__ import annotations

from pyinfra import host

from ..model import NfsMount, ValidCluster
from ..render import nfs as render_nfs
from . import ops
from .managed import EXPORTS, EXPORTS_DIR, GANESHA_CONF, SYSTEMD_DIR
from .rehearsal import step
from .waits import until


@step("nfs server")
def nfs_server() -> None:
    valid: ValidCluster = host.data.clusterforge
    nfs = valid.nfs
    assert nfs is not None
    for export in nfs.exports:
        ops.directory(name=f"exported {export.path}", path=export.path)
    if nfs.software == "ganesha":
        conf = render_nfs.ganesha_conf(valid)
        ops.file(name=GANESHA_CONF, path=GANESHA_CONF, content=conf)
        inputs = ops.digest(conf)
        # systemd reports the start before Ganesha has read its config; a bad export only shows when it exits.
        ops.daemon(name="nfs-ganesha serves the exports", unit="nfs-ganesha", inputs=inputs,
                   restart=ops.owed("nfs-ganesha", inputs, ops.will_change(GANESHA_CONF, conf)),
                   ready=until("systemctl is-active --quiet nfs-ganesha && bash -c 'exec 3<>/dev/tcp/127.0.0.1/2049'",
                               "NFS-Ganesha listens on port 2049", timeout_s=30))
        return
    exports = render_nfs.exports(valid)
    ops.directory(name=EXPORTS_DIR, path=EXPORTS_DIR)
    ops.file(name=EXPORTS, path=EXPORTS, content=exports)
    inputs = ops.digest(exports)
    ops.daemon(name="nfs-server runs", unit="nfs-server", inputs="", restart=False)
    # exportfs -ra publishes the exports; it is owed until it has run with these.
    ops.commands(name="exportfs -ra: publish the new exports", otherwise="the exports are published",
                 commands=["exportfs -ra", ops.record_command("exportfs", inputs)]
                 if ops.owed("exportfs", inputs, ops.will_change(EXPORTS, exports)) else [])


def mounts_here(valid: ValidCluster) -> list[NfsMount]:
    if valid.nfs is None:
        return []
    groups = set(host.data.clusterforge_machine.groups)
    return [m for m in valid.nfs.mounts if set(m.on) & groups]


@step("nfs client")
def nfs_client() -> None:
    valid: ValidCluster = host.data.clusterforge
    nfs = valid.nfs
    for mount in mounts_here(valid):
        unit = render_nfs.unit_name(mount.mount_point)
        text = render_nfs.mount_unit(valid, mount)
        path = f"{SYSTEMD_DIR}/{unit}"
        ops.directory(name=f"mount point {mount.mount_point}", path=mount.mount_point)
        ops.file(name=f"mount unit {unit}", path=path, content=text)
        inputs = ops.digest(text)
        changing = ops.will_change(path, text)
        reload = ops.owed(f"{unit}.unit", inputs, changing)
        ops.commands(name=f"systemd reads {unit}", otherwise=f"systemd has read {unit}",
                     commands=["systemctl daemon-reload", ops.record_command(f"{unit}.unit", inputs)] if reload
                     else [])
        if nfs is not None and nfs.mount_now:
            ops.daemon(name=f"{unit} is enabled and mounted", unit=unit, inputs=inputs,
                       restart=ops.owed(unit, inputs, changing))
        else:
            have = ops.host_state().unit(unit)
            ops.commands(name=f"{unit} is enabled", otherwise=f"{unit} is enabled",
                         commands=[] if have.enabled else [f"systemctl enable {unit}"])
