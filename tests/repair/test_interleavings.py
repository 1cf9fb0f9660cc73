"""Issue 48: an admin's drain set at any moment of a repair is kept, reason unchanged, and the repair stops. Each
repair below (a reboot, with a job ahead of it, and a reset that fails to a reboot) is played once without the admin,
its passes counted; then once for each pass, with the admin's drain set just before it. From the admin's drain on,
the loop asks Slurm nothing but to withdraw its reboot or to set the admin's reason again, and at the end the node is
drained with the admin's reason, no reboot is pending, and the repair has ended."""

from __future__ import annotations

import pytest
from repair.standin import XID48, XID79, bench

from clusterforge.slurm import drains

ADMIN = "e2e: swap GPU 3, ticket 4711"
PASSES = 40


def reboot(b, step: int) -> None:
    if step == 0:
        b.slurm.place("alice", ["gpu01"], 60, gpus=(0,))
        b.health_drains("gpu01", XID79)


def reset_refused(b, step: int) -> None:
    if step == 0:
        b.health_drains("gpu01", XID48)
    elif step == 2 and b.node("gpu01").reason.startswith("cf:repair:reset "):
        b.health_refuses_reset("gpu01", "in use by another client")


SCENARIOS = {"reboot": reboot, "reset refused, then reboot": reset_refused}


def play(tmp_path, scenario, admin_at: int | None):
    b = bench(tmp_path)
    b.slurm.reboot_s = 40
    asked_after: list[list[str]] = []
    for step in range(PASSES):
        if admin_at is None or step < admin_at:
            scenario(b, step)   # the health check's doing, until the admin takes the node
        if step == admin_at:
            b.admin(*drains.drain_argv("gpu01", ADMIN))
            mark = len(b.asked())
            ended = len(b.loop.store.history())
            # A pass sees it before Slurm's clock moves on: a registration after a reboot lifts every drain, and one
            # set after the loop's last pass and before the registration is gone unseen (docs/operations/repair.md).
            b.loop.one_pass()
        b.tick(15)
        if admin_at is not None and step >= admin_at:
            asked_after = b.asked()[mark:]
    return b, asked_after, (ended if admin_at is not None else 0)


@pytest.mark.parametrize("name", SCENARIOS)
def test_without_the_admin_the_node_returns(tmp_path, name):
    b, _, _ = play(tmp_path, SCENARIOS[name], None)
    assert b.loop.store.history()[-1]["outcome"] == "back in service"
    assert b.node("gpu01").reason == "" and "DRAIN" not in b.node("gpu01").flags


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("admin_at", range(1, 16))
def test_an_admins_drain_at_any_pass_is_kept_and_stops_the_repair(tmp_path, name, admin_at):
    b, asked, ended = play(tmp_path / str(admin_at), SCENARIOS[name], admin_at)
    allowed = (drains.cancel_reboot_argv("gpu01"), drains.drain_argv("gpu01", ADMIN))
    assert [a for a in asked if a not in allowed] == [], asked
    node = b.node("gpu01")
    assert node.reason == ADMIN and "DRAIN" in node.flags, (node.reason, node.flags)
    assert not {"REBOOT_REQUESTED", "REBOOT_ISSUED"} & node.flags
    assert b.loop.store.node("gpu01").repair is None
    # The repair under way stops; one ended before the admin's drain is not touched by it.
    outcomes = [h["outcome"] for h in b.loop.store.history()[ended:]]
    assert outcomes in ([], ["stopped, the node left as it is: drained by another during its repair: " + ADMIN],
                        ["stopped, the node left as it is: drained by another: " + ADMIN]), outcomes
