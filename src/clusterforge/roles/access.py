"""access: SSH to a compute node only into a job there (pam_slurm_adopt), root and the admin group always; what
Slurm's documentation asks of logind beside it. Only where the cluster's people are declared with ``adopt``
(model/identity.py; its rules refuse it without proctrack/cgroup and task/cgroup). The texts and why they are as they
are: render/access.py. Login hosts are left as they are: there the module would refuse everyone.

/etc/pam.d/sshd is Debian's (openssh-server's) until clusterforge writes its own: the deploy keeps Debian's text first
(KEPT), and gives it back when adopt is turned off, with the access list and logind's drop-in gone, so that turning it
off undoes what turning it on did. A stack clusterforge wrote before it kept Debian's (its first release of adopt) has
nothing to give back: the deploy says how to get Debian's again and leaves the file."""

from __future__ import annotations

from ..model import ValidCluster
from ..render import access as render
from ..engine import ops
from ..engine.footprint import Footprint
from ..engine.run import Here, step

PACKAGE = "libpam-slurm-adopt"
LOGIND = "systemd-logind.service"
LOGIND_DIR = render.LOGIND_DROPIN.rsplit("/", 1)[0]
KEPT = "/var/lib/clusterforge/access/sshd.pam.debian"  # Debian's stack, as it was before clusterforge wrote its own
KEPT_DIR = KEPT.rsplit("/", 1)[0]
REINSTATE = ("rm /etc/pam.d/sshd && apt-get install --reinstall -o Dpkg::Options::=--force-confmiss "
             "openssh-server")


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    if "compute" not in groups:
        return Footprint(known=(PACKAGE,))
    if not render.adopts(valid):  # a stack of clusterforge's own to give back, where adopt was on
        return Footprint(paths=(render.SSHD_PAM, render.ACCESS_CONF, render.LOGIND_DROPIN, KEPT),
                         texts=(render.SSHD_PAM,), known=(PACKAGE,))
    files = tuple(render.files(valid))
    return Footprint(paths=(*files, LOGIND_DIR, KEPT_DIR, KEPT), texts=(render.SSHD_PAM,), shown=files,
                     packages=(PACKAGE,), units=(LOGIND,), known=(PACKAGE,))


def ours(text: str | None) -> bool:
    """Whether /etc/pam.d/sshd is the stack clusterforge writes (its first line says so)."""
    return text is not None and render.WRITTEN_BY in text.split("\n", 1)[0]


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
        give_back(here)
        return
    installed = here.state.texts.get(render.SSHD_PAM)
    keep = installed is not None and not ours(installed) and KEPT not in here.state.paths
    ops.commands(here, name="Debian's sshd PAM stack kept, to give back if adopt is turned off",
                 commands=[f"mkdir -p {KEPT_DIR}", f"cp {render.SSHD_PAM} {KEPT}.new", f"mv -f {KEPT}.new {KEPT}"]
                 if keep else [],
                 otherwise="Debian's sshd PAM stack is kept")
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


def give_back(here: Here) -> None:
    """adopt off: Debian's stack again where clusterforge's is there (staged and renamed: sshd never reads half a
    stack), the access list and logind's drop-in gone. A stack someone else wrote since is theirs and stays. logind
    keeps RemoveIPC=no until it next starts: the setting only spares users' shared memory, and a restart of logind
    is not worth it."""
    installed = here.state.texts.get(render.SSHD_PAM)
    mine = ours(installed)
    if mine and KEPT in here.state.paths:
        staged = f"{render.SSHD_PAM}.clusterforge-new"
        ops.commands(here, name="Debian's sshd PAM stack again (adopt is off)",
                     commands=[f"cp {KEPT} {staged}", f"mv -f {staged} {render.SSHD_PAM}", f"rm -f {KEPT}"],
                     otherwise="sshd's PAM stack is not clusterforge's")
    elif mine:
        here.warn_once(f"adopt is off, but {render.SSHD_PAM} is still clusterforge's (pam_slurm_adopt refuses users "
                       f"without a job): it was written before clusterforge kept Debian's, so there is none to give "
                       f"back; `{REINSTATE}` gives Debian's back")
    ops.absent(here, name="no access list for pam_slurm_adopt (adopt is off)", path=render.ACCESS_CONF)
    ops.absent(here, name="no logind drop-in of clusterforge's (adopt is off)", path=render.LOGIND_DROPIN)
