"""slurmdbd.conf, without the database password: the deploy adds it from the secret store."""

from __future__ import annotations

from ..model import ValidCluster
from ..versions import v
from .slurm_conf import setting
from .text import fill, header


def render(valid: ValidCluster) -> str:
    spec = valid.spec
    assert spec.database is not None
    vault = spec.vault
    where = (f"Vault {vault.kv_mount}/{vault.db_password.path.format(cluster=spec.name)} "
             f"field {vault.db_password.field}") if vault else "the secret store"
    settings = [
        ("AuthType", f"auth/{spec.auth}"),
        ("DbdHost", spec.database.name),
        # slurmctld finds slurmdbd at AccountingStoragePort; one setting drives both files.
        ("DbdPort", setting(valid, "AccountingStoragePort")),
        ("SlurmUser", "slurm"),
        ("LogFile", "/var/log/slurm/slurmdbd.log"),
        # From 23.11 slurmdbd runs as the slurm user with RuntimeDirectory=slurmdbd.
        ("PidFile", "/run/slurmdbd/slurmdbd.pid" if valid.version >= v("23.11") else "/run/slurmdbd.pid"),
        ("StorageType", "accounting_storage/mysql"),
        ("StorageHost", "localhost"),
        ("StoragePort", "3306"),
        ("StorageUser", spec.accounting.user),
        ("StorageLoc", spec.accounting.database),
    ]
    return fill("keyvalue.conf.j2", header=header(valid, f"StoragePass is added at deploy time from {where}."),
                settings=settings)


def with_storage_pass(text: str, password: str) -> str:
    """The file as the database host gets it; only ever held in memory on the way to the host."""
    return f"{text}StoragePass={password}\n"
