"""The SQL that gives slurmdbd its database and MariaDB user, the user's password set by the hash MariaDB keeps."""

from __future__ import annotations

from ..model import ValidCluster
from .text import fill

ACCOUNT_HOST = "localhost"  # slurmdbd runs on the database host and connects through the local socket


def render(valid: ValidCluster, password_hash: str) -> str:
    """``password_hash``: mysql_native_password's, never the password; the text carries it, so the role holds the
    text as a secret. No header: the file is on the host only until mysql has read it."""
    acct = valid.accounting
    return fill("mariadb-slurmdbd.sql.j2", database=acct.database, user=acct.user, host=ACCOUNT_HOST,
                password_hash=password_hash)
