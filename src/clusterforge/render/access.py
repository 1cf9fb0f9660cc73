"""Who reaches a compute node over SSH (model/identity.py's ``adopt``): sshd's PAM stack with pam_slurm_adopt, the
access list that lets root and the admin group past it, and logind's drop-in. Pure: the resolved cluster in, text out.

The compute nodes' /etc/pam.d/sshd is Debian's own (openssh-server in 12 and 13) with two stacks written out instead
of included:
- account: common-account's lines, not the file. Debian's SSSD profile adds ``account sufficient pam_localuser.so``
  to common-account, which would let every local user through before pam_slurm_adopt runs (Slurm's page asks for it
  to go); written out, no profile can put a module ahead of the adopt line.
- session: common-session's lines less pam_systemd, which would move the session out of the job's cgroup into a
  logind scope of its own (Slurm's page: "disable it in all files that are included in sshd").
pam_slurm_adopt is ``required`` without the leading ``-`` Slurm's examples use: where the module is missing, every
login but root's and the admin group's fails, rather than every one succeeding unconfined. Both failure actions are
``deny``: the module's defaults let the session in unconfined (adopt failure) or fall through (generic failure).
"""

from __future__ import annotations

from ..model import ValidCluster

SSHD_PAM = "/etc/pam.d/sshd"
ACCESS_CONF = "/etc/security/access-clusterforge.conf"
LOGIND_DROPIN = "/etc/systemd/logind.conf.d/clusterforge.conf"
ADOPT = "pam_slurm_adopt.so action_adopt_failure=deny action_generic_failure=deny"
WRITTEN_BY = "written by clusterforge"  # in the first line of the sshd stack: the deploy knows its own by it

_SSHD = """\
# /etc/pam.d/sshd of a compute node, written by clusterforge: Debian's, with pam_slurm_adopt last in the account
# stack (SSH only to a node where the user has a job, the session put in that job's cgroup; root and the admin
# group always, through {access}), and no pam_systemd in the session stack.

# Standard Un*x authentication.
@include common-auth

# Disallow non-root logins when /etc/nologin exists.
account    required     pam_nologin.so

# Standard Un*x authorization: common-account's own lines, so that no profile (SSSD's pam_localuser) ends the
# stack before pam_slurm_adopt.
account    [success=1 new_authtok_reqd=done default=ignore]    pam_unix.so
account    requisite    pam_deny.so
account    required     pam_permit.so

# Root and the admin group, job or not; everyone else only into a job of theirs on this node.
account    sufficient   pam_access.so accessfile={access}
account    required     {adopt}

# SELinux needs to be the first session rule.
session [success=ok ignore=ignore module_unknown=ignore default=bad]        pam_selinux.so close

# Set the loginuid process attribute.
session    required     pam_loginuid.so

# Create a new session keyring.
session    optional     pam_keyinit.so force revoke

# Standard Un*x session setup and teardown: common-session's lines less pam_systemd, which would move the session
# out of the job's cgroup.
session    [default=1]  pam_permit.so
session    requisite    pam_deny.so
session    required     pam_permit.so
session    required     pam_unix.so

# Print the message of the day upon successful login.
session    optional     pam_motd.so  motd=/run/motd.dynamic
session    optional     pam_motd.so noupdate

# Print the status of the user's mailbox upon successful login.
session    optional     pam_mail.so standard noenv

# Set up user limits from /etc/security/limits.conf.
session    required     pam_limits.so

# Read environment variables from /etc/environment and /etc/security/pam_env.conf, and /etc/default/locale.
session    required     pam_env.so
session    required     pam_env.so user_readenv=1 envfile=/etc/default/locale

# SELinux needs to intervene at login time to ensure that the process starts in the proper default security context.
session [success=ok ignore=ignore module_unknown=ignore default=bad]        pam_selinux.so open

# Standard Un*x password updating.
@include common-password
"""


def adopts(valid: ValidCluster) -> bool:
    """Whether the compute nodes take SSH only into a job (people declared, ``adopt`` on)."""
    return valid.identity is not None and valid.identity.adopt


def sshd_pam(valid: ValidCluster) -> str:
    return _SSHD.format(access=ACCESS_CONF, adopt=ADOPT)


def access_conf(valid: ValidCluster, logins: tuple[str, ...] = ()) -> str:
    """pam_access's list for the compute nodes' sshd: root, the admin group and ``logins`` (the deploy's own SSH
    user, roles/access.py) pass; everyone else is left to pam_slurm_adopt (pam_access is ``sufficient``: its refusal
    only means "not by this rule")."""
    spec = valid.identity
    admin = spec.admin_group if spec is not None else None
    lines = ["# Written by clusterforge: who reaches a compute node over SSH without a job there.", "+:root:ALL"]
    lines += [f"+:{user}:ALL" for user in logins]
    if admin is not None:
        lines.append(f"+:({admin}):ALL")
    return "\n".join([*lines, "-:ALL:ALL"]) + "\n"


def logind_dropin(valid: ValidCluster) -> str:
    """logind keeps a user's IPC objects when their last session ends: a job's shared memory (NCCL, MPI) must not
    vanish because its owner logged out of an SSH session on the node."""
    return ("# Written by clusterforge: a job's shared memory outlives its owner's SSH sessions on this node.\n"
            "[Login]\nRemoveIPC=no\n")


def files(valid: ValidCluster) -> dict[str, str]:
    """What a compute node gets, by path; nothing where the cluster does not adopt."""
    if not adopts(valid):
        return {}
    return {SSHD_PAM: sshd_pam(valid), ACCESS_CONF: access_conf(valid), LOGIND_DROPIN: logind_dropin(valid)}


def flat_name(path: str) -> str:
    """The golden cases' flat name of a path: compute-<path with / as ->."""
    return "compute" + path.replace("/", "-")
