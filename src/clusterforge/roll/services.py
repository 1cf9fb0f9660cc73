"""The service hosts in a roll with ``--services``, in Slurm's order: the database host (slurmdbd) after a dump of the
accounting database, then the controller(s), before any compute node; the login hosts after the last compute batch
(slurm-24-11-6-1 doc/html/upgrades.shtml, "Upgrade order": slurmdbd, slurmctld, slurmd, then the commands). Pure:
which hosts, in which order, and the dump's command.

A host with several roles (the database on the controller) is taken once, at its first role's place; a host that is
also a compute node is left to the compute batches, which drain it first.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..model import ValidCluster

DUMP_DIR = "/var/backups/clusterforge"


@dataclass(frozen=True, slots=True)
class ServiceStep:
    host: str
    roles: tuple[str, ...]   # what Slurm runs there: "slurmdbd", "slurmctld", "login" (Slurm's commands)
    dump: str | None         # the accounting database dumped before the deploy there

    @property
    def head(self) -> str:
        return f"{self.host} ({', '.join(self.roles)})"


@dataclass(frozen=True, slots=True)
class ServiceOrder:
    before: tuple[ServiceStep, ...]   # before the compute batches
    after: tuple[ServiceStep, ...]    # after them


def service_order(valid: ValidCluster) -> ServiceOrder:
    compute = {n.name for n in valid.nodes}
    roles: dict[str, list[str]] = {}
    controllers = [valid.controller] + ([valid.backup_controller] if valid.backup_controller else [])
    for host, role in [(valid.database, "slurmdbd"), *((c, "slurmctld") for c in controllers),
                       *((h, "login") for h in valid.login)]:
        if host.name not in compute and role not in roles.setdefault(host.name, []):
            roles[host.name].append(role)
    steps = [ServiceStep(name, tuple(r), valid.accounting.database if "slurmdbd" in r else None)
             for name, r in roles.items()]
    last = [s for s in steps if s.roles == ("login",)]
    return ServiceOrder(tuple(s for s in steps if s not in last), tuple(last))


def dump_command(database: str, timeout_s: int, directory: str = DUMP_DIR) -> str:
    """On the database host, as root (MariaDB's root logs in over its socket): the database to a gzipped file under
    ``directory``, only root may read it, named by the UTC time; prints the file and its size. Bounded by ``timeout_s``
    (exit 124); a dump that fails or runs out leaves no partial file. --single-transaction: a consistent dump of
    InnoDB tables while slurmdbd goes on writing."""
    name = shlex.quote(database)
    where = shlex.quote(directory)
    return (f"umask 077; mkdir -p {where} && f={where}/{name}-$(date -u +%Y%m%dT%H%M%SZ).sql && "
            f"if timeout -k 10 {int(timeout_s)} mariadb-dump --single-transaction --databases {name} "
            f"--result-file=\"$f\"; then gzip -f \"$f\" && echo \"$f.gz $(stat -c %s \"$f.gz\")\"; "
            "else rc=$?; rm -f \"$f\"; exit $rc; fi")
