"""Facts about Slurm's accounting database and MariaDB, read before anything changes so a re-run can do nothing."""

from __future__ import annotations

from pyinfra.api import FactBase


class SacctmgrRows(FactBase):
    """``sacctmgr list <entity>`` as rows of fields; empty when slurmdbd cannot be asked (not installed, not up)."""

    def command(self, entity: str, fields: str) -> str:
        return f"sacctmgr --noheader --parsable2 list {entity} format={fields} 2>/dev/null || true"

    def process(self, output: list[str]) -> list[list[str]]:
        return [line.split("|") for line in output if line.strip()]


class MariadbAccount(FactBase):
    """(the stored password hash of user@localhost or None, whether the database exists); None without MariaDB."""

    def command(self, user: str, database: str) -> str:
        return ("command -v mysql >/dev/null && mysql --batch --skip-column-names -e "
                f"\"SELECT CONCAT('user:', authentication_string) FROM mysql.user WHERE User='{user}' AND "
                f"Host='localhost'; SELECT CONCAT('db:', SCHEMA_NAME) FROM information_schema.SCHEMATA WHERE "
                f"SCHEMA_NAME='{database}'\" 2>/dev/null || true")

    def process(self, output: list[str]) -> tuple[str | None, bool]:
        stored = next((line[len("user:"):] for line in output if line.startswith("user:")), None)
        return stored, any(line.startswith("db:") for line in output)
