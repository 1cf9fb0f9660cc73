"""What the accounting database holds, read in one remote command on the hosts that ask (the database host and the
controller), before anything changes, so a re-run can do nothing."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import gevent
from pyinfra.api import FactBase
from pyinfra.context import ctx_host

from ..accounts import controller, show_commands
from ..accounts.controller import Held
from ..errors import DeployError, for_pyinfra
from ..slurm import nodes
from .run import DeployRun, Here

if TYPE_CHECKING:
    from pyinfra.api import Host as PyinfraHost


@dataclass
class Accounting:
    password_hash: str | None = None  # what MariaDB stores for the slurmdbd user, None without that user or MariaDB
    database: bool = False            # the accounting database exists
    clusters: set[str] = field(default_factory=set)
    # What accounts.read_database reads, by its parameter name: the QOS, associations, accounts and users listed.
    listings: dict[str, str] = field(default_factory=dict)
    late: list[str] = field(default_factory=list)  # the queries that did not answer in time
    # On the controller: what slurmctld holds of the inventory's users, and which of them the controller resolves.
    held: dict[str, Held] = field(default_factory=dict)
    unix: set[str] = field(default_factory=set)
    # On the controller: the nodes in a drain state, with Slurm's state and reason (drains.py reads whose it is).
    drained: list[nodes.Node] = field(default_factory=list)

    @property
    def qos(self) -> set[str]:
        """The QOS slurmdbd knows, by name."""
        return {line.split("|", 1)[0] for line in self.listings.get("qos", "").splitlines() if line}


LISTING_TIMEOUT_S = 60
_DRAINED = f"{{ {nodes.drained_command()} | sed 's/^/@drained /'; true; }}"


class AccountingState(FactBase[Accounting]):
    """MariaDB's slurmdbd user and database, and the clusters and QOS slurmdbd knows; on the controller also what
    slurmctld holds of the inventory's users and the nodes in a drain state; empty parts where MariaDB, slurmdbd or
    slurmctld cannot be asked (not installed, not running yet)."""

    @staticmethod
    def default() -> Accounting:
        return Accounting()

    def command(self, user: str, database: str, cluster: str, users: tuple[str, ...] = (),
                drained: bool = False) -> str:
        queries = {"cluster": ("sacctmgr", "--noheader", "--parsable2", "list", "cluster", "format=cluster"),
                   **{f"list-{kind}": args for kind, args in show_commands(cluster).items()}}
        # Each sacctmgr call is a round trip to slurmdbd: all at once, their outputs printed in a fixed order. A
        # slurmdbd that does not answer (hung, or its database) is not one that is not running yet: it is named.
        run = "".join(f"{{ timeout -k 5 {LISTING_TIMEOUT_S} {shlex.join(args)} > \"$t/{tag}\" 2>/dev/null; "
                      f"[ $? -lt 124 ] || touch \"$t/{tag}.late\"; }} & " for tag, args in queries.items())
        show = "".join(f"sed 's/^/@{tag} /' \"$t/{tag}\"; [ ! -f \"$t/{tag}.late\" ] || echo '@late {tag}'; "
                       for tag in queries)
        return (f"if command -v mysql >/dev/null; then timeout -k 5 {LISTING_TIMEOUT_S} mysql --batch "
                "--skip-column-names -e \"SELECT CONCAT('@user ', authentication_string) FROM mysql.user WHERE "
                f"User='{user}' AND Host='localhost'; SELECT CONCAT('@db ', SCHEMA_NAME) FROM "
                f"information_schema.SCHEMATA WHERE SCHEMA_NAME='{database}'\" 2>/dev/null; "
                "[ $? -lt 124 ] || echo '@late mysql'; fi; "
                f"t=$(mktemp -d); if command -v sacctmgr >/dev/null; then {run}wait; {show}fi; rm -rf \"$t\"; "
                f"{controller.read_command(users) if users else 'true'}; "
                f"{_DRAINED if drained else 'true'}")

    def process(self, output: list[str]) -> Accounting:
        found = Accounting()
        found.held, found.unix = controller.parse(output)
        found.drained = nodes.parse_sinfo("\n".join(line.removeprefix("@drained ") for line in output
                                                    if line.startswith("@drained ")))
        for line in output:
            kind, _, rest = line.partition(" ")
            if kind == "@user":
                found.password_hash = rest
            elif kind == "@db":
                found.database = True
            elif kind == "@cluster" and rest:
                found.clusters.add(rest.split("|")[0])
            elif kind == "@late":
                found.late.append(rest)
            elif kind.startswith("@list-"):
                found.listings[kind[6:]] = found.listings.get(kind[6:], "") + rest + "\n"
        return found


def prefetch_accounting(run: DeployRun) -> None:
    """Start reading the accounting database on the hosts that will ask (the database host and the controller) at
    once, beside every host's state: sacctmgr waits on slurmdbd, and a read begun only when a step asks would add
    its whole wait to every run, a no-op included."""

    def read_ahead(each: PyinfraHost) -> None:
        with ctx_host.use(each):
            try:
                _read_accounting(run, each)
            except Exception:  # noqa: BLE001 - not kept: the step that asks reads again, and reports the failure there
                pass

    def spawn() -> None:
        for name in dict.fromkeys((run.valid.database.name, run.valid.controller.name)):
            each = run.host_of(name)
            if each is not None:  # not in pyinfra's fact pool: it has a slot per host, which the host states take
                gevent.spawn(read_ahead, each)

    run.once("accounting prefetch", spawn)


def _read_accounting(run: DeployRun, each: PyinfraHost) -> Accounting:
    valid = run.valid
    acct = valid.accounting

    def read() -> Accounting:
        # Only the controller's slurmctld holds users; the database host may be another machine.
        on_controller = each is run.host_of(valid.controller.name)
        users = tuple(controller.declared_users(valid)) if on_controller else ()
        return each.get_fact(AccountingState, user=acct.user, database=acct.database, cluster=valid.name, users=users,
                             drained=on_controller)

    return run.once(("accounting", each.name), read)


def accounting_state(here: Here) -> Accounting:
    """This host's view of the accounting database before the run, read once however many steps ask."""
    found = _read_accounting(here.run, here.host)
    if found.late:
        raise for_pyinfra(DeployError(
            f"{here.name}: {', '.join(found.late)} did not answer within {LISTING_TIMEOUT_S} s (sacctmgr asks "
            "slurmdbd, which asks MariaDB): is slurmdbd or MariaDB hung? Nothing was changed on any host"))
    return found
