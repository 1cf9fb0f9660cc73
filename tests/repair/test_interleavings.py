"""Issue 48: an admin's drain set at any moment of a repair is kept, reason unchanged, and the repair stops. Each
repair below (a reboot, with a job ahead of it, and a reset that fails to a reboot) is played once without the admin,
its passes counted; then once for each pass, with the admin's drain set just before it, on each release's Slurm (a
withdrawn reboot lifts the drain with it on each; 22.05's ASAP would resume the node at its registration). From the
admin's drain on, the loop asks Slurm nothing but to withdraw its reboot and to set the drain that lifted again, and
at the end the node is drained with the admin's reason, no reboot is pending, and the repair has ended."""

from __future__ import annotations

import pytest
from repair.standin import XID48, XID79, bench

from clusterforge.slurm import drains, reservations

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


def reboot_beside_a_waiting_job(b, step: int) -> None:
    """The reboot, with a job waiting for gpu01 that fits beside the running one (a CPU of two): the node's drain
    keeps it waiting, and the loop's withdrawal of its reboot, which lifts the drain, must not let it start."""
    if step == 0:
        b.slurm.place("alice", ["gpu01"], 60, cpus=1, gpus=(0,))
        b.health_drains("gpu01", XID79)
        b.by_others("sbatch", "--nodelist=gpu01", "--cpus-per-task=1", f"--job-name={WAITING}",
                    "--output=/dev/null", "--wrap=true")


WAITING = "bob-waits"
SCENARIOS = {"reboot": reboot, "reset refused, then reboot": reset_refused,
             "reboot beside a waiting job": reboot_beside_a_waiting_job}


def play(tmp_path, scenario, admin_at: int | None, release: str = "26.05"):
    """The bench, what the loop asked from the admin's drain on, how many repairs had ended before it, and whether
    Slurm issued the loop's reboot after the admin's drain and before the loop's next pass."""
    b = bench(tmp_path)
    b.slurm.release = release
    b.slurm.reboot_s = 40
    asked_after: list[list[str]] = []
    issued_after = False
    for step in range(PASSES):
        if admin_at is None or step < admin_at:
            scenario(b, step)   # the health check's doing, until the admin takes the node
        if step == admin_at:
            requested = "REBOOT_REQUESTED" in b.node("gpu01").flags
            b.admin(*drains.drain_argv("gpu01", ADMIN))
            waiting = [j for j in b.slurm.jobs.values() if j.name == WAITING and j.started is None]
            mark = len(b.asked())
            ended = len(b.loop.store.history())
            # Slurm's clock moves on before the loop's next pass: a registration in between keeps the admin's drain
            # (the loop's reboot asks no next state).
            b.advance(15)
            issued_after = requested and "REBOOT_REQUESTED" not in b.node("gpu01").flags
            b.loop.one_pass()
        else:
            b.tick(15)
        if admin_at is not None and step >= admin_at:
            asked_after = b.asked()[mark:]
    if admin_at is not None:
        # A job waiting when the admin drained the node is waiting still: nothing the loop did let it start.
        assert [j.job_id for j in waiting if j.started is not None] == [], [(j.job_id, j.started) for j in waiting]
    return b, asked_after, (ended if admin_at is not None else 0), issued_after


@pytest.mark.parametrize("name", SCENARIOS)
def test_without_the_admin_the_node_returns(tmp_path, name):
    b, _, _, _ = play(tmp_path, SCENARIOS[name], None)
    assert b.loop.store.history()[-1]["outcome"] == "back in service"
    assert b.node("gpu01").reason == "" and "DRAIN" not in b.node("gpu01").flags


@pytest.mark.parametrize("release", ["22.05", "24.11", "26.05"])
@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("admin_at", range(1, 16))
def test_an_admins_drain_at_any_pass_is_kept_and_stops_the_repair(tmp_path, name, admin_at, release):
    b, asked, ended, issued_after = play(tmp_path / str(admin_at), SCENARIOS[name], admin_at, release)
    allowed = (reservations.guard_argv("gpu01"), drains.cancel_reboot_argv("gpu01"),
               drains.drain_argv("gpu01", ADMIN), reservations.delete_argv(reservations.guard_name("gpu01")))
    assert [a for a in asked if a not in allowed] == [], asked
    node = b.node("gpu01")
    # A reboot Slurm issued between the admin's drain and the loop's next pass cannot be withdrawn: Slurm says so in
    # their reason, as for any reboot (set_node_reason), and the loop leaves that as it is.
    theirs = ADMIN + (" : reboot issued" if issued_after else "")
    assert node.reason == theirs and "DRAIN" in node.flags, (node.reason, node.flags)
    assert not {"REBOOT_REQUESTED", "REBOOT_ISSUED"} & node.flags
    assert b.loop.store.node("gpu01").repair is None
    # The repair under way stops; one ended before the admin's drain is not touched by it.
    outcomes = [h["outcome"] for h in b.loop.store.history()[ended:]]
    assert outcomes in ([], ["stopped, the node left as it is: drained by another during its repair: " + theirs],
                        ["stopped, the node left as it is: drained by another: " + theirs]), outcomes


class Killed(BaseException):
    """The loop's process killed: nothing of it runs on."""


@pytest.mark.parametrize("killed_after", ["create", "cancel_reboot", "update"])
def test_a_loop_killed_while_it_withdraws_its_reboot_keeps_the_admins_drain_at_its_next_pass(tmp_path, killed_after):
    """Killed once slurmctld took the guard, the withdrawal, or the drain set again: the loop that starts next
    withdraws what is left to withdraw, sets the admin's drain where it was lifted, and stops the repair. The guard,
    where it was not deleted, ends on its own within its minutes."""
    b = bench(tmp_path)
    b.slurm.place("alice", ["gpu01"], 600, cpus=1, gpus=(0,))
    b.health_drains("gpu01", XID79)
    b.by_others("sbatch", "--nodelist=gpu01", "--cpus-per-task=1", f"--job-name={WAITING}",
               "--output=/dev/null", "--wrap=true")
    b.tick(15, passes=3)
    assert "REBOOT_REQUESTED" in b.node("gpu01").flags and b.node("gpu01").reason.startswith("cf:repair:reboot ")
    b.admin(*drains.drain_argv("gpu01", ADMIN))
    run = b.loop.run

    def killed(argv, timeout):
        answer = run(argv, timeout)
        if argv[1:2] == [killed_after]:
            raise Killed
        return answer
    b.loop.run = killed
    with pytest.raises(Killed):
        b.loop.one_pass()
    b.loop.run = run
    b.tick(15, passes=2)
    node = b.node("gpu01")
    assert (node.reason, "DRAIN" in node.flags) == (ADMIN, True)
    assert not {"REBOOT_REQUESTED", "REBOOT_ISSUED"} & node.flags
    assert [j.started for j in b.slurm.jobs.values() if j.name == WAITING] == [None]
    assert reservations.guard_name("gpu01") not in b.slurm.reservations
    assert b.loop.store.node("gpu01").repair is None
    assert b.loop.store.history()[-1]["outcome"] == ("stopped, the node left as it is: drained by another during its "
                                                     f"repair: {ADMIN}")
