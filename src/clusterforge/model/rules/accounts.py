"""Rules for the account tree and its users: names, parents and cycles, the QOS and TRES their limits name, each
user's accounts and default account. Slurm keeps account, user and QOS names in lower case, so names are compared
that way."""

from __future__ import annotations

from ..accounting import Account, Association, User
from .accounting import known_qos, not_negative, qos_names, time, tres_limits
from .check import Check

ROOT = "root"
ASSOCIATION_TRES = ("grp_tres", "grp_tres_mins", "max_tres_per_job")


def accounts(check: Check, known_tres: tuple[str, ...]) -> tuple[Account, ...]:
    """The accounts in tree order: every parent before its children, siblings as written."""
    acct = check.cluster.accounting
    qos = qos_names(acct)
    by_name = {a.name.lower(): a for a in acct.accounts}
    check.duplicates(((a.name.lower(), a, f"accounting.accounts[{a.name}]") for a in acct.accounts),
                     "an account of this name is already defined ({at})")
    for account in acct.accounts:
        where = f"accounting.accounts[{account.name}]"
        if account.name.lower() == ROOT:
            check.add(where, "'root' is Slurm's own top account: other accounts hang below it (parent='root')",
                      account)
        else:
            check.name(where, account.name, account, "account")
        if account.parent.lower() != ROOT and account.parent.lower() not in by_name:
            check.add(f"{where}.parent", f"{account.parent!r} is not an account of accounting.accounts", account,
                      "parent")
        _association(check, where, account, qos, known_tres)
    _cycles(check, acct.accounts, by_name)
    _users(check, acct.users, set(by_name), qos, known_tres)
    return _tree_order(acct.accounts)  # an account in a cycle is unreachable from root: left out, and reported


def _association(check: Check, where: str, entry: Association, qos: set[str], known_tres: tuple[str, ...]) -> None:
    if isinstance(entry.fairshare, int) and entry.fairshare < 0:
        check.add(f"{where}.fairshare", f"must not be negative, not {entry.fairshare}", entry, "fairshare")
    for name in entry.qos:
        known_qos(check, f"{where}.qos", name, qos, entry, "qos")
    if entry.default_qos is not None:
        if entry.default_qos.lower() not in qos:
            known_qos(check, f"{where}.default_qos", entry.default_qos, qos, entry, "default_qos")
        elif entry.qos and entry.default_qos.lower() not in {q.lower() for q in entry.qos}:
            # sacctmgr refuses a default QOS the association may not use.
            check.add(f"{where}.default_qos", f"{entry.default_qos!r} is not among its qos "
                                              f"({', '.join(entry.qos)})", entry, "default_qos")
    for field in ASSOCIATION_TRES:
        tres_limits(check, f"{where}.{field}", getattr(entry, field), entry, known_tres, field)
    for field in ("max_jobs", "max_submit_jobs"):
        not_negative(check, where, entry, field)
    time(check, where, entry, "max_wall")


def _cycles(check: Check, accounts: tuple[Account, ...], by_name: dict[str, Account]) -> None:
    """Report each parent cycle once, at the first of its accounts written."""
    reported: set[str] = set()
    for account in accounts:
        chain: list[str] = []
        name = account.name.lower()
        while name in by_name and name != ROOT and name not in chain:
            chain.append(name)
            name = by_name[name].parent.lower()
        if name in chain and not reported & set(chain):
            cycle = chain[chain.index(name):]
            reported.update(cycle)
            first = by_name[cycle[0]]
            check.add(f"accounting.accounts[{first.name}].parent",
                      f"the parents form a cycle: {' -> '.join([*cycle, cycle[0]])}; an account tree ends in 'root'",
                      first, "parent")


def _users(check: Check, users: tuple[User, ...], accounts: set[str], qos: set[str],
           known_tres: tuple[str, ...]) -> None:
    check.duplicates(((u.name.lower(), u, f"accounting.users[{u.name}]") for u in users),
                     "a user of this name is already defined ({at})")
    for user in users:
        where = f"accounting.users[{user.name}]"
        check.name(where, user.name, user, "user")
        names = [a.lower() for a in user.accounts]
        if not names:
            check.add(f"{where}.accounts", "belongs to no account: Slurm refuses a user without one", user,
                      "accounts")
        for name in user.accounts:
            if name.lower() != ROOT and name.lower() not in accounts:
                check.add(f"{where}.accounts", f"{name!r} is not an account of accounting.accounts", user, "accounts")
        if len(set(names)) != len(names):
            check.add(f"{where}.accounts", "names an account more than once", user, "accounts")
        if user.default_account is not None and user.default_account.lower() not in names:
            check.add(f"{where}.default_account", f"{user.default_account!r} is not one of its accounts", user,
                      "default_account")
        elif user.default_account is None and len(names) > 1:
            check.add(f"{where}.default_account", f"has {len(names)} accounts: name the default one", user)
        _association(check, where, user, qos, known_tres)


def _tree_order(accounts: tuple[Account, ...]) -> tuple[Account, ...]:
    children: dict[str, list[Account]] = {}
    for account in accounts:
        children.setdefault(account.parent.lower(), []).append(account)
    out: list[Account] = []

    def visit(parent: str) -> None:
        for child in children.get(parent, ()):
            if child not in out:  # an account called root is its own child: reported, not followed
                out.append(child)
                visit(child.name.lower())

    visit(ROOT)
    return tuple(out)
