"""One logged-in connection to Vault, and the translation of every way a call can fail into a SecretsError.

The SecretsError is raised after the except block, not inside it, so that it carries no reference to the
requests/hvac exception, whose request object may hold a secret being written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import hvac
import hvac.exceptions as hvac_errors
import requests

from ..model import Vault
from .errors import (
    SecretsError,
    VaultAuthError,
    VaultSealed,
    VaultTlsError,
    VaultUnavailable,
    VaultUnreachable,
)
from .settings import Credentials, Endpoint, credentials, endpoint

TIMEOUT_S = 15

T = TypeVar("T")


def _vault_says(error: hvac_errors.VaultError) -> str:
    """Vault's own words, on one line: its multi-error form ("1 error occurred:\n\t* permission denied") flattened."""
    texts = [str(e) for e in error.errors] if error.errors else [str(error.args[0]) if error.args else ""]
    parts = []
    for text in texts:
        bullets = re.findall(r"^\s*\* (.+)$", text, flags=re.MULTILINE)
        parts.extend(bullets or [" ".join(text.split())])
    return "; ".join(p for p in parts if p) or "no detail"


def _tls_reason(error: requests.exceptions.SSLError) -> str:
    match = re.search(r"\] ([^\]]+?) \(_ssl\.c", str(error))
    return match.group(1) if match else "the handshake failed"


def _connection_reason(error: requests.RequestException) -> str:
    text = str(error)
    if isinstance(error, requests.exceptions.Timeout):
        return f"no answer within {TIMEOUT_S} s"
    if "Connection refused" in text:
        return "connection refused"
    if "Name or service not known" in text or "Temporary failure in name resolution" in text \
            or "nodename nor servname" in text:
        return "the host name does not resolve"
    if "No route to host" in text:
        return "no route to host"
    return "the connection failed"


class VaultSession:
    """A Vault client for one inventory's Vault entry. It logs in on the first call, once."""

    def __init__(self, vault: Vault, environ: Mapping[str, str] | None = None, home: Path | None = None) -> None:
        environ = os.environ if environ is None else environ
        self.endpoint: Endpoint = endpoint(vault, environ)
        self._credentials: Credentials = credentials(vault, environ, home)
        self._approle_mount = vault.approle_mount
        # token="" keeps hvac from reading VAULT_TOKEN or ~/.vault-token itself; settings.py decided already.
        self.client = hvac.Client(url=self.endpoint.address, token="", verify=self.endpoint.verify,
                                  namespace=self.endpoint.namespace, timeout=TIMEOUT_S)
        self._logged_in = False
        self._login_failure: SecretsError | None = None

    @property
    def login_source(self) -> str:
        return self._credentials.source

    def _login(self) -> None:
        # A refused login is remembered: asking again for every secret would only repeat the refusal.
        if self._login_failure is not None:
            raise self._login_failure
        creds = self._credentials
        if creds.method == "token":
            assert creds.token is not None
            self.client.token = creds.token.reveal().decode()
        else:
            secret_id = creds.secret_id.reveal().decode() if creds.secret_id else None
            try:
                self._call(f"logging in with AppRole at auth/{self._approle_mount}", self.client.auth.approle.login,
                           role_id=creds.role_id, secret_id=secret_id, mount_point=self._approle_mount, login=True)
            except SecretsError as error:
                self._login_failure = error
                raise
        self._logged_in = True

    def call(self, what: str, func: Callable[..., T], *args: Any, passthrough: tuple[type[Exception], ...] = (),
             **kwargs: Any) -> T:
        """``func(*args, **kwargs)``, logged in; a failure other than ``passthrough`` becomes a SecretsError."""
        if not self._logged_in:
            self._login()
        return self._call(what, func, *args, passthrough=passthrough, **kwargs)

    def _call(self, what: str, func: Callable[..., T], *args: Any, passthrough: tuple[type[Exception], ...] = (),
              login: bool = False, **kwargs: Any) -> T:
        try:
            return func(*args, **kwargs)
        except passthrough:
            raise
        except (requests.RequestException, hvac_errors.VaultError) as error:
            failure = self.explain(error, what, login)
        raise failure

    def explain(self, error: Exception, what: str, login: bool = False) -> SecretsError:
        at = f"Vault at {self.endpoint.address}"
        if isinstance(error, requests.exceptions.SSLError):
            return VaultTlsError(
                f"TLS with {at} failed while {what}: {_tls_reason(error)}. Vault's certificate was checked against "
                f"{self.endpoint.verify_from}; point Vault(ca_cert=...) in the inventory or VAULT_CACERT at the CA "
                "that signed it (and check the address is https:// only if Vault serves TLS)")
        if isinstance(error, requests.RequestException):
            return VaultUnreachable(
                f"cannot reach {at} (address from {self.endpoint.address_from}) while {what}: "
                f"{_connection_reason(error)}. Check the address, that Vault is running, and that this host may "
                "connect to it")
        assert isinstance(error, hvac_errors.VaultError)
        says = _vault_says(error)
        if isinstance(error, hvac_errors.VaultDown) and "sealed" in says.lower():
            return VaultSealed(f"{at} is sealed, so nothing can be read or written ({what}). Unseal it "
                               "(vault operator unseal) and run again")
        if login:
            return VaultAuthError(f"{at} refused the login while {what}: {says}. Check the credentials "
                                  f"({self.login_source}) and the AppRole's name")
        if isinstance(error, (hvac_errors.Forbidden, hvac_errors.Unauthorized)):
            return self._explain_denied(what, says)
        if isinstance(error, hvac_errors.VaultNotInitialized):
            return VaultUnavailable(f"{at} is not initialised ({what}): run vault operator init first")
        status = type(error).__name__
        return VaultUnavailable(f"{at} failed while {what}: {status}: {says}")

    def _explain_denied(self, what: str, says: str) -> SecretsError:
        at = f"Vault at {self.endpoint.address}"
        try:
            info = self.client.auth.token.lookup_self()["data"]
        except (requests.RequestException, hvac_errors.VaultError):
            again = ("Log in again (vault login) or export a fresh VAULT_TOKEN" if self._credentials.method == "token"
                     else "Each run logs in afresh, so run again; if it recurs, raise the AppRole's token_ttl")
            return VaultAuthError(
                f"{at} rejects the token (from {self.login_source}) while {what}: it has expired, been revoked, or "
                f"belongs to another Vault or namespace. {again}")
        policies = ", ".join(info.get("policies") or []) or "none"
        return VaultAuthError(
            f"{at} denies {what} ({says}) to the token from {self.login_source}, whose policies are: {policies}. "
            "Grant it the capability on that API path in a policy, or use a token that has it")
