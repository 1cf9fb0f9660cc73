"""access: SSH to a compute node only into a job there (pam_slurm_adopt), root and the admin group always; what
Slurm's documentation asks of logind beside it. Only where the cluster's people are declared with ``adopt``
(model/identity.py; its rules refuse it without proctrack/cgroup and task/cgroup). The texts and why they are as they
are: render/access.py. Login hosts are left as they are: there the module would refuse everyone."""

from __future__ import annotations

from ..model import ValidCluster
from ..render import access as render
from ..engine import ops
from ..engine.footprint import Footprint
from ..engine.run import Here, step

PACKAGE = "libpam-slurm-adopt"
LOGIND = "systemd-logind.service"
LOGIND_DIR = render.LOGIND_DROPIN.rsplit("/", 1)[0]


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    if not ("compute" in groups and render.adopts(valid)):
        return Footprint(known=(PACKAGE,))
    files = tuple(render.files(valid))
    return Footprint(paths=(*files, LOGIND_DIR), shown=files, packages=(PACKAGE,), units=(LOGIND,), known=(PACKAGE,))


def deploy_login(here: Here) -> tuple[str, ...]:
    """The user the deploy logs in as where it is not root (``host_groups(..., ssh_user="admin", sudo=True)``): with
    no job on the node, pam_slurm_adopt would refuse it from the moment the stack below is written, and the next
    deploy, check and roll could no longer reach the node."""
    user = here.host.data.get("ssh_user")
    return (user,) if user and user != "root" else ()


@step("access", footprint=footprint, on=("compute",))
def access(here: Here) -> None:
    valid = here.valid
    if not render.adopts(valid):
        return
    # The access list before the stack that names it: a stack naming a missing file would refuse the admins too.
    ops.file(here, name="who reaches the node without a job (root, the admin group, the deploy's login)",
             path=render.ACCESS_CONF, content=render.access_conf(valid, deploy_login(here)))
    ops.file(here, name="sshd's PAM stack with pam_slurm_adopt", path=render.SSHD_PAM, content=render.sshd_pam(valid))
    ops.directory(here, name="logind's drop-in directory", path=LOGIND_DIR)
    dropin = ops.file(here, name="logind keeps a user's IPC (RemoveIPC=no)", path=render.LOGIND_DROPIN,
                      content=render.logind_dropin(valid))
    # logind reads logind.conf.d only when it starts.
    ops.service(here, name="systemd-logind runs with RemoveIPC=no", unit=LOGIND, inputs=(dropin,),
                why="its drop-in changed")
