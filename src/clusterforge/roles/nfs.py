"""nfs: the server's exports from the inventory, and the clients' mounts as systemd mount units."""

from __future__ import annotations

from ..model import NfsMount
from ..render import nfs as render_nfs
from ..engine import ops
from .managed import EXPORTS, EXPORTS_DIR, GANESHA_CONF, SYSTEMD_DIR
from ..engine.run import Here, step
from ..engine.waits import until


@step("nfs server")
def nfs_server(here: Here) -> None:
    valid = here.valid
    nfs = valid.nfs
    assert nfs is not None
    for export in nfs.exports:
        ops.directory(here, name=f"exported {export.path}", path=export.path)
    if nfs.software == "ganesha":
        conf = render_nfs.ganesha_conf(valid)
        ops.file(here, name=GANESHA_CONF, path=GANESHA_CONF, content=conf)
        inputs = ops.digest(conf)
        # systemd reports the start before Ganesha has read its config; a bad export only shows when it exits.
        ops.daemon(here, name="nfs-ganesha serves the exports", unit="nfs-ganesha", inputs=inputs,
                   restart=ops.owed(here.state, "nfs-ganesha", inputs, ops.will_change(here.state, GANESHA_CONF, conf)),
                   ready=until("systemctl is-active --quiet nfs-ganesha && bash -c 'exec 3<>/dev/tcp/127.0.0.1/2049'",
                               "NFS-Ganesha listens on port 2049", timeout_s=30))
        return
    exports = render_nfs.exports(valid)
    ops.directory(here, name=EXPORTS_DIR, path=EXPORTS_DIR)
    ops.file(here, name=EXPORTS, path=EXPORTS, content=exports)
    inputs = ops.digest(exports)
    ops.daemon(here, name="nfs-server runs", unit="nfs-server", inputs="", restart=False)
    # exportfs -ra publishes the exports; it is owed until it has run with these.
    ops.commands(here, name="exportfs -ra: publish the new exports", otherwise="the exports are published",
                 commands=["exportfs -ra", ops.record_command("exportfs", inputs)]
                 if ops.owed(here.state, "exportfs", inputs, ops.will_change(here.state, EXPORTS, exports)) else [])


def mounts_here(here: Here) -> list[NfsMount]:
    nfs = here.valid.nfs
    return [m for m in nfs.mounts if set(m.on) & here.groups] if nfs is not None else []


@step("nfs client")
def nfs_client(here: Here) -> None:
    valid = here.valid
    nfs = valid.nfs
    for mount in mounts_here(here):
        unit = render_nfs.unit_name(mount.mount_point)
        text = render_nfs.mount_unit(valid, mount)
        path = f"{SYSTEMD_DIR}/{unit}"
        ops.directory(here, name=f"mount point {mount.mount_point}", path=mount.mount_point)
        ops.file(here, name=f"mount unit {unit}", path=path, content=text)
        inputs = ops.digest(text)
        changing = ops.will_change(here.state, path, text)
        reload = ops.owed(here.state, f"{unit}.unit", inputs, changing)
        ops.commands(here, name=f"systemd reads {unit}", otherwise=f"systemd has read {unit}",
                     commands=["systemctl daemon-reload", ops.record_command(f"{unit}.unit", inputs)] if reload
                     else [])
        if nfs is not None and nfs.mount_now:
            ops.daemon(here, name=f"{unit} is enabled and mounted", unit=unit, inputs=inputs,
                       restart=ops.owed(here.state, unit, inputs, changing))
        else:
            ops.commands(here, name=f"{unit} is enabled", otherwise=f"{unit} is enabled",
                         commands=[] if here.state.unit(unit).enabled else [f"systemctl enable {unit}"])
