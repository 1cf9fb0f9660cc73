"""mariadb: the server slurmdbd stores accounting in, tuned from the inventory, with its database and user.

The user's password comes from Vault. MariaDB keeps only its mysql_native_password hash, so the role compares
hashes to know whether the password is already set, and sets it by hash: the plain password is never in a command
line, an operation name or a file on the host.
"""

from __future__ import annotations

import hashlib
from io import StringIO

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.operations import files, server, systemd

from ..model import ValidCluster
from ..render import mariadb_cnf
from ..secrets import Secret, secrets_for
from .facts import MariadbAccount
from .packages import install
from .upload import SecretFile

CNF = "/etc/mysql/mariadb.conf.d/60-clusterforge-slurmdbd.cnf"
SQL = "/root/.clusterforge-accounting.sql"


def native_password_hash(password: Secret) -> str:
    """What MariaDB stores for mysql_native_password: '*' and the upper-case hex of SHA1(SHA1(password))."""
    return "*" + hashlib.sha1(hashlib.sha1(password.reveal()).digest()).hexdigest().upper()


def _sql(valid: ValidCluster, password_hash: str) -> str:
    acct = valid.accounting
    return (f"CREATE DATABASE IF NOT EXISTS `{acct.database}`;\n"
            f"CREATE USER IF NOT EXISTS '{acct.user}'@'localhost';\n"
            f"ALTER USER '{acct.user}'@'localhost' IDENTIFIED BY PASSWORD '{password_hash}';\n"
            f"GRANT ALL ON `{acct.database}`.* TO '{acct.user}'@'localhost';\n")


@deploy("mariadb")
def mariadb() -> None:
    valid: ValidCluster = host.data.clusterforge
    install("mariadb", ["mariadb-server"])
    tuning = files.put(name=f"{CNF} (buffer pool from the host's memory)", src=StringIO(mariadb_cnf.render(valid)),
                       dest=CNF, mode="0644")
    systemd.service(name="mariadb is running and enabled", service="mariadb", running=True, enabled=True)
    systemd.service(name="restart mariadb for its new settings", service="mariadb", restarted=True,
                    _if=tuning.did_change)
    acct = valid.accounting
    wanted = native_password_hash(secrets_for(valid).db_password())
    stored, has_database = host.get_fact(MariadbAccount, user=acct.user, database=acct.database) or (None, False)
    if stored != wanted or not has_database:
        # The hash is not the password, but it stays out of the output too: uploaded as a file, read by mysql,
        # removed.
        sql = Secret(_sql(valid, wanted).encode(), f"<SQL for {acct.user}@localhost>")
        files.put(name=f"SQL for database {acct.database} and user {acct.user}", src=SecretFile(sql), dest=SQL,
                  mode="0600")
        server.shell(name=f"database {acct.database} and user {acct.user} with the password from Vault",
                     commands=[f"mysql < {SQL}; status=$?; rm -f {SQL}; exit $status"])
