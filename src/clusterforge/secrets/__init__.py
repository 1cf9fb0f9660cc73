"""The cluster's secrets (munge key, slurmdbd database password, slurm.key, the JWT key), read from Vault or OpenBao.

    from clusterforge.secrets import ClusterSecrets
    secrets = ClusterSecrets(valid)  # a deploy run holds one: DeployRun.secrets
    secrets.prefetch()               # every secret read and checked before any host changes
    key = secrets.munge_key()        # a Secret: masked repr/str; key.reveal() gives the bytes

Each secret is read once per ClusterSecrets (one deploy run), whatever the number of hosts.
"""

from .cluster import DB_PASSWORD, JWT_KEY, KINDS, MUNGE_KEY, SLURM_KEY, ClusterSecrets, Kind
from .errors import (
    SecretConflict,
    SecretMalformed,
    SecretMissing,
    SecretsError,
    VaultAuthError,
    VaultConfigError,
    VaultSealed,
    VaultTlsError,
    VaultUnavailable,
    VaultUnreachable,
)
from .secret import Secret

__all__ = [
    "DB_PASSWORD", "JWT_KEY", "KINDS", "MUNGE_KEY", "SLURM_KEY", "ClusterSecrets", "Kind", "Secret", "SecretConflict",
    "SecretMalformed", "SecretMissing", "SecretsError", "VaultAuthError", "VaultConfigError", "VaultSealed",
    "VaultTlsError", "VaultUnavailable", "VaultUnreachable",
]
