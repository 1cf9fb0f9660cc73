"""What the accounting database holds, read in one remote command on the hosts that ask (the database host and the
controller), before anything changes, so a re-run can do nothing."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from pyinfra import host
from pyinfra.api import FactBase

from ..accounts import show_commands
from .run import once_per_run


@dataclass
class Accounting:
    password_hash: str | None = None  # what MariaDB stores for the slurmdbd user, None without that user or MariaDB
    database: bool = False            # the accounting database exists
    clusters: set[str] = field(default_factory=set)
    # What accounts.read_database reads, by its parameter name: the QOS, associations, accounts and users listed.
    listings: dict[str, str] = field(default_factory=dict)

    @property
    def qos(self) -> set[str]:
        """The QOS slurmdbd knows, by name."""
        return {line.split("|", 1)[0] for line in self.listings.get("qos", "").splitlines() if line}


class AccountingState(FactBase[Accounting]):
    """MariaDB's slurmdbd user and database, and the clusters and QOS slurmdbd knows; empty parts where MariaDB or
    slurmdbd cannot be asked (not installed, not running yet)."""

    @staticmethod
    def default() -> Accounting:
        return Accounting()

    def command(self, user: str, database: str, cluster: str) -> str:
        queries = {"cluster": ("sacctmgr", "--noheader", "--parsable2", "list", "cluster", "format=cluster"),
                   **{f"list-{kind}": args for kind, args in show_commands(cluster).items()}}
        # Each sacctmgr call is a round trip to slurmdbd: all at once, their outputs printed in a fixed order.
        run = "".join(f"{shlex.join(args)} > \"$t/{tag}\" 2>/dev/null & " for tag, args in queries.items())
        show = "".join(f"sed 's/^/@{tag} /' \"$t/{tag}\"; " for tag in queries)
        return ("command -v mysql >/dev/null && mysql --batch --skip-column-names -e "
                f"\"SELECT CONCAT('@user ', authentication_string) FROM mysql.user WHERE User='{user}' AND "
                f"Host='localhost'; SELECT CONCAT('@db ', SCHEMA_NAME) FROM information_schema.SCHEMATA WHERE "
                f"SCHEMA_NAME='{database}'\" 2>/dev/null; "
                f"t=$(mktemp -d); if command -v sacctmgr >/dev/null; then {run}wait; {show}fi; rm -rf \"$t\"; true")

    def process(self, output: list[str]) -> Accounting:
        found = Accounting()
        for line in output:
            kind, _, rest = line.partition(" ")
            if kind == "@user":
                found.password_hash = rest
            elif kind == "@db":
                found.database = True
            elif kind == "@cluster" and rest:
                found.clusters.add(rest.split("|")[0])
            elif kind.startswith("@list-"):
                found.listings[kind[6:]] = found.listings.get(kind[6:], "") + rest + "\n"
        return found


def accounting_state() -> Accounting:
    """This host's view of the accounting database before the run, read once however many steps ask."""
    valid = host.data.clusterforge
    acct = valid.accounting
    return once_per_run(("accounting", host.name), lambda: host.get_fact(
        AccountingState, user=acct.user, database=acct.database, cluster=valid.name))
