"""The accounts plan, from what `sacctmgr --noheader --parsable2 show ...` prints (the formats of
clusterforge.accounts.database): what to add, change, leave or delete, in an order slurmdbd accepts."""

from __future__ import annotations

import random

import pytest
from clusters import small_cluster

from clusterforge.accounts import Database, accounts_plan, read_database, show_commands, values
from clusterforge.model import Account, Accounting, Qos, User, resolve

QOS = (Qos("gold", priority=100, flags=("DenyOnLimit",), max_wall="1-00:00:00", grp_tres_mins="gres/gpu=43200"),
       Qos("urgent", priority=500, preempt=("gold",), preempt_mode="requeue", max_jobs_per_user=2))
ACCOUNTS = (Account("ml", parent="research", grp_tres="gres/gpu=16,mem=2000G", max_wall="24:00:00"),
            Account("ops", description="operations", organization="it"),
            Account("research", fairshare=40, qos=("gold", "normal"), default_qos="normal"))
USERS = (User("ann", accounts=("research", "ml"), default_account="ml", max_jobs=4),
         User("bob", accounts=("ops",), fairshare="parent", admin="operator"))

# A fresh cluster: the normal QOS, the root account and its root user.
EMPTY = {
    "qos": "normal|0||cluster|||||||\n",
    "associations": "root||||1|||||||normal|\nroot|root|||1||||||||\n",
    "accounts": "root|root|default root account\n",
    "users": "root|root|Administrator\n",
}
# The same database once the plan for the inventory above was applied, as sacctmgr prints it back.
CONVERGED = {
    "qos": "normal|0||cluster|||||||\n"
        "gold|100||cluster|DenyOnLimit|1-00:00:00||||gres/gpu=43200|\n"
        "urgent|500|gold|requeue|||||||2\n",
    "associations": EMPTY["associations"]
    + "research|||root|40|||||||gold,normal|normal\n"
      "ml|||research|1|gres/gpu=16,mem=2000G|||||1-00:00:00||\n"
      "ops|||root|1||||||||\n"
      "research|ann|||1||||4||||\n"
      "ml|ann|||1||||4||||\n"
      "ops|bob|||parent||||||||\n",
    "accounts": EMPTY["accounts"] + "research|research|research\nml|research|ml\nops|it|operations\n",
    "users": EMPTY["users"] + "ann|ml|None\nbob|ops|Operator\n",
}


def valid(prune: bool = False, **changes):
    fields = {"qos": QOS, "accounts": ACCOUNTS, "users": USERS, "prune": prune} | changes
    return resolve(small_cluster(accounting=Accounting(**fields)))


def db(base: dict[str, str] = CONVERGED, **extra_lines: str) -> Database:
    return read_database(**{kind: text + extra_lines.get(kind, "") for kind, text in base.items()})


def args(plan) -> list[list[str]]:
    return [list(step.args) for step in plan.changes]


def test_an_empty_database_gets_everything_in_dependency_order():
    plan = accounts_plan(valid(), db(EMPTY))
    assert args(plan) == [
        ["add", "qos", "gold", "Priority=100", "Flags=DenyOnLimit", "MaxWall=1-00:00:00",
         "GrpTRESMins=gres/gpu=43200"],
        ["add", "qos", "urgent", "Priority=500", "Preempt=gold", "PreemptMode=requeue", "MaxJobsPerUser=2"],
        ["add", "account", "ops", "Cluster=t", "Parent=root", "Description=operations", "Organization=it"],
        ["add", "account", "research", "Cluster=t", "Parent=root", "Fairshare=40", "QOS=gold,normal",
         "DefaultQOS=normal"],
        ["add", "account", "ml", "Cluster=t", "Parent=research", "GrpTRES=gres/gpu=16,mem=2048000",
         "MaxWall=1-00:00:00"],
        ["add", "user", "ann", "Account=ml", "Cluster=t", "DefaultAccount=ml", "MaxJobs=4"],
        ["add", "user", "ann", "Account=research", "Cluster=t", "MaxJobs=4"],
        ["add", "user", "bob", "Account=ops", "Cluster=t", "DefaultAccount=ops", "AdminLevel=Operator",
         "Fairshare=parent"],
    ]
    assert plan.deletions == () and plan.left_in_place == ()


def test_a_converged_database_gets_no_command():
    plan = accounts_plan(valid(prune=True), db())
    assert plan.empty and plan.left_in_place == ()


def test_a_changed_limit_is_one_modify_of_that_limit():
    changed = tuple(a.model_copy(update={"grp_tres": "gres/gpu=32,mem=2000G"}) if a.name == "ml" else a
                    for a in ACCOUNTS)
    plan = accounts_plan(valid(accounts=changed), db())
    assert args(plan) == [["modify", "account", "where", "name=ml", "cluster=t", "set", "GrpTRES=gres/gpu=32"]]


def test_limits_the_inventory_drops_are_cleared():
    plan = accounts_plan(valid(qos=(QOS[0].model_copy(update={"flags": (), "grp_tres_mins": None}), QOS[1])), db())
    assert args(plan) == [["modify", "qos", "where", "name=gold", "set", "Flags=-1", "GrpTRESMins=gres/gpu=-1"]]


def test_a_qos_limit_raised_in_the_inventory():
    raised = Qos("gold", priority=100, flags=("DenyOnLimit",), max_wall="1-00:00:00", grp_tres_mins="gres/gpu=86400")
    plan = accounts_plan(valid(qos=(raised, QOS[1])), db())
    assert args(plan) == [["modify", "qos", "where", "name=gold", "set", "GrpTRESMins=gres/gpu=86400"]]


def test_an_account_moved_and_a_default_account_changed():
    moved = tuple(a.model_copy(update={"parent": "root"}) if a.name == "ml" else a for a in ACCOUNTS)
    users = (USERS[0].model_copy(update={"default_account": "research"}), USERS[1])
    plan = accounts_plan(valid(accounts=moved, users=users), db())
    assert args(plan) == [
        ["modify", "account", "where", "name=ml", "cluster=t", "set", "Parent=root"],
        ["modify", "user", "where", "name=ann", "cluster=t", "set", "DefaultAccount=research"],
    ]


def test_a_user_joins_another_account_before_it_becomes_the_default():
    users = (USERS[0], User("bob", accounts=("ops", "ml"), default_account="ml", fairshare="parent",
                            admin="operator"))
    plan = accounts_plan(valid(users=users), db())
    assert args(plan) == [
        ["add", "user", "bob", "Account=ml", "Cluster=t", "Fairshare=parent"],
        ["modify", "user", "where", "name=bob", "cluster=t", "set", "DefaultAccount=ml"],
    ]


EXTRA = {
    "qos": "legacy|10||cluster|||||||\n",
    "associations": "physics|||root|1||||||||\nastro|||physics|1||||||||\n"
                 "astro|carl|||1||||||||\nml|bob|||1||||||||\n",
    "accounts": "physics|physics|physics\nastro|physics|astro\n",
    "users": "carl|astro|None\n",
}


def test_what_the_inventory_does_not_name_is_left_in_place_without_prune():
    plan = accounts_plan(valid(), db(**EXTRA))
    assert plan.empty
    assert plan.left_in_place == ("user bob in account ml", "user carl (in astro)", "account astro (under physics)",
                                  "account physics (under root)", "QOS legacy")


def test_with_prune_it_is_deleted_last_users_first_children_before_parents():
    plan = accounts_plan(valid(prune=True), db(**EXTRA))
    assert args(plan) == []
    assert [list(s.args) for s in plan.deletions] == [
        ["delete", "user", "where", "name=bob", "account=ml", "cluster=t"],
        ["delete", "user", "where", "name=carl", "cluster=t"],
        ["delete", "account", "where", "name=astro", "cluster=t"],
        ["delete", "account", "where", "name=physics", "cluster=t"],
        ["delete", "qos", "where", "name=legacy"],
    ]
    assert plan.left_in_place == ()


def test_per_partition_associations_are_only_reported():
    plan = accounts_plan(valid(prune=True), db(associations="ml|ann|debug||1||||||||\n"))
    assert plan.empty
    assert plan.left_in_place == (("association of user ann in account ml for partition debug (per-partition "
                                   "associations are not managed)"),)


def _shuffled(text: str, seed: int) -> str:
    lines = text.splitlines()
    random.Random(seed).shuffle(lines)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed", range(5))
def test_the_order_sacctmgr_prints_rows_in_changes_nothing(seed):
    changed = {"accounts": tuple(a.model_copy(update={"parent": "root", "max_jobs": 3}) for a in ACCOUNTS),
                   "users": (USERS[0].model_copy(update={"default_account": "research"}),)}
    cluster = valid(prune=True, **changed)
    base = db(**EXTRA)
    text = {kind: CONVERGED[kind] + EXTRA.get(kind, "") for kind in CONVERGED}
    shuffled = read_database(**{kind: _shuffled(t, seed) for kind, t in text.items()})
    assert accounts_plan(cluster, shuffled) == accounts_plan(cluster, base)


@pytest.mark.parametrize("kind, inventory, printed", [
    ("tres", "mem=2000G,gres/gpu=64", "gres/gpu=64,mem=2000G"),
    ("tres", "mem=2048000", "mem=2000G"),
    ("tres", "mem=1536M", "mem=1.50G"),
    ("tres", "cpu=2K", "cpu=2048"),
    ("tres", "GRES/GPU:H100=8", "gres/gpu:h100=8"),
    ("tres", None, ""),
    ("minutes", "1-00:00:00", "24:00:00"),
    ("minutes", "1-0", "1-00:00:00"),
    ("minutes", "90", "01:30:00"),
    ("minutes", "UNLIMITED", ""),
    ("minutes", None, ""),
    ("shares", 1, ""),
    ("shares", "parent", "parent"),
    ("preempt_mode", None, "cluster"),
    ("preempt_mode", "off", "cluster"),
    ("preempt_mode", "GANG,suspend", "suspend,gang"),
    ("names", ("Gold", "normal"), "normal,gold"),
    ("admin_level", "admin", "Administrator"),
])
def test_values_compare_equal_however_each_side_writes_them(kind, inventory, printed):
    read = getattr(values, kind)
    assert read(inventory) == read(printed)


def test_the_listings_the_deploy_runs():
    commands = show_commands("prod")
    assert commands["associations"] == (
        "sacctmgr", "--noheader", "--parsable2", "show", "associations", "where", "cluster=prod", "WOPLimits",
        ("format=account,user,partition,parentname,share,grptres,grptresmins,maxtresperjob,maxjobs,maxsubmitjobs,"
         "maxwall,qos,defaultqos"))
    assert set(commands) == {"qos", "associations", "accounts", "users"}


def test_a_description_with_the_separator_in_it():
    found = read_database(accounts="ops|it|ops | tooling\n")
    assert found.accounts["ops"]["description"] == "ops | tooling"
