"""What the accounting database holds for one cluster, read from four ``sacctmgr --parsable2`` listings.

The deploy runs ``show_commands(cluster)`` on a host where sacctmgr reaches slurmdbd and hands their outputs to
``read_database``. Rows are keyed by name, so nothing depends on the order sacctmgr prints them in. Associations
are listed with WOPLimits: each one's own settings, not those it inherits from its parents, which are what the
inventory writes and what ``modify`` sets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

Row = Mapping[str, str]

QOS_FIELDS = ("name", "priority", "preempt", "preemptmode", "flags", "maxwall", "maxtrespu", "maxtres", "grptres",
              "grptresmins", "maxjobspu")
ASSOCIATION_FIELDS = ("account", "user", "partition", "parentname", "share", "grptres", "grptresmins",
                      "maxtresperjob", "maxjobs", "maxsubmitjobs", "maxwall", "qos", "defaultqos")
# The description last: it is free text and may hold the separator.
ACCOUNT_FIELDS = ("account", "organization", "description")
USER_FIELDS = ("user", "defaultaccount", "adminlevel")
_LIST = ("sacctmgr", "--noheader", "--parsable2", "show")


def show_commands(cluster: str) -> dict[str, tuple[str, ...]]:
    """The argument lists whose outputs ``read_database`` takes, by its parameter names."""
    return {
        "qos": (*_LIST, "qos", f"format={','.join(QOS_FIELDS)}"),
        "associations": (*_LIST, "associations", "where", f"cluster={cluster}", "WOPLimits",
                         f"format={','.join(ASSOCIATION_FIELDS)}"),
        "accounts": (*_LIST, "accounts", f"format={','.join(ACCOUNT_FIELDS)}"),
        "users": (*_LIST, "users", f"format={','.join(USER_FIELDS)}"),
    }


@dataclass(frozen=True)
class Database:
    qos: Mapping[str, Row] = field(default_factory=dict)                       # by QOS name
    associations: Mapping[tuple[str, str], Row] = field(default_factory=dict)  # by (account, user); "" for none
    # Associations of one partition: not modelled, so never changed, only reported.
    partition_associations: tuple[Row, ...] = ()
    accounts: Mapping[str, Row] = field(default_factory=dict)                  # every account, all clusters
    users: Mapping[str, Row] = field(default_factory=dict)                     # every user, all clusters


def _rows(text: str, fields: tuple[str, ...]) -> list[dict[str, str]]:
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = line.split("|", len(fields) - 1)
        values += [""] * (len(fields) - len(values))
        rows.append(dict(zip(fields, (v.strip() for v in values), strict=True)))
    return rows


def read_database(qos: str = "", associations: str = "", accounts: str = "", users: str = "") -> Database:
    """The outputs of ``show_commands``, parsed; names lower-cased, as Slurm stores them."""
    assocs: dict[tuple[str, str], Row] = {}
    per_partition = []
    for row in _rows(associations, ASSOCIATION_FIELDS):
        row["account"], row["user"] = row["account"].lower(), row["user"].lower()
        if row["partition"]:
            per_partition.append(MappingProxyType(row))
        else:
            assocs[(row["account"], row["user"])] = MappingProxyType(row)
    per_partition.sort(key=lambda r: (r["account"], r["user"], r["partition"]))
    return Database(
        qos=MappingProxyType({r["name"].lower(): MappingProxyType(r) for r in _rows(qos, QOS_FIELDS)}),
        associations=MappingProxyType(assocs),
        partition_associations=tuple(per_partition),
        accounts=MappingProxyType({r["account"].lower(): MappingProxyType(r)
                                   for r in _rows(accounts, ACCOUNT_FIELDS)}),
        users=MappingProxyType({r["user"].lower(): MappingProxyType(r) for r in _rows(users, USER_FIELDS)}),
    )
