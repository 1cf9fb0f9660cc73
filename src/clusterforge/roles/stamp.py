"""stamp: the deploy's last step on every host: which clusterforge deployed it, from which inventory, when and by
whom (/etc/clusterforge/deployed.json, render/stamp.py), for `clusterforge check` to compare across the cluster.

Last, so that a stamp says the deploy got to the end on that host: a host that failed, or a run stopped before,
keeps the stamp it had. A second deploy changes nothing, so the stamp is written only where the clusterforge version
or the inventory's digest differ from the host's; its time and user stay those of the deploy that brought the host
to them.
"""

from __future__ import annotations

import getpass
import os
import socket
from datetime import UTC, datetime

from .. import __version__
from ..engine import ops
from ..engine.footprint import Footprint
from ..engine.run import Here, step
from ..model import ValidCluster
from ..render import stamp as render

STAMP_DIR = render.PATH.rsplit("/", 1)[0]


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    return Footprint(paths=(STAMP_DIR, render.PATH), texts=(render.PATH,))


def _deployer() -> tuple[str, str, str]:
    """When, by whom and from where this run deploys: the login name behind sudo, where the admin runs it so."""
    try:
        user = os.environ.get("SUDO_USER") or getpass.getuser()
    except (KeyError, OSError):  # no name for the uid (a container's): the uid says who
        user = str(os.getuid())
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), user, socket.gethostname()


def _held(here: Here) -> render.Stamp | None:
    text = here.state.texts.get(render.PATH)
    if text is None:
        return None
    try:
        return render.read(text)
    except render.NotAStamp:
        return None  # written again, whole


@step("stamp", footprint=footprint)
def stamp(here: Here) -> None:
    # One time and one user for all the hosts of the run, and the same in its rehearsal and its operations.
    at, by, machine = here.run.once("deployer", _deployer)
    wanted = render.Stamp(clusterforge=__version__, inventory=here.valid.inventory_digest, cluster=here.valid.name,
                          deployed_at=at, deployed_by=by, deployed_from=machine)
    held = _held(here)
    kept = held is not None and held.same_deploy(wanted) and held.cluster == wanted.cluster
    ops.directory(here, name=f"the deploy's stamp: {STAMP_DIR}", path=STAMP_DIR)
    ops.file(here, name="the deploy's stamp: which clusterforge deployed this host", path=render.PATH,
             content=here.state.texts[render.PATH] if kept else render.render(wanted), atomic=True,
             summary=f"clusterforge {wanted.clusterforge}, inventory {wanted.inventory[:12]}")
