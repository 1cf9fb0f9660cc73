"""Why a host could not be reached, said one way for the deploy and the operations: one line, "HOST: what happened:
what to check". ``openssh`` reads what OpenSSH says (the operations' connections, ssh.py); ``pyinfra`` reads what
pyinfra's SSH connector raises or prints (paramiko's exceptions, pyinfra's ConnectError text). The same situation
gives the same line from both.

The kinds: the name not resolved; the host unreachable (no route, or no answer in time); the connection refused;
no SSH on that port; its host key changed, or unknown under strict checking; authentication failed; sudo refused
(sudo.py's words); the connection lost once made. Anything else is "could not be reached" with the tool's own last
line. No line carries a secret: neither tool puts one in what it says, and only the tool's words of an unknown
failure are repeated.
"""

from __future__ import annotations

import errno
import getpass
import os
import re
import shlex
from dataclasses import dataclass

from . import sudo
from .hosts import Reach

NAME = "name not resolved"
UNREACHABLE = "unreachable"
REFUSED = "connection refused"
NOT_SSH = "not SSH"
HOST_KEY = "host key"
AUTHENTICATION = "authentication failed"
SUDO = "sudo refused"
LOST = "connection lost"
OTHER = "other"
KINDS = (NAME, UNREACHABLE, REFUSED, NOT_SSH, HOST_KEY, AUTHENTICATION, SUDO, LOST, OTHER)

RAW_LIMIT = 200  # characters of a tool's own words repeated


@dataclass(frozen=True, slots=True)
class Failure:
    """One host not reached: ``kind`` (one of KINDS), ``what`` happened and what to ``check``."""

    host: str
    kind: str
    what: str
    check: str = ""

    @property
    def cause(self) -> str:
        """What happened and what to check, without the host."""
        return f"{self.what}: {self.check}" if self.check else self.what

    @property
    def line(self) -> str:
        return f"{self.host}: {self.cause}"

    def __str__(self) -> str:
        return self.line


@dataclass(frozen=True, slots=True)
class _Where:
    """What a line names: the address, port, SSH user and known_hosts, from the inventory where known, else from
    the tool's words."""

    hostname: str
    port: int
    user: str
    known_hosts: str

    @property
    def key(self) -> str:
        """The host's name in known_hosts, as both tools write it."""
        return self.hostname if self.port == 22 else f"[{self.hostname}]:{self.port}"


def _where(host: str, reach: Reach | None, *, address: str | None = None, port: str | None = None,
           user: str | None = None, known: str | None = None) -> _Where:
    given = reach.known_hosts_path if reach is not None and reach.known_hosts else None
    return _Where(
        hostname=(reach.hostname if reach is not None else None) or address or host,
        port=(reach.port if reach is not None else None) or int(port or 22),
        user=(reach.user if reach is not None else None) or user or getpass.getuser(),
        known_hosts=given or known or (reach.known_hosts_path if reach is not None else "~/.ssh/known_hosts"))


def _failure(host: str, kind: str, where: _Where, detail: str = "") -> Failure:
    """The line of each kind; ``detail`` tells the variants of one kind apart."""
    if kind == NAME:
        return Failure(host, kind, f"name {where.hostname} not resolved",
                       "check its address in the inventory (ssh_hostname), and DNS or /etc/hosts here")
    if kind == UNREACHABLE and detail == "no route":
        return Failure(host, kind, f"{where.hostname} unreachable (no route)",
                       "check its address, and this machine's network, routes or VPN")
    if kind == UNREACHABLE:
        return Failure(host, kind, f"{where.hostname} unreachable (timed out on port {where.port})",
                       "check that the host is up, its address, and firewalls on the way")
    if kind == REFUSED:
        return Failure(host, kind, f"connection refused by {where.hostname} port {where.port}",
                       "check that sshd runs there, and ssh_port in the inventory")
    if kind == NOT_SSH:
        return Failure(host, kind, f"{where.hostname} port {where.port} does not speak SSH",
                       "check ssh_port in the inventory, and that sshd listens there")
    key, known = shlex.quote(where.key), shlex.quote(where.known_hosts)
    if kind == HOST_KEY and detail == "changed":
        return Failure(host, kind, f"host key of {where.key} changed",
                       f"if the host was reinstalled, ssh-keygen -f {known} -R {key}; if not, someone may be in "
                       "between")
    if kind == HOST_KEY and detail == "unwritable":
        directory = shlex.quote(os.path.dirname(where.known_hosts) or ".")
        return Failure(host, kind, f"its host key cannot be recorded ({where.known_hosts}: no such directory)",
                       f"make it (mkdir -m 700 {directory}), or check ssh_known_hosts_file in the inventory")
    if kind == HOST_KEY:
        return Failure(host, kind, f"host key of {where.key} unknown, and checking is strict",
                       f"add its key to {where.known_hosts}, or set ssh_strict_host_key_checking=\"accept-new\"")
    if kind == AUTHENTICATION:
        return Failure(host, kind, f"authentication failed as {where.user}",
                       "check ssh_user/ssh_key in the inventory, or that the key is in the host's authorized_keys "
                       "(ssh-agent: ssh-add -l)")
    if kind == LOST:
        return Failure(host, kind, f"the connection broke ({detail})",
                       "check that the host is still up, and the network on the way")
    return Failure(host, OTHER, "could not be reached", detail or "no reason given")


def _last(said: str) -> str:
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    return (lines[-1] if lines else "")[:RAW_LIMIT]


# What OpenSSH says (at LogLevel ERROR), first match wins: (pattern, kind, variant).
_OPENSSH = [
    (r"REMOTE HOST IDENTIFICATION HAS CHANGED|Host key for \S+ has changed", HOST_KEY, "changed"),
    (r"host key is known for|Host key verification failed", HOST_KEY, "unknown"),
    (r"(?:(?P<user>[^\s@]+)@\S+: )?Permission denied \(|Too many authentication failures|"
     r"No more authentication methods", AUTHENTICATION, ""),
    (r"Could not resolve hostname (?P<address>[^\s:]+)", NAME, ""),
    (r"connect to host (?P<address>\S+) port (?P<port>\d+): Connection refused", REFUSED, ""),
    # TCP connected, but no SSH banner in time: something else listens there (or nothing speaks).
    (r"Connection timed out during banner exchange|Connection to (?P<address>\S+) port (?P<port>\d+) timed out",
     NOT_SSH, ""),
    (r"connect to host (?P<address>\S+) port (?P<port>\d+): (?:Connection timed out|Operation timed out)",
     UNREACHABLE, "timed out"),
    (r"connect to host (?P<address>\S+) port (?P<port>\d+): (?:Network is unreachable|No route to host)",
     UNREACHABLE, "no route"),
    (r"kex_exchange_identification|ssh_exchange_identification|Bad remote protocol version|"
     r"Protocol major versions differ|banner line contains invalid characters", NOT_SSH, ""),
    (r"closed by remote host|Broken pipe|not responding|Connection reset|Connection closed", LOST, "raw"),
]


def openssh(host: str, said: str, reach: Reach | None = None) -> Failure:
    """Why OpenSSH did not reach ``host`` (it exited 255), from its standard error ``said``."""
    for pattern, kind, variant in _OPENSSH:
        found = re.search(pattern, said)
        if found is None:
            continue
        groups = {k: v for k, v in found.groupdict().items() if v}
        offending = re.search(r"(?:Offending \S+ key in|Add correct host key in) (\S+?)(?::\d+)?(?: to|$)", said,
                              re.MULTILINE)
        where = _where(host, reach, known=offending.group(1) if offending else None, **groups)
        return _failure(host, kind, where, _last(said) if variant == "raw" else variant)
    return _failure(host, OTHER, _where(host, reach), _last(said) or "ssh failed")


# What pyinfra's connector says (ConnectError's text: "Could not connect (...)", "SSH error (...)", ...) or paramiko
# raises, first match wins.
_PYINFRA = [
    (r"Host key for (?P<address>\S+) does not match", HOST_KEY, "changed"),
    (r"No host key for \S+ found in known_hosts", HOST_KEY, "unknown"),
    # During the connection, the one file written: known_hosts, a new key appended (its directory missing).
    (r"Could not connect \(No such file or directory: '(?P<known>[^']+)'", HOST_KEY, "unwritable"),
    # The last three: ssh_key unusable before any connection (OpenSSH goes on without it, and is refused).
    (r"Authentication (?:error|failed|timeout)|No authentication methods available|No existing session|"
     r"Bad authentication type|No such private key file|Private key file \(.*\) is encrypted|Invalid key",
     AUTHENTICATION, ""),
    (r"Could not resolve hostname|Name or service not known|Temporary failure in name resolution|"
     r"nodename nor servname", NAME, ""),
    (r"Error reading SSH protocol banner|Indecipherable protocol version|Incompatible version", NOT_SSH, ""),
    # paramiko's NoValidConnectionsError, in words: refused (or, rarer, no route to that host), on every address.
    (r"Unable to connect to port (?P<port>\d+) on (?P<address>\S+?)(?:\)|$| or )|Connection refused", REFUSED, ""),
    (r"Network is unreachable|No route to host", UNREACHABLE, "no route"),
    (r"timed out", UNREACHABLE, "timed out"),
    (r"Socket is closed|Connection reset|Broken pipe|EOF error", LOST, "raw"),
]
_ERRNO = re.compile(r"\[Errno [^\]]*\]\s*")


def pyinfra(host: str, error: BaseException | str, reach: Reach | None = None) -> Failure:
    """Why pyinfra's SSH connector did not reach ``host``: the exception it (paramiko, or pyinfra's ConnectError)
    raised, or the text pyinfra printed for it."""
    said = error if isinstance(error, str) else \
        str(error.args[0]) if error.args and isinstance(error.args[0], str) else str(error)
    said = _ERRNO.sub("", said)
    named = re.search(r"username=([^,)\s]+)", said)  # pyinfra's "Authentication error (username=..., key=...)"
    user = named.group(1) if named else None
    if isinstance(error, BaseException):
        # pyinfra's ConnectError is raised while paramiko's exception is handled: that one, where it tells.
        kind = _of_exception(error) or (_of_exception(error.__context__) if error.__context__ else None)
        if kind is not None:
            return _failure(host, kind[0], _where(host, reach, user=user, **kind[2]), kind[1])
    for pattern, kind_, variant in _PYINFRA:
        found = re.search(pattern, said)
        if found is None:
            continue
        groups = {k: v for k, v in found.groupdict().items() if v}
        where = _where(host, reach, user=user, **groups)
        return _failure(host, kind_, where, _last(said) if variant == "raw" else variant)
    return _failure(host, OTHER, _where(host, reach), _last(said) or "no reason given")


def _of_exception(error: BaseException) -> tuple[str, str, dict[str, str]] | None:
    """The kind of a socket or paramiko exception, by its class (paramiko is not imported for it), with what it
    names; None where only its words tell."""
    names = {cls.__name__ for cls in type(error).__mro__}
    if "gaierror" in names:
        return NAME, "", {}
    if "BadHostKeyException" in names:
        return HOST_KEY, "changed", {}
    if "AuthenticationException" in names:
        return AUTHENTICATION, "", {}
    if "NoValidConnectionsError" in names:
        # Every address refused, or unreachable (EHOSTUNREACH): each one's own error says which.
        errors = getattr(error, "errors", {}) or {}
        port = next((str(address[1]) for address in errors if len(address) > 1), None)
        refused = all(getattr(e, "errno", None) == errno.ECONNREFUSED for e in errors.values())
        return (REFUSED, "", {"port": port} if port else {}) if refused else \
            (UNREACHABLE, "no route", {})
    if isinstance(error, TimeoutError):
        return UNREACHABLE, "timed out", {}
    if isinstance(error, ConnectionRefusedError):
        return REFUSED, "", {}
    if isinstance(error, OSError) and error.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
        return UNREACHABLE, "no route", {}
    return None


def sudo_refused(host: str, user: str, said: str) -> Failure:
    """A sudo that ran nothing for ``user`` on ``host``, in sudo.py's words (a password asked, or refused)."""
    return Failure(host, SUDO, sudo.refusal(user, said))
