"""Rules for a site directory (Identity(directory=...)): the only source of people, reached over TLS only, with DNs
and names SSSD takes, a pinned CA certificate, and an OS that ships SSSD.

What validation cannot see: whether the directory's groups (admin_group, login_group) exist, and whether it knows the
accounting users. `clusterforge check` looks them up on every host (check/directory.py)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from ...distributions import shipping
from ..identity import Directory, Identity
from .check import Check, address_ok
from .containers import artifact

SCHEMES = ("ldaps", "ldap")
# One RDN of a DN: attribute=value (RFC 4514; a value may hold escaped commas, not checked further).
RDN = re.compile(r"^\s*[A-Za-z][A-Za-z0-9-]*\s*=\s*\S.*$")
# What sssd.conf holds a value in: one line, no leading or trailing blank (its parser strips them).
GROUP = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@ -]*$")
LEAST_CACHE_S = 60  # below a minute every job start asks the directory again


def _dn(value: str) -> bool:
    parts = re.split(r"(?<!\\),", value)
    return bool(value.strip()) and all(RDN.match(part) for part in parts) and "\n" not in value


def directory(check: Check, spec: Identity) -> None:
    found = spec.directory
    if found is None:
        return
    where = "identity.directory"
    if spec.people or spec.groups:
        check.add(where, "a cluster has one source of people: this directory, or people and groups declared in "
                         "identity.people and identity.groups, not both", spec, "directory")
    _uris(check, where, found)
    for field in ("base_dn", "user_base", "group_base", "bind_dn"):
        value = getattr(found, field)
        if value is not None and not _dn(value):
            check.add(f"{where}.{field}", f"{value!r} is not a DN (attribute=value, separated by commas, e.g. "
                      "'ou=people,dc=example,dc=org')", found, field)
    artifact(check, f"{where}.ca_certificate", found.ca_certificate, None)
    if found.entry_cache_timeout < LEAST_CACHE_S:
        check.add(f"{where}.entry_cache_timeout", f"{found.entry_cache_timeout} s: give at least {LEAST_CACHE_S}; "
                  "shorter, every job start on every node asks the directory again", found, "entry_cache_timeout")
    for field in ("login_group",):
        value = getattr(found, field)
        if value is not None and not GROUP.match(value):
            check.add(f"{where}.{field}", f"{value!r} is not a group name SSSD can be given", found, field)
    if spec.admin_group is not None and not GROUP.match(spec.admin_group):
        check.add("identity.admin_group", f"{spec.admin_group!r} is not a group name SSSD can be given", spec,
                  "admin_group")
    _sssd_shipped(check, where, spec)


def _uris(check: Check, where: str, found: Directory) -> None:
    if not found.uris:
        check.add(f"{where}.uris", "give at least one LDAP server", found, "uris")
        return
    schemes = set()
    for uri in found.uris:
        try:
            parts = urlsplit(uri)
            port = parts.port
        except ValueError:
            parts, port = None, None
        if parts is None or parts.scheme not in SCHEMES:
            check.add(f"{where}.uris", f"{uri!r}: only ldaps://host (TLS) or ldap://host (StartTLS, required) are "
                      "used; a directory is never read over a plain connection", found, "uris")
            continue
        schemes.add(parts.scheme)
        if not parts.hostname or not address_ok(parts.hostname) or parts.path not in ("", "/") or parts.query \
                or parts.username or (port is not None and not 0 < port < 65536):
            check.add(f"{where}.uris", f"{uri!r} is not '{parts.scheme}://host' or '{parts.scheme}://host:port' "
                      "(the base DN goes in base_dn)", found, "uris")
    if len(schemes) > 1:
        check.add(f"{where}.uris", "mixes ldaps:// and ldap://: SSSD applies StartTLS to every server or to none, "
                  "so give all of one kind", found, "uris")
    check.duplicates(((uri, found, f"{where}.uris") for uri in found.uris), "names a server twice ({at})")


def _sssd_shipped(check: Check, where: str, spec: Identity) -> None:
    """A cluster whose Slurm release only an OS without SSSD ships (Debian forky, 26.05) cannot read a directory
    through it. With an exact Slurm pinned from a site repository the hosts' OS is not known here: the deploy
    refuses a host whose OS lacks SSSD (roles/directory.py)."""
    stack = check.cluster.stack
    if stack is not None and stack.slurm is not None:
        return
    shippers = shipping(check.version)
    if shippers and all(d.sssd is None for d in shippers):
        names = ", ".join(d.name for d in shippers)
        check.add(where, f"Slurm {check.version} comes from {names}, whose archive has no SSSD (no sssd, sssd-ldap, "
                  "libnss-sss or libpam-sss; Debian unstable has them): a site directory needs SSSD on every host. "
                  "Declare the people in identity.people, or run a release whose OS ships SSSD", spec, "directory")
