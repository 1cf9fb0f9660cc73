"""nfs: the server's exports from the inventory, and the clients' mounts as systemd mount units."""

from __future__ import annotations

from ..model import NfsMount, ValidCluster
from ..render import nfs as render_nfs
from ..engine import ops
from ..engine.footprint import Footprint
from ..engine.ops import SYSTEMD_DIR
from ..engine.run import Here, step
from ..engine.waits import until

EXPORTS_DIR = "/etc/exports.d"
EXPORTS = f"{EXPORTS_DIR}/clusterforge.exports"
GANESHA_CONF = "/etc/ganesha/ganesha.conf"
KNOWN = ("nfs-kernel-server", "nfs-ganesha", "nfs-ganesha-vfs", "nfs-common")
FORMER_RECORD = "exportfs"  # the name of the exports' record (ops.reload) before it was named from the unit


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """The exports (both servers' files: the inventory may have switched), the exported directories, the mount
    points and their units; the server's packages and unit on the NFS host, the client's and the mounts on the hosts
    that mount."""
    nfs = valid.nfs
    if nfs is None:
        return Footprint(paths=(EXPORTS_DIR, EXPORTS, GANESHA_CONF), shown=(EXPORTS, GANESHA_CONF), known=KNOWN)
    mounts = nfs.mounts
    units = [f"{SYSTEMD_DIR}/{render_nfs.unit_name(m.mount_point)}" for m in mounts]
    packages, running = [], []
    if "nfs" in groups:
        ganesha = nfs.software == "ganesha"
        packages += ["nfs-ganesha", "nfs-ganesha-vfs"] if ganesha else ["nfs-kernel-server"]
        running.append("nfs-ganesha.service" if ganesha else "nfs-server.service")
    here = [m for m in mounts if set(m.on) & set(groups)]
    if here:
        packages.append("nfs-common")
    return Footprint(paths=(EXPORTS_DIR, EXPORTS, GANESHA_CONF, *(e.path for e in nfs.exports),
                            *(m.mount_point for m in mounts), *units),
                     shown=(EXPORTS, GANESHA_CONF, *units),
                     units=(*running, *(render_nfs.unit_name(m.mount_point) for m in here)),
                     packages=tuple(packages), known=KNOWN)


@step("nfs server", footprint=footprint, on=("nfs",))
def nfs_server(here: Here) -> None:
    valid = here.valid
    nfs = valid.nfs
    assert nfs is not None
    for export in nfs.exports:
        ops.directory(here, name=f"exported {export.path}", path=export.path)
    if nfs.software == "ganesha":
        conf = render_nfs.ganesha_conf(valid)
        written = ops.file(here, name=GANESHA_CONF, path=GANESHA_CONF, content=conf)
        # systemd reports the start before Ganesha has read its config; a bad export only shows when it exits.
        ops.service(here, name="nfs-ganesha serves the exports", unit="nfs-ganesha", inputs=(written,),
                    ready=until("systemctl is-active --quiet nfs-ganesha && bash -c 'exec 3<>/dev/tcp/127.0.0.1/2049'",
                               "NFS-Ganesha listens on port 2049", timeout_s=30))
        return
    exports = render_nfs.exports(valid)
    ops.directory(here, name=EXPORTS_DIR, path=EXPORTS_DIR)
    written = ops.file(here, name=EXPORTS, path=EXPORTS, content=exports)
    ops.daemon(here, name="nfs-server runs", unit="nfs-server", inputs="", restart=False)
    # exportfs -ra publishes the exports; it is owed until it has run with these.
    ops.reload(here, name="exportfs -ra: publish the new exports", unit="nfs-server", reads="exports",
               files=[written], command="exportfs -ra", formerly=FORMER_RECORD)


def mounts_here(here: Here) -> list[NfsMount]:
    nfs = here.valid.nfs
    return [m for m in nfs.mounts if set(m.on) & here.groups] if nfs is not None else []


@step("nfs client", footprint=footprint)
def nfs_client(here: Here) -> None:
    valid = here.valid
    nfs = valid.nfs
    for mount in mounts_here(here):
        unit = render_nfs.unit_name(mount.mount_point)
        text = render_nfs.mount_unit(valid, mount)
        path = f"{SYSTEMD_DIR}/{unit}"
        ops.directory(here, name=f"mount point {mount.mount_point}", path=mount.mount_point)
        written = ops.file(here, name=f"mount unit {unit}", path=path, content=text)
        ops.systemd_reads(here, unit, f"{unit}.unit", [written])
        if nfs is not None and nfs.mount_now:
            ops.service(here, name=f"{unit} is enabled and mounted", unit=unit, inputs=(written,))
        else:
            ops.commands(here, name=f"{unit} is enabled", otherwise=f"{unit} is enabled",
                         commands=[] if here.state.unit(unit).enabled else [f"systemctl enable {unit}"])
