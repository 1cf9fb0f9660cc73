"""Issue 46, 8: the gate's own holds are told by what the gate gives them, not by a name anyone may give a
reservation. Turning admission off (roles/gate.py runs reservations.release_all_command on the controller) deletes
the gate's holds and nothing else; the gate, check, the exporter and `admit` see the same holds
(reservations.held). Slurm is its stand-in (tests/slurm_standin), the command run by a real shell with its scontrol
(tests/realslurm/test_gate_boundary.py runs it on the real slurmctld): the gate's hold, as reservations.create_argv
makes it, and an admin's reservations bearing a hold's name."""

from __future__ import annotations

from slurm_standin import Slurm

from clusterforge.slurm import reservations

GATES = "cf-gate-new-gpu-b02"
ADMINS = [
    # an admin's, for alice's acceptance run, named as a hold
    ["ReservationName=cf-gate-new-gpu-b03", "Nodes=gpu-b03", "Users=alice", "Flags=MAINT,IGNORE_JOBS"],
    # root's, named for one node, holding two
    ["ReservationName=cf-gate-repaired-gpu-b04", "Nodes=gpu-b[04-05]", "Users=root", "Flags=MAINT,IGNORE_JOBS"],
    # root's, no MAINT: no hold at all
    ["ReservationName=cf-gate-new-gpu-b06", "Nodes=gpu-b06", "Users=root"],
    # not named as one
    ["ReservationName=site-maintenance", "Nodes=gpu-b02", "Users=root", "Flags=MAINT,IGNORE_JOBS"],
]


def cluster() -> Slurm:
    slurm = Slurm.of([f"gpu-b0{n}" for n in range(2, 7)])
    for argv in (reservations.create_argv(GATES, "gpu-b02"),
                 *(["scontrol", "create", "reservation", "StartTime=now", "Duration=infinite", *a] for a in ADMINS)):
        assert slurm.run(argv).ok, argv
    slurm.asked.clear()
    return slurm


def test_admission_off_deletes_the_gates_holds_and_no_reservation_that_only_bears_the_name():
    slurm = cluster()
    listing = slurm.run(reservations.show_argv()).out
    done = slurm.shell(reservations.release_all_command())
    assert done.rc == 0, done.err
    assert [a for a in slurm.asked if a[1] == "delete"] == [["scontrol", "delete", f"ReservationName={GATES}"]]
    assert sorted(slurm.reservations) == sorted(a[0].removeprefix("ReservationName=") for a in ADMINS)
    # What the gate, check, the exporter and admit take for holds: the same one.
    assert reservations.held(reservations.parse_reservations(listing)) == {"gpu-b02": "new"}


def test_a_listing_slurmctld_does_not_answer_deletes_nothing_and_fails():
    slurm = cluster()
    slurm.down = True
    done = slurm.shell(reservations.release_all_command())
    assert done.rc != 0
    assert len(slurm.reservations) == 1 + len(ADMINS)  # nothing deleted
