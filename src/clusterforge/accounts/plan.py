"""The sacctmgr commands that bring the accounting database to the inventory: a pure function of the resolved
cluster and the database read before (``database.read_database``).

Order: QOS (a QOS after those it preempts), then accounts, parents first, then users (each after its accounts;
default accounts set once the association exists), then, only with ``Accounting(prune=True)``, deletions: users
before accounts, children before parents, QOS last. Without prune, what the database has beyond the inventory is
listed as left in place. Every setting is compared in one normal form (values.py), so the plan after applying a
plan is empty. TRES limits are refused until slurmctld has registered the TRES: apply the plan once it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..model import Association, Qos, ValidCluster
from . import values
from .database import Database, Row

ROOT = "root"


@dataclass(frozen=True)
class Step:
    args: tuple[str, ...]  # for `sacctmgr --immediate`
    what: str              # one line for the deploy's output


@dataclass(frozen=True)
class AccountsPlan:
    changes: tuple[Step, ...]
    # Only with prune, after the changes. slurmdbd refuses to delete an account or user with running or pending
    # jobs: run each alone, report a refusal and go on.
    deletions: tuple[Step, ...]
    left_in_place: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.changes and not self.deletions


@dataclass(frozen=True)
class Setting:
    """One sacctmgr key: how to read the inventory's value and the printed one into one form, and how to write
    the wanted value (given the one there, for TRES, whose other limits must be cleared one by one)."""

    key: str
    column: str
    wanted: Callable[[Any], Any]
    have: Callable[[str], Any]
    text: Callable[[Any, Any], str]


def _tres(key: str, column: str) -> Setting:
    return Setting(key, column, values.tres, values.tres, values.tres_text)


def _count(key: str, column: str) -> Setting:
    return Setting(key, column, values.count, values.count, lambda w, h: "-1" if w is None else str(w))


def _names(wanted: frozenset[str], have: frozenset[str]) -> str:
    return ",".join(sorted(wanted))  # an empty list clears it


_MAX_WALL = Setting("MaxWall", "maxwall", values.minutes, values.minutes, lambda w, h: values.time_text(w))

ASSOCIATION: Mapping[str, Setting] = {
    "fairshare": Setting("Fairshare", "share", values.shares, values.shares, lambda w, h: w),
    "grp_tres": _tres("GrpTRES", "grptres"),
    "grp_tres_mins": _tres("GrpTRESMins", "grptresmins"),
    "max_tres_per_job": _tres("MaxTRESPerJob", "maxtresperjob"),
    "max_jobs": _count("MaxJobs", "maxjobs"),
    "max_submit_jobs": _count("MaxSubmitJobs", "maxsubmitjobs"),
    "max_wall": _MAX_WALL,
    "qos": Setting("QOS", "qos", values.names, values.names, _names),
    "default_qos": Setting("DefaultQOS", "defaultqos", values.name, values.name, lambda w, h: w or "-1"),
}
QOS: Mapping[str, Setting] = {
    "priority": Setting("Priority", "priority", lambda v: v or 0, lambda t: values.count(t) or 0,
                        lambda w, h: str(w)),
    "preempt": Setting("Preempt", "preempt", values.names, values.names, _names),
    "preempt_mode": Setting("PreemptMode", "preemptmode", values.preempt_mode, values.preempt_mode,
                            lambda w, h: w),
    "flags": Setting("Flags", "flags", values.flags, values.flags, lambda w, h: values.flags_text(w)),
    "max_wall": _MAX_WALL,
    "max_tres_per_user": _tres("MaxTRESPerUser", "maxtrespu"),
    "max_tres_per_job": _tres("MaxTRESPerJob", "maxtres"),
    "grp_tres": _tres("GrpTRES", "grptres"),
    "grp_tres_mins": _tres("GrpTRESMins", "grptresmins"),
    "max_jobs_per_user": _count("MaxJobsPerUser", "maxjobspu"),
}


def _differences(entry: Association | Qos, row: Row | None, settings: Mapping[str, Setting]) -> list[str]:
    """``Key=value`` for each setting of ``entry`` that ``row`` lacks or has otherwise; no row: a new one, which
    has none of them set (and 1 share)."""
    out = []
    for field, setting in settings.items():
        wanted = setting.wanted(getattr(entry, field))
        have = setting.have(row.get(setting.column, "") if row is not None else "")
        if wanted != have:
            out.append(f"{setting.key}={setting.text(wanted, have)}")
    return out


def _qos_order(qos: tuple[Qos, ...]) -> list[Qos]:
    ordered: list[Qos] = []
    pending = list(qos)
    while pending:
        known = {q.name.lower() for q in ordered}
        ready = [q for q in pending if all(t.lower() in known or t.lower() == "normal" for t in q.preempt)]
        ordered.extend(ready or pending)  # a preempt cycle cannot be ordered; sacctmgr reports it
        pending = [q for q in pending if q not in ordered]
    return ordered


def _qos_steps(valid: ValidCluster, db: Database) -> list[Step]:
    steps = []
    for qos in _qos_order(valid.accounting.qos):
        row = db.qos.get(qos.name.lower())
        changed = _differences(qos, row, QOS)
        if row is None:
            steps.append(Step(("add", "qos", qos.name, *changed), f"add QOS {qos.name}"))
        elif changed:
            steps.append(Step(("modify", "qos", "where", f"name={qos.name}", "set", *changed),
                              f"QOS {qos.name}: {' '.join(changed)}"))
    return steps


def _account_steps(valid: ValidCluster, db: Database) -> list[Step]:
    cluster, steps = valid.name, []
    for account in valid.accounts:
        name, parent = account.name.lower(), account.parent.lower()
        row = db.associations.get((name, ""))
        record = db.accounts.get(name)
        described = [f"{key}={value}" for key, column, value in (
            ("Description", "description", account.description),
            ("Organization", "organization", account.organization))
            if value is not None and (record is None or record.get(column, "") != value)]
        changed = _differences(account, row, ASSOCIATION)
        if row is None:
            # A new account record takes its description here; an existing one (another cluster's) below.
            steps.append(Step(("add", "account", name, f"Cluster={cluster}", f"Parent={parent}",
                               *(described if record is None else ()), *changed),
                              f"add account {name} under {parent}"))
        else:
            if row.get("parentname", "").lower() != parent:
                changed.insert(0, f"Parent={parent}")
            if changed:
                steps.append(Step(("modify", "account", "where", f"name={name}", f"cluster={cluster}", "set",
                                   *changed), f"account {name}: {' '.join(changed)}"))
        if described and record is not None:
            steps.append(Step(("modify", "account", "where", f"name={name}", "set", *described),
                              f"account {name}: {' '.join(described)}"))
    return steps


def _user_steps(valid: ValidCluster, db: Database) -> list[Step]:
    cluster, adds, modifies = valid.name, [], []
    on_this_cluster = {u for _, u in db.associations}
    for user in valid.accounting.users:
        name, default = user.name.lower(), (user.default or "").lower()
        record = db.users.get(name)
        on_cluster = name in on_this_cluster
        # The default account's association first: a new user is made with it.
        for account in sorted((a.lower() for a in user.accounts), key=lambda a: a != default):
            row = db.associations.get((account, name))
            changed = _differences(user, row, ASSOCIATION)
            if row is None:
                # The first association of a user on this cluster is its default one.
                first = not on_cluster and account == default
                extra = ([f"DefaultAccount={default}"] if first else []) + (
                    [f"AdminLevel={user.admin.capitalize()}"] if first and record is None and user.admin else [])
                adds.append(Step(("add", "user", name, f"Account={account}", f"Cluster={cluster}", *extra,
                                  *changed), f"add user {name} to account {account}"))
            elif changed:
                modifies.append(Step(("modify", "user", "where", f"name={name}", f"account={account}",
                                      f"cluster={cluster}", "set", *changed),
                                     f"user {name} in {account}: {' '.join(changed)}"))
        if record is not None and on_cluster and values.name(record.get("defaultaccount")) != default:
            modifies.append(default_account(name, cluster, default))
        if record is not None and user.admin and values.admin_level(record.get("adminlevel")) != user.admin:
            modifies.append(Step(("modify", "user", "where", f"name={name}", "set",
                                  f"AdminLevel={user.admin.capitalize()}"), f"user {name}: admin level {user.admin}"))
    return adds + modifies


def default_account(name: str, cluster: str, default: str) -> Step:
    """Set a user's default account: where it differs, and where slurmctld lost it (accounts/controller.py), since
    slurmdbd sends the user record on to slurmctld even when the value is the same."""
    return Step(("modify", "user", "where", f"name={name}", f"cluster={cluster}", "set", f"DefaultAccount={default}"),
                f"user {name}: default account {default}")


def _depth(account: str, parents: Mapping[str, str]) -> int:
    depth, seen = 0, set()
    while account in parents and account not in seen and account != ROOT:
        seen.add(account)
        account, depth = parents[account], depth + 1
    return depth


def _extras(valid: ValidCluster, db: Database) -> tuple[list[Step], list[str]]:
    """Deletion steps for what the database has beyond the inventory, users before accounts before QOS, children
    before parents; and the lines that name each of them."""
    cluster, acct = valid.name, valid.accounting
    accounts = {a.name.lower() for a in acct.accounts} | {ROOT}
    members = {u.name.lower(): {a.lower() for a in u.accounts} for u in acct.users}
    extra_members: dict[str, list[str]] = {}
    for account, user in sorted(db.associations):
        if user and user != ROOT and account not in members.get(user, ()):
            extra_members.setdefault(user, []).append(account)
    steps, lines = [], []
    for user, extra in sorted(extra_members.items()):
        if user not in members:
            steps.append(Step(("delete", "user", "where", f"name={user}", f"cluster={cluster}"),
                              f"delete user {user} ({', '.join(extra)})"))
            lines.append(f"user {user} (in {', '.join(extra)})")
            continue
        for account in extra:
            steps.append(Step(("delete", "user", "where", f"name={user}", f"account={account}",
                               f"cluster={cluster}"), f"delete user {user} from account {account}"))
            lines.append(f"user {user} in account {account}")
    parents = {a: r.get("parentname", "").lower() for (a, u), r in db.associations.items() if not u}
    for account in sorted((a for a in parents if a not in accounts), key=lambda a: (-_depth(a, parents), a)):
        steps.append(Step(("delete", "account", "where", f"name={account}", f"cluster={cluster}"),
                          f"delete account {account}"))
        lines.append(f"account {account} (under {parents[account] or ROOT})")
    qos = {q.name.lower() for q in acct.qos} | {"normal"}
    for name in sorted(set(db.qos) - qos):
        steps.append(Step(("delete", "qos", "where", f"name={name}"), f"delete QOS {name}"))
        lines.append(f"QOS {name}")
    return steps, lines


def accounts_plan(valid: ValidCluster, db: Database) -> AccountsPlan:
    deletions, extra = _extras(valid, db)
    kept = [f"association of user {r['user'] or '-'} in account {r['account']} for partition {r['partition']} "
            "(per-partition associations are not managed)" for r in db.partition_associations]
    prune = valid.accounting.prune
    return AccountsPlan(
        changes=tuple(_qos_steps(valid, db) + _account_steps(valid, db) + _user_steps(valid, db)),
        deletions=tuple(deletions) if prune else (),
        left_in_place=tuple(kept + ([] if prune else extra)),
    )
