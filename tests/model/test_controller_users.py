"""Whether slurmctld lets each declared user submit (accounts/controller.py), from what Slurm 22.05's slurmctld and
the controller's user database printed on the test cluster (issue 19 item 5's reproduction)."""

from __future__ import annotations

from clusters import small_cluster

from clusterforge.accounts import controller
from clusterforge.accounts.controller import Held
from clusterforge.model import Account, Accounting, User, resolve

VALID = resolve(small_cluster(accounting=Accounting(
    accounts=(Account("vision"), Account("teaching")),
    users=(User("alice", accounts=("vision",)), User("bob", accounts=("teaching", "vision"), default_account="teaching"),
           User("dave", accounts=("vision",))))))

# `scontrol show assoc_mgr flags=users users=...` as tagged by read_command, then `getent passwd`.
RESTARTED_BEFORE_DAVE_EXISTED = """\
@held Current Association Manager state
@held
@held User Records
@held
@held UserName=alice(2001) DefAccount=vision DefWckey=(null) AdminLevel=Not Set
@held UserName=bob(2002) DefAccount=(null) DefWckey= AdminLevel=None
@held UserName=dave(4294967294) DefAccount=(null) DefWckey= AdminLevel=None
@passwd alice:x:2001:2001::/home/alice:/bin/sh
@passwd bob:x:2002:2002::/home/bob:/bin/sh
""".splitlines()


def test_the_listing_is_read_with_unresolved_uids_and_missing_default_accounts_as_none():
    held, unix = controller.parse(RESTARTED_BEFORE_DAVE_EXISTED)
    assert held == {"alice": Held(2001, "vision"), "bob": Held(2002, None), "dave": Held(None, None)}
    assert unix == {"alice", "bob"}


def test_a_user_the_controller_cannot_resolve_is_unknown_and_one_held_without_a_default_is_stale():
    view = controller.users_view(VALID, *controller.parse(RESTARTED_BEFORE_DAVE_EXISTED))
    assert view.unknown == ("dave",) and view.stale == ("bob",)
    assert "no Unix account for dave" in view.unknown_text()
    assert "before declaring them in the inventory" in view.unknown_text()


def test_once_the_user_exists_a_missing_uid_is_stale_and_a_user_not_yet_held_is_not_judged():
    held, unix = controller.parse(RESTARTED_BEFORE_DAVE_EXISTED)
    view = controller.users_view(VALID, held, unix | {"dave"})
    assert view.stale == ("bob", "dave")
    assert view.stale_text(held) == ("bob (no default account: it could not resolve the name when it started); "
                                     "dave (no uid: it could not resolve the name when it learned of the user)")
    del held["dave"]  # the deploy is about to add him: slurmctld learns him as he is added
    assert controller.users_view(VALID, held, unix | {"dave"}).stale == ("bob",)


def test_the_read_asks_slurmctld_and_the_user_database_about_the_declared_users_only():
    command = controller.read_command(controller.declared_users(VALID))
    assert "scontrol show assoc_mgr flags=users users=alice,bob,dave" in command
    assert "getent passwd alice bob dave" in command
