"""slurmdbd.conf, without the database password: the deploy adds it from the secret store."""

from __future__ import annotations

from ..model import ValidCluster
from ..model.settings import JWT_KEY, SLURM_LOG_DIR, SLURMDBD_PORT
from ..versions import DAEMONS_AS_SLURM
from .text import fill, header


def render(valid: ValidCluster) -> str:
    vault = valid.vault
    where = (f"Vault {vault.kv_mount}/{vault.db_password.path.format(cluster=valid.name)} "
             f"field {vault.db_password.field}") if vault else "the secret store"
    settings = [
        ("AuthType", f"auth/{valid.auth}"),
        # With Rest, slurmdbd accepts the callers' tokens that slurmrestd hands on; unlike slurmctld it has no
        # default key path ("No jwt_key set" is fatal).
        *((("AuthAltTypes", "auth/jwt"), ("AuthAltParameters", f"jwt_key={JWT_KEY}")) if valid.rest else ()),
        ("DbdHost", valid.database.name),
        # slurmctld finds slurmdbd at AccountingStoragePort; one setting drives both files.
        ("DbdPort", valid.slurm_conf.get("AccountingStoragePort", str(SLURMDBD_PORT))),
        ("SlurmUser", "slurm"),
        ("LogFile", f"{SLURM_LOG_DIR}/slurmdbd.log"),
        # From 23.11 slurmdbd runs as the slurm user with RuntimeDirectory=slurmdbd.
        ("PidFile", "/run/slurmdbd/slurmdbd.pid" if valid.version >= DAEMONS_AS_SLURM else "/run/slurmdbd.pid"),
        ("StorageType", "accounting_storage/mysql"),
        ("StorageHost", "localhost"),
        ("StoragePort", "3306"),
        ("StorageUser", valid.accounting.user),
        ("StorageLoc", valid.accounting.database),
    ]
    return fill("keyvalue.conf.j2", header=header(valid, f"StoragePass is added at deploy time from {where}."),
                settings=settings)


def with_storage_pass(text: str, password: str) -> str:
    """The file as the database host gets it; only ever held in memory on the way to the host."""
    return f"{text}StoragePass={password}\n"
