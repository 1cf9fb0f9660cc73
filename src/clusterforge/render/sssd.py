"""SSSD's configuration for a site directory (model/identity.py's Directory), and the nsswitch.conf lines that send
lookups to it. Pure: the resolved cluster (and the host's groups, or its installed nsswitch.conf) in, text out.

The bind password is not in the rendered text: the deploy adds it from Vault on its way to the host (roles/
directory.py), so that a plan's diff, the golden files and any log show the file without it.

Who may log in is SSSD's access provider, read by pam_sss in common-account (Debian's sss profile): on a login host
the login group and the admin group, where the inventory names a login group; on a service host (neither a login host
nor a compute node: the controller, the database, NFS and monitoring hosts) the admin group and the inventory's
service_host_groups alone (``deny`` where there are none: SSSD's simple provider with empty lists lets everyone in),
the same rule as sshd's own stack there (render/access.py); on a compute node every directory user, as it decides in
its own sshd stack (pam_slurm_adopt, render/access.py, which has no pam_sss). Local accounts (root) never reach it: the
same profile ends the stack for them at pam_localuser.

A directory person logs in with the SSH keys the directory holds for them (the openssh-lpk schema's sshPublicKey):
sshd asks SSSD for them (sshd_dropin, AuthorizedKeysCommand), so nothing is written to a home. Their home is made at
their first login on a login host (mkhomedir_profile): the directory's people cannot be listed to make them ahead.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..model import ValidCluster
from ..model.identity import Directory
from . import access
from .text import header

SSSD_CONF = "/etc/sssd/sssd.conf"
CA_CERT = "/etc/sssd/clusterforge-ldap-ca.pem"
NSSWITCH = "/etc/nsswitch.conf"
DOMAIN = "directory"
AUTHTOK = "ldap_default_authtok"
# The openssh-lpk schema's attribute that holds a person's OpenSSH public keys (SSSD's default, said here).
SSH_KEY_ATTRIBUTE = "sshPublicKey"
# sshd reads its drop-ins first (Debian's sshd_config starts with their Include), and the first value of a key wins.
SSHD_DROPIN = "/etc/ssh/sshd_config.d/clusterforge-directory.conf"
AUTHORIZED_KEYS_COMMAND = "/usr/bin/sss_ssh_authorizedkeys"  # sssd-common's, through SSSD's ssh responder
# A pam-auth-update profile of clusterforge's: pam-auth-update puts its line in common-session, which sshd includes.
MKHOMEDIR_PROFILE_NAME = "clusterforge-mkhomedir"
MKHOMEDIR_PROFILE = f"/usr/share/pam-configs/{MKHOMEDIR_PROFILE_NAME}"
COMMON_SESSION = "/etc/pam.d/common-session"
# SSSD's in-memory cache answers NSS without asking its responder for memcache_timeout (300 s by default) from when
# the responder last served the entry, whatever entry_cache_timeout says: served just before the entry expired, a
# person removed from the directory would still resolve for that long past the inventory's bound.
MEMCACHE_DEFAULT_S = 300
MEMCACHE_SHARE = 10  # the in-memory cache holds an entry for at most a tenth of entry_cache_timeout
# The databases SSSD answers that Slurm and logins need: users and groups.
SSS_DATABASES = ("passwd", "group")
# Debian's own nsswitch.conf (base-files), for a host that has none.
DEBIAN_NSSWITCH = """\
passwd:         files systemd
group:          files systemd
shadow:         files
gshadow:        files

hosts:          files dns
networks:       files

protocols:      db files
services:       db files
ethers:         db files
rpc:            db files

netgroup:       nis
"""


def directory_of(valid: ValidCluster) -> Directory | None:
    return valid.identity.directory if valid.identity is not None else None


def login_rule(valid: ValidCluster, groups: Iterable[str]) -> tuple[str, ...]:
    """The groups whose members may log in to this host through PAM (SSSD's simple access provider), or () for
    every directory user: a login host, where the inventory names a login group, takes it and the admin group. (A
    service host: ``access_rule``.)"""
    directory = directory_of(valid)
    if directory is None or directory.login_group is None or "login" not in set(groups):
        return ()
    admin = valid.identity.admin_group if valid.identity is not None else None
    return tuple(dict.fromkeys(g for g in (directory.login_group, admin) if g is not None))


def access_rule(valid: ValidCluster, groups: Iterable[str], logins: tuple[str, ...] = ()
                ) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """SSSD's access provider on a host in these groups, the groups and the users it lets in. A service host: the
    admin group and service_host_groups, and ``logins`` (the user the deploy logs in as, should it be the
    directory's); ``deny`` where that is nobody. A login host with a login group: ``login_rule``. Else ``permit``."""
    if access.service_host(groups):
        allowed = access.service_groups(valid)
        return ("simple", allowed, logins) if allowed or logins else ("deny", (), ())
    allowed = login_rule(valid, groups)
    return ("simple", allowed, ()) if allowed else ("permit", (), ())


def sssd_conf(valid: ValidCluster, groups: Iterable[str], logins: tuple[str, ...] = ()) -> str:
    """sssd.conf for a host in these groups, without the bind password (``with_bind_password``); ``logins``: the
    user the deploy logs in as, let in on a service host."""
    directory = directory_of(valid)
    assert directory is not None
    vault = valid.vault
    where = (f"Vault {vault.kv_mount}/{vault.ldap_bind_password.path.format(cluster=valid.name)} field "
             f"{vault.ldap_bind_password.field}") if vault else "the secret store"
    provider, allowed, users = access_rule(valid, tuple(groups), logins)
    starttls = all(uri.startswith("ldap://") for uri in directory.uris)
    domain: list[tuple[str, str | None]] = [
        ("id_provider", "ldap"),
        ("auth_provider", "ldap"),
        ("access_provider", provider),
        ("simple_allow_groups", ", ".join(allowed) if allowed else None),
        ("simple_allow_users", ", ".join(users) if users else None),
        ("ldap_uri", ", ".join(directory.uris)),
        ("ldap_search_base", directory.base_dn),
        ("ldap_user_search_base", directory.user_base),
        ("ldap_group_search_base", directory.group_base),
        ("ldap_schema", directory.ldap_schema),
        # ldap:// is only ever used upgraded: lookups too, not only authentication, go over TLS.
        ("ldap_id_use_start_tls", "true" if starttls else None),
        ("ldap_tls_reqcert", "demand"),
        ("ldap_tls_cacert", CA_CERT),
        ("ldap_default_bind_dn", directory.bind_dn),
        ("ldap_default_authtok_type", "password" if directory.bind_dn is not None else None),
        ("enumerate", "true" if directory.enumerate else "false"),
        # SSH keys, not passwords, are how people log in to a cluster; no password hash is kept on the hosts.
        ("cache_credentials", "false"),
        ("entry_cache_timeout", str(directory.entry_cache_timeout)),
        # Refreshed in the background before they expire (sssd.conf(5) advises 3/4 of the timeout), so that a job
        # starting on many nodes finds its user cached on each rather than asking the directory from all at once.
        ("refresh_expired_interval", str(directory.entry_cache_timeout * 3 // 4)),
        # People log in with the keys the directory holds (sshd_dropin).
        ("ldap_user_ssh_public_key", SSH_KEY_ATTRIBUTE),
    ]
    lines = [
        header(valid, f"{AUTHTOK} is added at deploy time from {where}." if directory.bind_dn is not None
               else "SSSD binds to the directory anonymously."),
        "[sssd]",
        f"domains = {DOMAIN}",
        # No services line: systemd starts the nss and pam responders from their sockets (Debian's units), and a
        # responder listed here would make its socket refuse to start.
        "",
        # A change in the directory reaches every lookup (Slurm's, sshd's) within entry_cache_timeout and a tenth,
        # not 300 s more: it is the responder's cache, not this one, that keeps lookups off the directory.
        "[nss]",
        f"memcache_timeout = {memcache_timeout(directory)}",
        "",
        f"[domain/{DOMAIN}]",
        *(f"{key} = {value}" for key, value in domain if value is not None),
    ]
    return "\n".join(lines) + "\n"


def memcache_timeout(directory: Directory) -> int:
    return min(MEMCACHE_DEFAULT_S, max(1, directory.entry_cache_timeout // MEMCACHE_SHARE))


def sshd_dropin(valid: ValidCluster) -> str:
    """sshd asks SSSD for a person's keys (the directory's sshPublicKey) besides their ~/.ssh/authorized_keys; the
    helper runs as nobody, as sshd asks of such a command."""
    return (f"# Written by clusterforge: a person of the site directory logs in with the SSH keys it holds for them "
            f"({SSH_KEY_ATTRIBUTE}, read\n# through SSSD), besides their own ~/.ssh/authorized_keys.\n"
            f"AuthorizedKeysCommand {AUTHORIZED_KEYS_COMMAND}\nAuthorizedKeysCommandUser nobody\n")


def mkhomedir_profile(valid: ValidCluster) -> str:
    """The pam-auth-update profile that makes a person's home (0700, from /etc/skel) at their first login on a login
    host: Debian's own (mkhomedir) makes it 0755, readable by everyone, where declared people's are 0700."""
    return ("Name: Create a site directory person's home at first login (clusterforge)\n"
            "Default: yes\n"
            "Priority: 0\n"
            "Session-Type: Additional\n"
            "Session-Interactive-Only: yes\n"
            "Session:\n"
            "\toptional\t\t\tpam_mkhomedir.so umask=0077 skel=/etc/skel\n")


def with_bind_password(text: str, password: str) -> str:
    """The file as the host gets it, the password last in the domain's section; only ever held in memory on the way
    to the host."""
    return f"{text}{AUTHTOK} = {password}\n"


def nsswitch(installed: str | None) -> str:
    """The host's nsswitch.conf with ``sss`` last on the passwd and group lines (what libnss-sss's postinst does
    once; the deploy keeps it so), every other line as the host has it."""
    lines = (installed if installed is not None else DEBIAN_NSSWITCH).splitlines()
    seen = set()
    out = []
    for line in lines:
        database, colon, sources = line.partition(":")
        name = database.strip()
        if colon and name in SSS_DATABASES and not line.lstrip().startswith("#"):
            seen.add(name)
            body, hashmark, comment = line.partition("#")
            if "sss" not in body.partition(":")[2].split():
                line = f"{body.rstrip()} sss" + (f" #{comment}" if hashmark else "")
        out.append(line)
    out += [f"{name}:{' ' * (15 - len(name))}files sss" for name in SSS_DATABASES if name not in seen]
    return "\n".join(out) + "\n"


def files(valid: ValidCluster) -> dict[str, str]:
    """What the golden cases show, by flat name: a login host's sssd.conf, a compute node's and a service host's
    (without the password), sshd's drop-in for the directory's keys, and the login hosts' pam_mkhomedir profile."""
    if directory_of(valid) is None:
        return {}
    return {"login-etc-sssd-sssd.conf": sssd_conf(valid, ("login",)),
            "other-etc-sssd-sssd.conf": sssd_conf(valid, ("compute",)),
            "service-etc-sssd-sssd.conf": sssd_conf(valid, ("controller", "database", "nfs")),
            "every" + SSHD_DROPIN.replace("/", "-"): sshd_dropin(valid),
            "login" + MKHOMEDIR_PROFILE.replace("/", "-"): mkhomedir_profile(valid)}
