"""The secrets a cluster needs, where each lives in Vault, and reading each once.

A pyinfra run executes the deploy file once per host, in parallel greenlets; the run holds one ClusterSecrets
(engine/run.py), whose lock makes the first host read and the others wait for its answer, so each secret costs one
Vault read per run however many hosts there are. A failed read is remembered too, so a sealed Vault is asked once,
not once per host.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import for_pyinfra
from ..model import ValidCluster, Vault
from ..model.vault import SecretRef
from .errors import SecretMissing, SecretsError, VaultConfigError
from .kv import KvStore, Stored
from .secret import Secret
from .session import VaultSession
from .values import (
    check_bind_password,
    check_password,
    decode_jwt_key,
    decode_key,
    new_jwt_key,
    new_key,
    new_password,
    no_new_bind_password,
)


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    label: str
    attr: str
    check: Callable[[Any, str, str, str], Secret]
    generate: Callable[[str], tuple[Secret, str]]
    # Whether its sha256 may be shown: a key is random and long, and its digest is what `sha256sum` prints on a host
    # that has it; a password may have been chosen by a person, and a digest in a CI log would let it be guessed.
    fingerprinted: bool = True
    # Whether `clusterforge secrets init` makes it where it is missing: not a password someone else's system owns.
    made_here: bool = True

    def fingerprint(self, secret: Secret) -> str | None:
        return secret.fingerprint() if self.fingerprinted else None


MUNGE_KEY = Kind("munge-key", "munge key", "munge_key", decode_key, new_key)
DB_PASSWORD = Kind("db-password", "slurmdbd database password", "db_password", check_password, new_password,
                   fingerprinted=False)
SLURM_KEY = Kind("slurm-key", "Slurm auth key (slurm.key)", "slurm_key", decode_key, new_key)
JWT_KEY = Kind("jwt-key", "JWT key (jwt_hs256.key)", "jwt_key", decode_jwt_key, new_jwt_key)
KINDS = {kind.name: kind for kind in (MUNGE_KEY, DB_PASSWORD, SLURM_KEY, JWT_KEY)}
# The site directory's password for Directory(bind_dn): read and checked like the others, never made or rotated here
# (the account is the directory's), so not among the KINDS `clusterforge secrets rotate` offers.
LDAP_BIND_PASSWORD = Kind("ldap-bind-password", "LDAP bind password", "ldap_bind_password", check_bind_password,
                          no_new_bind_password, fingerprinted=False, made_here=False)


def kinds_for(valid: ValidCluster) -> tuple[Kind, ...]:
    """The authentication key the cluster uses (munge's, or slurm.key for auth/slurm, which needs no munged), the
    database password, with Rest the key slurmctld and slurmdbd check JSON Web Tokens with, and with a directory
    SSSD binds to as someone, that one's password."""
    directory = valid.identity.directory if valid.identity is not None else None
    return (SLURM_KEY if valid.auth == "slurm" else MUNGE_KEY, DB_PASSWORD, *((JWT_KEY,) if valid.rest else ()),
            *((LDAP_BIND_PASSWORD,) if directory is not None and directory.bind_dn is not None else ()))


@dataclass(frozen=True, slots=True)
class Location:
    kind: Kind
    path: str
    field: str
    name: str

    def __str__(self) -> str:
        return f"{self.name} field {self.field!r}"


class ClusterSecrets:
    """The secrets of one cluster, read from its Vault on first use and then kept in memory."""

    def __init__(self, valid: ValidCluster, environ: Mapping[str, str] | None = None,
                 home: Path | None = None) -> None:
        if valid.vault is None:
            raise VaultConfigError(f"cluster {valid.name} has no Vault: add vault=Vault(address=...) to its "
                                   "Cluster(...) in the inventory")
        self.valid = valid
        self.vault: Vault = valid.vault
        self.kinds = kinds_for(valid)
        self._environ = environ
        self._home = home
        self._store: KvStore | None = None
        self._values: dict[str, Secret | SecretsError] = {}
        self._lock = threading.Lock()

    @property
    def store(self) -> KvStore:
        if self._store is None:
            session = VaultSession(self.vault, self._environ, self._home)
            self._store = KvStore(session, self.vault.kv_mount, self.vault.kv_version)
        return self._store

    def kind(self, name: str) -> Kind:
        kind = KINDS.get(name)
        if kind is None or kind not in self.kinds:
            known = ", ".join(k.name for k in self.kinds)
            raise SecretsError(f"cluster {self.valid.name} has no secret {name!r}; its secrets are: {known}")
        return kind

    def location(self, kind: Kind) -> Location:
        ref: SecretRef = getattr(self.vault, kind.attr)
        path = ref.path.format(cluster=self.valid.name)
        return Location(kind, path, ref.field, f"{self.vault.kv_mount}/{path}")

    def rotate_hint(self, kind: Kind) -> str:
        return f"replace it with: clusterforge secrets rotate INVENTORY {kind.name}"

    def missing(self, kind: Kind, stored: Stored) -> SecretMissing:
        where = self.location(kind)
        create = ("Create it with clusterforge secrets init INVENTORY" if kind.made_here else
                  "Store it there (clusterforge does not make it: it is the site directory's)")
        if stored.fields is not None:
            return SecretMissing(f"no {kind.label} in Vault: {where.name} has no field {where.field!r} (its fields: "
                                 f"{', '.join(stored.fields.names()) or 'none'}). {create}, or fix the field in the "
                                 "inventory's Vault(...)")
        hint = ""
        actual = self.store.mount_kv_version()
        if actual is not None and actual != self.vault.kv_version:
            hint = (f"; the mount {self.vault.kv_mount!r} is KV v{actual} but the inventory says "
                    f"kv_version={self.vault.kv_version}")
        return SecretMissing(f"no {kind.label} in Vault: nothing at {where.name} (KV v{self.vault.kv_version} mount "
                             f"{self.vault.kv_mount!r}){hint}. {create}, or fix the path in the inventory's "
                             "Vault(...)")

    def read(self, kind: Kind, version: int | None = None) -> tuple[Secret, Stored]:
        """The secret checked, and what was stored with it; uncached (the CLI commands use this)."""
        where = self.location(kind)
        stored = self.store.read(where.path, version)
        if stored.fields is None or where.field not in stored.fields:
            raise self.missing(kind, stored)
        secret = kind.check(stored.fields.value(where.field), str(where), kind.label, self.rotate_hint(kind))
        return secret, stored

    def get(self, kind: Kind) -> Secret:
        """The secret, read from Vault the first time and from memory after that."""
        with self._lock:
            value = self._values.get(kind.name)
            if value is None:
                try:
                    value = self.read(kind)[0]
                except SecretsError as error:
                    value = error
                self._values[kind.name] = value
        if isinstance(value, SecretsError):
            raise for_pyinfra(value)
        return value

    def munge_key(self) -> Secret:
        return self.get(self.kind(MUNGE_KEY.name))

    def db_password(self) -> Secret:
        return self.get(DB_PASSWORD)

    def slurm_key(self) -> Secret:
        return self.get(self.kind(SLURM_KEY.name))

    def jwt_key(self) -> Secret:
        return self.get(self.kind(JWT_KEY.name))

    def ldap_bind_password(self) -> Secret:
        return self.get(LDAP_BIND_PASSWORD)

    def bmc_credentials(self, path: str) -> Secret:
        """The BMCs' login at the Vault secret ``path`` (Bmc(credentials=...), ``{cluster}`` filled in), the fields
        username and password, as the JSON the repair loop reads from its root-only file; read once a run. Never
        made here (the BMC's account is the hardware's), and its values never in a message."""
        where = path.format(cluster=self.valid.name)
        name = f"{self.vault.kv_mount}/{where}"
        with self._lock:
            value = self._values.get(f"bmc:{where}")
            if value is None:
                try:
                    value = self._bmc(where, name)
                except SecretsError as error:
                    value = error
                self._values[f"bmc:{where}"] = value
        if isinstance(value, SecretsError):
            raise for_pyinfra(value)
        return value

    def _bmc(self, path: str, name: str) -> Secret:
        stored = self.store.read(path)
        if stored.fields is None:
            raise SecretMissing(f"no BMC credentials in Vault: nothing at {name}. Store the BMCs' username and "
                                "password there (clusterforge does not make them: the account is the BMCs'), or "
                                "fix Bmc(credentials=...) in the inventory")
        found = {}
        for field in ("username", "password"):
            value = stored.fields.value(field) if field in stored.fields else None
            if not isinstance(value, str) or not value:
                raise SecretMissing(f"the BMC credentials at {name} need a non-empty text field {field!r} (its "
                                    f"fields: {', '.join(stored.fields.names()) or 'none'})")
            found[field] = value
        return Secret(json.dumps(found, sort_keys=True).encode("utf-8"), f"BMC credentials at {name}")

    def bmc_paths(self) -> tuple[str, ...]:
        """The Vault secrets of the BMCs the repair loop power cycles through, each once."""
        repaired = self.valid.repair
        return tuple(sorted({b.spec.credentials for b in repaired.cycled.values()})) if repaired is not None else ()

    def prefetch(self) -> None:
        """Read and check every secret the cluster needs; call it at the top of a deploy, before any host changes."""
        for kind in self.kinds:
            self.get(kind)
        for path in self.bmc_paths():
            self.bmc_credentials(path)

    def __repr__(self) -> str:
        return f"<ClusterSecrets of {self.valid.name}: {', '.join(sorted(self._values)) or 'none'} read>"
