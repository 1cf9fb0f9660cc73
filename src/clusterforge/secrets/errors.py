"""What can go wrong between the deploy host and Vault, each said so that the admin knows what to do.

Every message names the Vault address or path concerned and never contains a secret value. Raised inside a
deploy, they reach pyinfra through clusterforge.errors.for_pyinfra, which prints them as one line.
"""

from __future__ import annotations

from ..errors import ClusterforgeError


class SecretsError(ClusterforgeError):
    """Any problem getting, checking or storing a cluster secret."""


class VaultConfigError(SecretsError):
    """The deploy host is not set up to reach or log in to Vault: no address, no token, unreadable files."""


class VaultUnreachable(SecretsError):
    """No HTTP answer from Vault: refused, timed out, name not resolved."""


class VaultTlsError(SecretsError):
    """The TLS handshake with Vault failed, nearly always an untrusted certificate."""


class VaultSealed(SecretsError):
    """Vault answers but is sealed."""


class VaultUnavailable(SecretsError):
    """Vault answered with a server-side error other than sealed (uninitialised, standby, rate limit, 5xx)."""


class VaultAuthError(SecretsError):
    """Login failed, or the token is expired, revoked or lacks the policy for a path (HTTP 401/403)."""


class SecretMissing(SecretsError):
    """The secret, or the field in it, does not exist."""


class SecretMalformed(SecretsError):
    """The secret exists but its value is unusable: not base64, too short, empty, or not fit for slurmdbd.conf."""


class SecretConflict(SecretsError):
    """A write lost a race: the secret changed between reading and writing (KV v2 check-and-set)."""
