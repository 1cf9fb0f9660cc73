"""Who reaches a host over SSH. A compute node (model/identity.py's ``adopt``): sshd's PAM stack with pam_slurm_adopt,
the access list that lets root and the admin group past it, and logind's drop-in. A service host (any host that is
neither a login host nor a compute node: the controller, the database host, the NFS server, the monitoring host):
root, the admin group, the deploy's own login and the inventory's service_host_groups, nobody else. Pure: the resolved
cluster (and the host's installed stack) in, text out.

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

from collections.abc import Iterable

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


def compute_files(valid: ValidCluster) -> dict[str, str]:
    """What a compute node gets, by path; nothing where the cluster does not adopt."""
    if not adopts(valid):
        return {}
    return {SSHD_PAM: sshd_pam(valid), ACCESS_CONF: access_conf(valid), LOGIND_DROPIN: logind_dropin(valid)}


SERVICE = "service:"  # a golden case's key of a service host's file (files)


def files(valid: ValidCluster) -> dict[str, str]:
    """What the golden cases show: a compute node's files by path, and a service host's, by path after
    ``SERVICE`` (its sshd stack as it is on a host that had Debian's; the deploy's own login not in the lists)."""
    found: dict[str, str] = dict(compute_files(valid))
    if guards_service_hosts(valid):
        found |= {SERVICE + SSHD_PAM: service_sshd_pam(None),
                  SERVICE + SERVICE_ACCESS_CONF: service_access_conf(valid),
                  SERVICE + SERVICE_MESSAGE: service_message(valid),
                  SERVICE + SERVICE_SSHD_DROPIN: service_sshd_dropin(valid)}
    return found


def flat_name(path: str) -> str:
    """The golden cases' flat name of a key of ``files``: compute-<path with / as -> or service-<path ...>."""
    if path.startswith(SERVICE):
        return "service" + path.removeprefix(SERVICE).replace("/", "-")
    return "compute" + path.replace("/", "-")


# --- service hosts ---------------------------------------------------------------------------------------------------
#
# A person on slurmctld's or slurmdbd's machine is one local exploit from the accounting database and the munge key:
# a service host lets in root, the admin group, the user the deploy logs in as (without it the deploy would lock
# itself out) and the groups the inventory names (Identity(service_host_groups=...)), declared people and the
# directory's alike, by every method sshd offers. The rule is a block of sshd's PAM account stack, ahead of
# everything Debian's stack has there (SSSD's profile puts a `sufficient pam_localuser` in common-account, which
# would let every local user through before a rule after it): pam_access with its own list, and for anyone it does
# not let in, pam_echo's message naming the rule, then pam_deny. sshd sends an account-stage PAM message to the
# client as a banner before it closes the connection ("Access denied for user X by PAM account configuration"),
# whatever the method, keys included. The rest of Debian's stack is the host's own: the block goes in and comes out
# again (service_sshd_pam, without_service_block) and nothing else changes, so Debian's updates of the file stay.
# sshd's drop-in keeps PAM's account stage on (UsePAM) and offers people there no password at all (a password tried
# against a service host would tell an attacker whether it is right before the account stage refuses).

SERVICE_ACCESS_CONF = "/etc/security/access-clusterforge-service.conf"
SERVICE_MESSAGE = "/etc/security/clusterforge-service-host.txt"
SERVICE_SSHD_DROPIN = "/etc/ssh/sshd_config.d/clusterforge-service-host.conf"
SERVICE_BEGIN = "# clusterforge: a service host: root, the admin group and the deploy's login only (begin)"
SERVICE_END = "# clusterforge: a service host (end)"
PEOPLE_GROUPS = frozenset({"login", "compute"})
# Debian 12's /etc/pam.d/sshd (openssh-server 1:9.2p1; 13's reads no ~/.pam_environment), for a host that has none.
DEBIAN_SSHD = """\
# PAM configuration for the Secure Shell service

# Standard Un*x authentication.
@include common-auth

# Disallow non-root logins when /etc/nologin exists.
account    required     pam_nologin.so

# Uncomment and edit /etc/security/access.conf if you need to set complex
# access limits that are hard to express in sshd_config.
# account  required     pam_access.so

# Standard Un*x authorization.
@include common-account

# SELinux needs to be the first session rule.  This ensures that any
# lingering context has been cleared.  Without this it is possible that a
# module could execute code in the wrong domain.
session [success=ok ignore=ignore module_unknown=ignore default=bad]        pam_selinux.so close

# Set the loginuid process attribute.
session    required     pam_loginuid.so

# Create a new session keyring.
session    optional     pam_keyinit.so force revoke

# Standard Un*x session setup and teardown.
@include common-session

# Print the message of the day upon successful login.
# This includes a dynamically generated part from /run/motd.dynamic
# and a static (admin-editable) part from /etc/motd.
session    optional     pam_motd.so  motd=/run/motd.dynamic
session    optional     pam_motd.so noupdate

# Print the status of the user's mailbox upon successful login.
session    optional     pam_mail.so standard noenv # [1]

# Set up user limits from /etc/security/limits.conf.
session    required     pam_limits.so

# Read environment variables from /etc/environment and
# /etc/security/pam_env.conf.
session    required     pam_env.so # [1]
# In Debian 4.0 (etch), locale-related environment variables were moved to
# /etc/default/locale, so read that as well.
session    required     pam_env.so user_readenv=1 envfile=/etc/default/locale

# SELinux needs to intervene at login time to ensure that the process starts
# in the proper default security context.  Only sessions which are intended
# to run in the user's context should be run after this.
session [success=ok ignore=ignore module_unknown=ignore default=bad]        pam_selinux.so open

# Standard Un*x password updating.
@include common-password
"""


def service_host(groups: Iterable[str]) -> bool:
    """Whether a host in these groups is a service host: neither a login host nor a compute node. A host that is
    also one of those is judged as that (people log in to a login host; a compute node admits them into a job)."""
    return not PEOPLE_GROUPS & set(groups)


def guards_service_hosts(valid: ValidCluster) -> bool:
    """Whether the service hosts admit only root, the admin group, the deploy's login and service_host_groups:
    wherever the inventory says who the cluster's people are (an Identity, declared people, a directory or neither).
    Without one, clusterforge does not know who the admins are, and leaves sshd as the site has it."""
    return valid.identity is not None


def service_groups(valid: ValidCluster) -> tuple[str, ...]:
    """The groups whose members log in to a service host: the admin group, then service_host_groups."""
    spec = valid.identity
    if spec is None:
        return ()
    return tuple(dict.fromkeys(g for g in (spec.admin_group, *spec.service_host_groups) if g))


def service_access_conf(valid: ValidCluster, logins: tuple[str, ...] = ()) -> str:
    """pam_access's list for a service host's sshd: root, ``logins`` (the deploy's own SSH user), the admin group and
    service_host_groups; everyone else is refused, with the message (``service_message``)."""
    lines = ["# Written by clusterforge: who logs in to this service host over SSH (Identity(admin_group=...,",
             "# service_host_groups=...) and the deploy's own login); everyone else is refused.", "+:root:ALL"]
    lines += [f"+:{user}:ALL" for user in logins]
    lines += [f"+:({group}):ALL" for group in service_groups(valid)]
    return "\n".join([*lines, "-:ALL:ALL"]) + "\n"


def service_message(valid: ValidCluster) -> str:
    """What a refused person reads (pam_echo: %h is this host's name; a literal percent sign is %%)."""
    groups = service_groups(valid)
    members = (f"the members of {', '.join(groups[:-1])} and {groups[-1]}, " if len(groups) > 1
               else f"the members of {groups[0]}, " if groups else "")
    who = f"root, {members}and the user the deploy logs in as"
    logins = ", ".join(host.name for host in valid.login)
    elsewhere = f" Log in to a login host ({logins}) instead." if logins else ""
    return (f"Access denied by clusterforge: %h is a service host of cluster {valid.name} (its controller, database, "
            f"NFS or monitoring host), where only {who} may log in ({SERVICE_ACCESS_CONF}; a site lets more groups "
            f"in with Identity(service_host_groups=...)).{elsewhere}\n").replace("%", "%%").replace("%%h", "%h")


def service_block() -> list[str]:
    return [SERVICE_BEGIN,
            f"account    [success=2 default=ignore]  pam_access.so accessfile={SERVICE_ACCESS_CONF}",
            f"account    optional     pam_echo.so file={SERVICE_MESSAGE}",
            "account    requisite    pam_deny.so",
            SERVICE_END]


def without_service_block(text: str) -> str:
    """The stack without clusterforge's service-host block (every copy of it, a half-written one too)."""
    lines, out, inside = text.split("\n"), [], False
    block = set(service_block())
    for line in lines:
        if line == SERVICE_BEGIN:
            inside = True
            continue
        if inside and line == SERVICE_END:
            inside = False
            continue
        if inside and line not in block:
            inside = False  # a begin without its end: only the block's own lines go
        if not inside:
            out.append(line)
    return "\n".join(out)


def has_service_block(text: str | None) -> bool:
    return text is not None and SERVICE_BEGIN in text.split("\n")


def service_sshd_pam(installed: str | None) -> str:
    """The host's sshd stack (Debian's where it has none) with the block first in the account stack: before the
    first account line or include of common-account, so that nothing ahead of it ends the stack."""
    lines = without_service_block(installed if installed is not None else DEBIAN_SSHD).split("\n")
    at = next((i for i, line in enumerate(lines) if _account_line(line)), None)
    if at is None:  # no account stack at all: the block is it, before the session stack or at the end
        at = next((i for i, line in enumerate(lines) if line.split("#", 1)[0].split()[:1] in (["session"],
                                                                                               ["-session"])),
                  len(lines))
    while at > 0 and lines[at - 1].startswith("#") and not lines[at - 1].startswith(SERVICE_END):
        at -= 1  # above the comment that says what the first line is
    return "\n".join([*lines[:at], *service_block(), *lines[at:]])


def _account_line(line: str) -> bool:
    words = line.split("#", 1)[0].split()
    return bool(words) and (words[0].lstrip("-") == "account" or words[:2] == ["@include", "common-account"])


def service_sshd_dropin(valid: ValidCluster, logins: tuple[str, ...] = ()) -> str:
    """sshd on a service host: PAM's account stage on for every method (Debian's default, said first: the first
    value of a key wins, and drop-ins are read first), and no password offered to anyone the rule refuses. ``Match
    all`` ends the block, so nothing of the file sshd reads after it falls under it."""
    users = ",".join(["*", "!root", *(f"!{user}" for user in logins)])
    groups = ",".join(["*", *(f"!{group}" for group in service_groups(valid))])
    return ("# Written by clusterforge: a service host of the cluster, where only root, the admin group, the deploy's "
            "login and\n# Identity(service_host_groups) log in (PAM's account stack, /etc/pam.d/sshd, refuses "
            "everyone else with its message).\nUsePAM yes\n"
            "# Nobody else is offered a password: their key reaches the account stack, which refuses them.\n"
            f"Match User {users} Group {groups}\n"
            "\tPasswordAuthentication no\n\tKbdInteractiveAuthentication no\n"
            "Match all\n")
