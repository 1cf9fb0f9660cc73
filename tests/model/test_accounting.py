"""Rules for accounting: enforcement, QOS, and the TRES their limits name."""

from __future__ import annotations

import pytest
from clusters import only_problem, problems, small_cluster

from clusterforge.model import Account, Accounting, Profile, Qos, User, resolve
from clusterforge.versions import SlurmVersion


def with_qos(**limits: str) -> Accounting:
    return Accounting(qos=(Qos("gold", **limits),))


def test_a_qos_limit_names_a_tres_the_cluster_has():
    qos = with_qos(max_tres_per_user="gpu=64")
    line = qos.qos[0].origin
    problem = only_problem(small_cluster(accounting=qos))
    assert problem.startswith("accounting.qos[gold].max_tres_per_user: 'gpu' is not a TRES of this cluster")
    assert "did you mean gres/gpu?" in problem and problem.endswith(f"({line})")


@pytest.mark.parametrize("limits", [
    {"max_tres_per_user": "gres/gpu=64"},
    {"max_tres_per_user": "gres/gpu:h100=16,cpu=512"},  # each GPU type is tracked (AccountingStorageTRES)
    {"grp_tres": "node=4,mem=2000G,billing=100"},
])
def test_tres_limits_the_cluster_can_enforce(limits):
    valid = resolve(small_cluster(accounting=with_qos(**limits)))
    assert "gres/gpu:h100" in valid.slurm_conf["AccountingStorageTRES"].split(",")


@pytest.mark.parametrize("limit, message", [
    ("gres/gpu:a100=8", "'gres/gpu:a100' is not a TRES of this cluster"),
    ("gres/gpu", "'gres/gpu' is not a TRES limit: write name=count"),
    ("gres/gpu=many", "'gres/gpu=many' is not a TRES limit"),
])
def test_tres_limits_slurm_would_refuse(limit, message):
    assert message in only_problem(small_cluster(accounting=with_qos(grp_tres=limit)))


def test_a_cluster_without_gpus_has_no_gpu_tres():
    cpu = Profile("gpu", sockets=2, cores_per_socket=4, real_memory=4000)
    problem = only_problem(small_cluster(profiles=(cpu,), accounting=with_qos(grp_tres="gres/gpu=8")))
    assert "'gres/gpu' is not a TRES of this cluster" in problem


# Accounts, users and QOS settings.


def tree(*accounts: Account, users: tuple[User, ...] = (), qos: tuple[Qos, ...] = ()) -> Accounting:
    return Accounting(accounts=accounts, users=users, qos=qos)


def test_accounts_resolve_in_tree_order_parents_first():
    accounting = tree(Account("ml", parent="research"), Account("ops"), Account("research", fairshare=40),
                      Account("vision", parent="research"), Account("nlp", parent="ml"))
    valid = resolve(small_cluster(accounting=accounting))
    assert [a.name for a in valid.accounts] == ["ops", "research", "ml", "nlp", "vision"]


def test_an_unknown_parent_is_located_at_its_field():
    account = Account("ml", parent="reserch")
    problem = only_problem(small_cluster(accounting=tree(Account("research"), account)))
    assert problem == (f"accounting.accounts[ml].parent: 'reserch' is not an account of accounting.accounts "
                       f"({account.origin_of('parent')})")


def test_a_parent_cycle_is_one_problem():
    found = problems(small_cluster(accounting=tree(Account("a", parent="b"), Account("b", parent="c"),
                                                   Account("c", parent="a"), Account("ok"))))
    assert len(found) == 1, found
    assert found[0].startswith("accounting.accounts[a].parent: the parents form a cycle: a -> b -> c -> a")


def test_an_account_is_its_own_parent():
    problem = only_problem(small_cluster(accounting=tree(Account("a", parent="a"))))
    assert "a -> a" in problem


@pytest.mark.parametrize("accounts, message", [
    ((Account("ml"), Account("ML")), "accounting.accounts[ML]: an account of this name is already defined (at "),
    ((Account("root"),), "accounting.accounts[root]: 'root' is Slurm's own top account"),
    ((Account("ml team"),), "'ml team' is not a valid account name"),
    ((Account("ml", fairshare=-1),), "accounting.accounts[ml].fairshare: must not be negative"),
    ((Account("ml", max_wall="2 days"),), "accounting.accounts[ml].max_wall: '2 days' is not a Slurm time"),
    ((Account("ml", max_jobs=-3),), "accounting.accounts[ml].max_jobs: must not be negative"),
    ((Account("ml", grp_tres_mins="gpu=43200"),), "accounting.accounts[ml].grp_tres_mins: 'gpu' is not a TRES"),
    ((Account("ml", max_tres_per_job="gres/gpu:a100=8"),), "'gres/gpu:a100' is not a TRES of this cluster"),
    ((Account("ml", qos=("gold",)),), "accounting.accounts[ml].qos: 'gold' is not a QOS of accounting.qos"),
    ((Account("ml", default_qos="gold"),), "accounting.accounts[ml].default_qos: 'gold' is not a QOS"),
    ((Account("ml", qos=("high",), default_qos="normal"),), "'normal' is not among its qos (high)"),
])
def test_account_mistakes(accounts, message):
    problem = only_problem(small_cluster(accounting=tree(*accounts, qos=(Qos("high"),))))
    assert message in problem


def test_account_limits_the_cluster_can_enforce():
    account = Account("ml", fairshare="parent", qos=("high", "normal"), default_qos="high",
                      grp_tres="gres/gpu=16,cpu=256", grp_tres_mins="gres/gpu=43200", max_tres_per_job="node=2",
                      max_jobs=10, max_submit_jobs=100, max_wall="3-00:00:00")
    assert resolve(small_cluster(accounting=tree(account, qos=(Qos("high"),)))).accounts == (account,)


@pytest.mark.parametrize("user, message", [
    (User("ann"), "accounting.users[ann].accounts: belongs to no account"),
    (User("ann", accounts=("ml", "vision")), "accounting.users[ann].default_account: has 2 accounts: name the"),
    (User("ann", accounts=("ml",), default_account="vision"), "default_account: 'vision' is not one of its"),
    (User("ann", accounts=("ml", "nlp"), default_account="ml"), "accounting.users[ann].accounts: 'nlp' is not an account of"),
    (User("ann", accounts=("ml", "ml"), default_account="ml"), "names an account more than once"),
    (User("ann", accounts=("ml",), qos=("gold",)), "accounting.users[ann].qos: 'gold' is not a QOS"),
    (User("ann", accounts=("ml",), max_tres_per_job="gpu=2"), "accounting.users[ann].max_tres_per_job: 'gpu'"),
    (User("Ann Lee", accounts=("ml",)), "'Ann Lee' is not a valid user name"),
])
def test_user_mistakes(user, message):
    problem = only_problem(small_cluster(accounting=tree(Account("ml"), Account("vision"), users=(user,))))
    assert message in problem
    assert problem.endswith(f"({user.origin})")


def test_a_user_written_twice():
    problem = only_problem(small_cluster(accounting=tree(Account("ml"), users=(
        User("ann", accounts=("ml",)), User("ann", accounts=("root",))))))
    assert problem.startswith("accounting.users[ann]: a user of this name is already defined")


def test_a_user_of_one_account_defaults_to_it():
    user = User("ann", accounts=("ml",))
    resolve(small_cluster(accounting=tree(Account("ml"), users=(user,))))
    assert user.default == "ml"


@pytest.mark.parametrize("qos, message", [
    (Qos("gold", preempt_mode="kill"), "accounting.qos[gold].preempt_mode: 'kill' is not a PreemptMode"),
    (Qos("gold", preempt_mode="requeue,cancel"), "is not a PreemptMode"),
    (Qos("gold", flags=("NoDecay", "DenyOnLimits")), "accounting.qos[gold].flags: 'DenyOnLimits' is not a QOS flag"),
    (Qos("gold", flags=("Relative",)), "'Relative' needs Slurm 23.11 or newer"),
    (Qos("gold", max_jobs_per_user=-1), "accounting.qos[gold].max_jobs_per_user: must not be negative"),
    (Qos("gold", grp_tres_mins="gres/gpu=lots"), "accounting.qos[gold].grp_tres_mins: 'gres/gpu=lots' is not a"),
    (Qos("gold", max_tres_per_job="gpu=8"), "accounting.qos[gold].max_tres_per_job: 'gpu' is not a TRES"),
    (Qos("gold", max_wall="forever"), "accounting.qos[gold].max_wall: 'forever' is not a Slurm time"),
    (Qos("gold", preempt=("silver",)), "accounting.qos[gold].preempt: 'silver' is not a QOS"),
])
def test_qos_mistakes(qos, message):
    assert message in only_problem(small_cluster(accounting=Accounting(qos=(qos,))))


def test_qos_settings_slurm_accepts():
    qos = Qos("gold", preempt=("normal",), preempt_mode="suspend,gang", flags=("DenyOnLimit", "nodecay"),
              grp_tres_mins="gres/gpu=43200", max_tres_per_job="gres/gpu=8", max_jobs_per_user=4)
    resolve(small_cluster(accounting=Accounting(qos=(qos,))))
    resolve(small_cluster(accounting=Accounting(qos=(Qos("rel", flags=("Relative",)),))), SlurmVersion.parse("24.11"))
