"""mariadb: the server slurmdbd stores accounting in, tuned from the inventory, with its database and user.

The user's password comes from Vault. MariaDB keeps only its mysql_native_password hash, so the role compares
hashes to know whether the password is already set, and sets it by hash: the plain password is never in a command
line, an operation name or a file on the host.
"""

from __future__ import annotations

import hashlib

from ..model import ValidCluster
from ..render import mariadb_cnf, mariadb_sql
from ..secrets import Secret
from ..engine import ops
from ..engine.facts import accounting_state
from ..engine.footprint import Footprint
from ..engine.run import Here, step

SQL = "/root/.clusterforge-accounting.sql"
MARIADB_CNF = "/etc/mysql/mariadb.conf.d/60-clusterforge-slurmdbd.cnf"


def footprint(valid: ValidCluster, groups: tuple[str, ...]) -> Footprint:
    return Footprint(paths=(MARIADB_CNF,), shown=(MARIADB_CNF,),
                     units=("mariadb.service",) if "database" in groups else ())


def native_password_hash(password: Secret) -> str:
    """What MariaDB stores for mysql_native_password: '*' and the upper-case hex of SHA1(SHA1(password))."""
    return "*" + hashlib.sha1(hashlib.sha1(password.reveal()).digest()).hexdigest().upper()


@step("mariadb", footprint=footprint, on=("database",))
def mariadb(here: Here) -> None:
    valid = here.valid
    tuning = mariadb_cnf.render(valid)
    cnf = ops.file(here, name=f"{MARIADB_CNF} (buffer pool from the host's memory)", path=MARIADB_CNF,
                   content=tuning)
    ops.service(here, name="mariadb runs with its settings", unit="mariadb", inputs=(cnf,),
                why="its settings changed since it last started")
    acct = valid.accounting
    wanted = native_password_hash(here.run.secrets.db_password())
    found = accounting_state(here)
    if found.password_hash != wanted or not found.database:
        # The hash is not the password, but it stays out of the output too: uploaded as a file, read by mysql,
        # removed.
        sql = Secret(mariadb_sql.render(valid, wanted).encode(), f"<SQL for {acct.user}@{mariadb_sql.ACCOUNT_HOST}>")
        ops.file(here, name=f"SQL for database {acct.database} and user {acct.user}", path=SQL, content=sql,
                 mode="0600")
        ops.commands(here, name=f"database {acct.database} and user {acct.user} with the password from Vault",
                     commands=[f"mysql < {SQL}; status=$?; rm -f {SQL}; exit $status"], otherwise="")
