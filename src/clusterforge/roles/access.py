"""access: who reaches a host over SSH. A compute node only into a job there (pam_slurm_adopt), root and the admin
group always; what Slurm's documentation asks of logind beside it. Only where the cluster's people are declared with
``adopt`` (model/identity.py; its rules refuse it without proctrack/cgroup and task/cgroup). A service host (neither a
login host nor a compute node: the controller, the database host, the NFS server, the monitoring host) only root, the
admin group, the deploy's own login and the inventory's service_host_groups, wherever the inventory has an Identity
(``service_rule``). The texts and why they are as they are: render/access.py. Login hosts are left as they are: there
the module would refuse everyone.

/etc/pam.d/sshd is Debian's (openssh-server's) until clusterforge writes its own: the deploy keeps Debian's text first
(KEPT), and gives it back when adopt is turned off, with the access list and logind's drop-in gone, so that turning it
off undoes what turning it on did. A stack clusterforge wrote before it kept Debian's (its first release of adopt) has
nothing to give back: the deploy says how to get Debian's again and leaves the file.

A service host's /etc/pam.d/sshd stays the host's own: the rule is a block put first in its account stack, and taken
out again (with its access list, message and sshd drop-in) where the host is no longer a service host or the
inventory no longer has an Identity. sshd reads the drop-in once it changed, checked first (``sshd -t``), owed like a
restart (a record) so that a run killed between the upload and the reload reloads on the next."""

from __future__ import annotations

from ..model import ValidCluster
from ..render import access as render
from ..engine import ops
from ..engine.change import Change
from ..engine.footprint import Footprint, union
from ..engine.run import Here, step

PACKAGE = "libpam-slurm-adopt"
LOGIND = "systemd-logind.service"
LOGIND_DIR = render.LOGIND_DROPIN.rsplit("/", 1)[0]
KEPT = "/var/lib/clusterforge/access/sshd.pam.debian"  # Debian's stack, as it was before clusterforge wrote its own
KEPT_DIR = KEPT.rsplit("/", 1)[0]
REINSTATE = ("rm /etc/pam.d/sshd && apt-get install --reinstall -o Dpkg::Options::=--force-confmiss "
             "openssh-server")


SSHD = "ssh.service"
FORMER_RECORD = "sshd-service-host"  # the name of sshd's record (ops.reload) before it was named from the unit
SERVICE_PATHS = (render.SERVICE_ACCESS_CONF, render.SERVICE_MESSAGE, render.SERVICE_SSHD_DROPIN)


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    return union((compute_footprint(valid, groups), service_footprint(valid, groups)))


def service_footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    """On every host: the service host's files (a host that is no longer one, or an inventory without an Identity,
    has them removed) and sshd's stack, whose text the block goes into or comes out of."""
    guarded = render.guards_service_hosts(valid) and render.service_host(groups)
    return Footprint(paths=(*SERVICE_PATHS, render.SSHD_PAM), texts=(render.SSHD_PAM,),
                     shown=(*SERVICE_PATHS, render.SSHD_PAM) if guarded else ())


def compute_footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    if "compute" not in groups:
        return Footprint(known=(PACKAGE,))
    if not render.adopts(valid):  # a stack of clusterforge's own to give back, where adopt was on
        return Footprint(paths=(render.SSHD_PAM, render.ACCESS_CONF, render.LOGIND_DROPIN, KEPT),
                         texts=(render.SSHD_PAM,), known=(PACKAGE,))
    files = tuple(render.compute_files(valid))
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


@step("access", footprint=footprint)
def access(here: Here) -> None:
    if "compute" in here.groups:
        compute_access(here)
    elif render.guards_service_hosts(here.valid) and render.service_host(here.groups):
        service_rule(here)
    else:
        service_rule_gone(here, stack=True)


def compute_access(here: Here) -> None:
    valid = here.valid
    # Where this host was a service host before: its rule's files go (adopt's stack, or Debian's given back, has no
    # block; Debian's own, adopt off, has it taken out).
    service_rule_gone(here, stack=not render.adopts(valid) and not ours(here.state.texts.get(render.SSHD_PAM)))
    if not render.adopts(valid):
        give_back(here)
        return
    installed = here.state.texts.get(render.SSHD_PAM)
    keep = installed is not None and not ours(installed) and KEPT not in here.state.paths
    ops.commands(here, name="Debian's sshd PAM stack kept, to give back if adopt is turned off",
                 commands=[f"mkdir -p {KEPT_DIR}", *ops.renamed_over(KEPT, f"cp {render.SSHD_PAM}")]
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
        ops.commands(here, name="Debian's sshd PAM stack again (adopt is off)",
                     commands=[*ops.renamed_over(render.SSHD_PAM, f"cp {KEPT}"), f"rm -f {KEPT}"],
                     otherwise="sshd's PAM stack is not clusterforge's")
    elif mine:
        here.warn_once(f"adopt is off, but {render.SSHD_PAM} is still clusterforge's (pam_slurm_adopt refuses users "
                       f"without a job): it was written before clusterforge kept Debian's, so there is none to give "
                       f"back; `{REINSTATE}` gives Debian's back")
    ops.absent(here, name="no access list for pam_slurm_adopt (adopt is off)", path=render.ACCESS_CONF)
    ops.absent(here, name="no logind drop-in of clusterforge's (adopt is off)", path=render.LOGIND_DROPIN)


def service_rule(here: Here) -> None:
    """A service host admits root, the admin group, the deploy's login and service_host_groups over SSH, by every
    method, anyone else refused with the rule's message: the access list and the message first (a stack naming a
    missing list refuses root too), then the block in sshd's stack (written beside it and renamed over it: sshd reads
    the stack at each login, never half of it), then sshd's drop-in, checked and read."""
    valid, logins = here.valid, deploy_login(here)
    ops.file(here, name="who logs in to a service host (root, the admin group, the deploy's login)",
             path=render.SERVICE_ACCESS_CONF, content=render.service_access_conf(valid, logins))
    ops.file(here, name="what a person refused by a service host reads", path=render.SERVICE_MESSAGE,
             content=render.service_message(valid))
    ops.file(here, name="sshd's PAM stack refuses everyone else on a service host", path=render.SSHD_PAM,
             content=render.service_sshd_pam(here.state.texts.get(render.SSHD_PAM)), atomic=True)
    dropin = ops.file(here, name="sshd offers no password to anyone else on a service host",
                      path=render.SERVICE_SSHD_DROPIN, content=render.service_sshd_dropin(valid, logins))
    sshd_reads(here, "the service host's drop-in", "service-host", dropin, formerly=FORMER_RECORD)


def service_rule_gone(here: Here, stack: bool) -> None:
    """No service-host rule here (not a service host, or no Identity): the block out of sshd's stack (``stack``),
    then its list and message, and sshd's drop-in, read by sshd once it is gone."""
    installed = here.state.texts.get(render.SSHD_PAM)
    if stack and render.has_service_block(installed):
        assert installed is not None
        ops.file(here, name="sshd's PAM stack without the service-host rule", path=render.SSHD_PAM,
                 content=render.without_service_block(installed), atomic=True)
    ops.absent(here, name="no access list of a service host", path=render.SERVICE_ACCESS_CONF)
    ops.absent(here, name="no refusal message of a service host", path=render.SERVICE_MESSAGE)
    gone = ops.absent(here, name="no sshd drop-in of a service host", path=render.SERVICE_SSHD_DROPIN)
    sshd_reads(here, "the service host's drop-in", "service-host", gone, formerly=FORMER_RECORD)


def sshd_reads(here: Here, what: str, reads: str, dropin: Change, formerly: str) -> Change:
    """sshd reads a drop-in of clusterforge's as it now is (written, or gone), checked first: a reload of a config
    sshd refuses would leave it running the old one, silently. Reloaded where it runs (a reload keeps the sessions it
    serves); owed until done (ops.reload, ``reads`` naming its record)."""
    return ops.reload(here, name=f"sshd reads {what}", unit=SSHD, reads=reads, files=[dropin],
                      command=f"sshd -t && systemctl try-reload-or-restart {SSHD}", formerly=formerly)
