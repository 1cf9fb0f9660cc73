"""Where in HashiCorp Vault (or OpenBao) the cluster's secrets live, and how the deploy host logs in to read them."""

from __future__ import annotations

import string
from typing import Literal

from pydantic import Field, field_validator

from .base import Entry


def secret_path(path: str) -> str:
    """A secret's path under the KV mount as the inventory may write it, or ValueError saying what is wrong."""
    placeholders = {name for _, name, _, _ in string.Formatter().parse(path) if name is not None}
    if placeholders - {"cluster"}:
        raise ValueError(f"{path!r}: the only placeholder a path may hold is {{cluster}}")
    if not path.strip("/"):
        raise ValueError("a secret path must not be empty")
    if path != path.strip("/"):
        raise ValueError(f"{path!r}: write the path without leading or trailing '/'")
    return path


class SecretRef(Entry):
    path: str = Field(description="under the KV mount, e.g. 'slurm/{cluster}/munge'; {cluster} is the cluster's name")
    field: str = Field(description="the key inside the secret that holds the value")

    @field_validator("path")
    @classmethod
    def _path(cls, path: str) -> str:
        return secret_path(path)

    @field_validator("field")
    @classmethod
    def _field(cls, field: str) -> str:
        if not field:
            raise ValueError("a secret field must not be empty")
        return field


class Vault(Entry):
    """Where the cluster's secrets are. Settings left as None come from the deploy host's environment.

    Precedence: what describes the Vault (address, namespace, ca_cert) is configuration, so a value written here
    wins over VAULT_ADDR, VAULT_NAMESPACE and VAULT_CACERT, which only fill what is left as None. Who logs in is the
    operator's business: VAULT_TOKEN (else ~/.vault-token), or the AppRole ids from the environment variables named
    below, else from the files named below. VAULT_SKIP_VERIFY can only come from the environment, so that turning
    TLS checks off is never committed with an inventory.
    """

    address: str | None = Field(default=None, description="e.g. 'https://vault.example.org:8200'; else VAULT_ADDR")
    allow_plain_http: bool = Field(default=False, description="take an http:// address: the token and every secret "
                                                              "cross the network in clear, so only for a Vault on the "
                                                              "deploy host's own loopback or a test; False: refused")
    namespace: str | None = Field(default=None, description="Vault Enterprise/OpenBao namespace; else VAULT_NAMESPACE")
    ca_cert: str | None = Field(default=None, description="PEM file of the CA that signed Vault's certificate; "
                                                          "else VAULT_CACERT, VAULT_CAPATH, the system's trust store")
    auth: Literal["token", "approle"] = Field(
        default="token", description="how the deploy host logs in: 'token' (VAULT_TOKEN, else ~/.vault-token), or "
                                     "'approle' with the role_id and secret_id named below")
    approle_mount: str = Field(default="approle", description="where the AppRole auth method is mounted: the login "
                                                              "goes to auth/<approle_mount>")
    role_id_env: str = Field(default="VAULT_ROLE_ID", description="environment variable holding the AppRole role_id")
    secret_id_env: str = Field(default="VAULT_SECRET_ID", description="environment variable holding the secret_id")
    role_id_file: str | None = Field(default=None, description="file holding the role_id, if the variable is unset")
    secret_id_file: str | None = Field(default=None, description="file holding the secret_id, if the variable is unset")
    kv_mount: str = Field(default="secret", description="where the KV secrets engine holding the secrets is mounted")
    kv_version: Literal[1, 2] = Field(default=2, description="the version of that KV engine, as its mount has it")
    munge_key: SecretRef = Field(default=SecretRef(path="slurm/{cluster}/munge", field="key"),
                                 description="the munge key, with auth='munge'")
    db_password: SecretRef = Field(default=SecretRef(path="slurm/{cluster}/slurmdbd", field="password"),
                                   description="slurmdbd's MariaDB password, StoragePass in slurmdbd.conf")
    slurm_key: SecretRef = Field(default=SecretRef(path="slurm/{cluster}/slurm-key", field="key"),
                                 description="slurm.key, with auth='slurm'")
    jwt_key: SecretRef = Field(default=SecretRef(path="slurm/{cluster}/jwt-key", field="key"),
                               description="the HS256 key slurmctld and slurmdbd check JSON Web Tokens with "
                                           "(jwt_hs256.key), with Rest")
    ldap_bind_password: SecretRef = Field(default=SecretRef(path="slurm/{cluster}/ldap", field="bind_password"),
                                          description="the password of Directory(bind_dn), which SSSD binds to the "
                                                      "site directory with; the directory's own, stored here by its "
                                                      "admins (clusterforge never makes it)")

    @field_validator("kv_mount", "approle_mount")
    @classmethod
    def _mount(cls, mount: str) -> str:
        if not mount.strip("/"):
            raise ValueError("a mount path must not be empty")
        return mount.strip("/")
