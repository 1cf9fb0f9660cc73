"""Which Vault to talk to and who logs in: the inventory's Vault entry, completed from the deploy host's environment.

The inventory describes the cluster's Vault, so its address, namespace and CA win over VAULT_ADDR, VAULT_NAMESPACE
and VAULT_CACERT/VAULT_CAPATH, which fill only what it leaves out. Credentials are the operator's, never the
inventory's: VAULT_TOKEN, else ~/.vault-token; or an AppRole role_id and secret_id from environment variables, else
files. VAULT_SKIP_VERIFY is read from the environment only, parsed as the vault CLI parses it.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..model import Vault
from .errors import VaultConfigError
from .secret import Secret

_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where Vault is and how to trust it; ``*_from`` say where each value came from, for error messages."""

    address: str
    address_from: str
    namespace: str | None
    verify: bool | str
    verify_from: str


@dataclass(frozen=True, slots=True)
class Credentials:
    method: str
    source: str
    token: Secret | None = None
    role_id: str | None = None
    secret_id: Secret | None = None


def _env(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name, "").strip()
    return value or None


def _skip_verify(environ: Mapping[str, str]) -> bool:
    value = environ.get("VAULT_SKIP_VERIFY", "")
    if value == "":
        return False
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise VaultConfigError(f"VAULT_SKIP_VERIFY={value!r} is not a boolean; write true or false (as for the vault CLI)")


def _system_trust_store() -> bool | str:
    # requests would otherwise trust only certifi's bundle; the vault CLI trusts the system's store, where an
    # internal CA is usually installed.
    paths = ssl.get_default_verify_paths()
    if paths.cafile and os.path.isfile(paths.cafile):
        return paths.cafile
    if paths.capath and os.path.isdir(paths.capath):
        return paths.capath
    return True


def _verify(vault: Vault, environ: Mapping[str, str]) -> tuple[bool | str, str]:
    if _skip_verify(environ):
        return False, "VAULT_SKIP_VERIFY"
    for value, source in ((vault.ca_cert, "the inventory's Vault(ca_cert=...)"),
                          (_env(environ, "VAULT_CACERT"), "VAULT_CACERT"),
                          (_env(environ, "VAULT_CAPATH"), "VAULT_CAPATH")):
        if value:
            path = Path(value).expanduser()
            if not path.exists():
                raise VaultConfigError(f"{source} names {path}, which does not exist")
            return str(path), f"{source} ({path})"
    return _system_trust_store(), "the system's trust store"


def address_from_env(vault: Vault, environ: Mapping[str, str] = os.environ) -> str | None:
    """VAULT_ADDR where the inventory names no address; None where it names one, or VAULT_ADDR is unset.

    A plain http:// one is refused as the inventory's own is (model/rules/vault.py): a shell's VAULT_ADDR must not
    send the token and every secret across the network in clear where the inventory would not. The commands that
    reach hosts call it before the first connection."""
    if vault.address:
        return None
    address = _env(environ, "VAULT_ADDR")
    if address and address.startswith("http://") and not vault.allow_plain_http:
        raise VaultConfigError(f"VAULT_ADDR={address} is plain HTTP: the token and every secret would cross the "
                               "network in clear; export the https:// address, or write "
                               "Vault(allow_plain_http=True) in the inventory for a Vault on the deploy host's "
                               "own loopback or a test")
    return address


def endpoint(vault: Vault, environ: Mapping[str, str] = os.environ) -> Endpoint:
    address, address_from = vault.address, "the inventory"
    if not address:
        address, address_from = address_from_env(vault, environ), "VAULT_ADDR"
    if not address:
        raise VaultConfigError("no Vault address: write Vault(address='https://vault.example.org:8200') in the "
                               "inventory, or export VAULT_ADDR")
    if not address.startswith(("http://", "https://")):
        raise VaultConfigError(f"Vault address {address!r} (from {address_from}) needs its scheme: "
                               "https://host:8200 or http://host:8200")
    namespace = vault.namespace or _env(environ, "VAULT_NAMESPACE")
    verify, verify_from = _verify(vault, environ)
    return Endpoint(address.rstrip("/"), address_from, namespace, verify, verify_from)


def _read_file(path: str, what: str) -> str:
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise VaultConfigError(f"cannot read the {what} from {file}: {error.strerror}") from None
    if not text:
        raise VaultConfigError(f"{file} is empty; it should hold the {what}")
    return text


def _token(environ: Mapping[str, str], home: Path) -> Credentials:
    token = _env(environ, "VAULT_TOKEN")
    if token:
        return Credentials("token", "VAULT_TOKEN", token=Secret(token.encode(), "Vault token"))
    helper_file = home / ".vault-token"
    if helper_file.is_file():
        text = _read_file(str(helper_file), "Vault token")
        return Credentials("token", str(helper_file), token=Secret(text.encode(), "Vault token"))
    raise VaultConfigError("no Vault token: export VAULT_TOKEN, or log in with `vault login` (or `bao login`), "
                           f"which writes {helper_file}")


def _approle_part(vault: Vault, environ: Mapping[str, str], env_name: str, file: str | None,
                  what: str) -> tuple[str | None, str]:
    value = _env(environ, env_name)
    if value:
        return value, env_name
    if file:
        return _read_file(file, f"AppRole {what}"), file
    return None, "nowhere"


def credentials(vault: Vault, environ: Mapping[str, str] = os.environ, home: Path | None = None) -> Credentials:
    """The operator's login: an environment variable wins over a file, as for the vault CLI."""
    if vault.auth == "token":
        return _token(environ, home if home is not None else Path.home())
    role_id, role_from = _approle_part(vault, environ, vault.role_id_env, vault.role_id_file, "role_id")
    if role_id is None:
        raise VaultConfigError(f"AppRole login needs a role_id: export {vault.role_id_env}, or name a file "
                               "holding it with Vault(role_id_file=...) in the inventory")
    secret_id, secret_from = _approle_part(vault, environ, vault.secret_id_env, vault.secret_id_file, "secret_id")
    # A role created with bind_secret_id=false logs in with its role_id alone, so a missing secret_id is allowed;
    # Vault says so if the role needs one.
    return Credentials("approle", f"AppRole role_id from {role_from}, secret_id from {secret_from}", role_id=role_id,
                       secret_id=Secret(secret_id.encode(), "AppRole secret_id") if secret_id else None)
