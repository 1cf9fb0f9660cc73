"""Where in HashiCorp Vault (or OpenBao) the cluster's secrets live."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Entry


class SecretRef(Entry):
    path: str = Field(description="path under the KV mount, e.g. 'slurm/prod/munge'")
    field: str


class Vault(Entry):
    """``address`` and the auth settings can also come from VAULT_ADDR/VAULT_TOKEN etc., as with the vault CLI.

    Paths may contain ``{cluster}``, replaced by the cluster's name.
    """

    address: str | None = None
    auth: Literal["token", "approle"] = "token"
    kv_mount: str = "secret"
    kv_version: Literal[1, 2] = 2
    munge_key: SecretRef = SecretRef(path="slurm/{cluster}/munge", field="key")
    db_password: SecretRef = SecretRef(path="slurm/{cluster}/slurmdbd", field="password")
    slurm_key: SecretRef = SecretRef(path="slurm/{cluster}/slurm-key", field="key")
