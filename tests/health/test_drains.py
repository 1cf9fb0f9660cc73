"""drains.py: whose drain a reason is, and the controller's commands that set and lift clusterforge's drains, run by
a real shell against the one Slurm stand-in (tests/slurm_standin): each node held as slurmctld holds it, sinfo and
scontrol answering from it (the controller's real Slurm is tests/e2e's and tests/realslurm's business)."""

from __future__ import annotations

import re

from slurm_standin import Partition, Reservation, Slurm, events
from slurm_standin import Node as Held   # a node as slurmctld holds it: base state, flags, reason

from clusterforge.slurm import drains
from clusterforge.slurm.drains import REMOVED, Drain, parse_reason
from clusterforge.slurm.nodes import Node, parse_node, parse_sinfo


def test_a_reason_says_who_set_it():
    assert Drain("gpu", "xid79", "gpu3 0000:9b:00.0").reason == "cf:gpu:xid79 gpu3 0000:9b:00.0"
    assert parse_reason("cf:gpu:xid79 gpu3 0000:9b:00.0") == Drain("gpu", "xid79", "gpu3 0000:9b:00.0")
    assert parse_reason(REMOVED.reason) == REMOVED
    assert parse_reason("clusterforge: removed from inventory").cause == "removed"  # before the cf: format
    # as `scontrol show node` (clusterforge check) prints a reason: who set it and when
    assert parse_reason("clusterforge: removed from inventory [root@2026-11-22T23:40:00]").cause == "removed"
    assert parse_reason("cf:removed from the inventory [root@2026-11-22T23:40:00]").cause == "removed"
    assert parse_reason("clusterforge: removed from inventory, says the admin") is None
    for someone_elses in ("admin: fan", "Kill task failed", "Not responding", "cf", "cf:", " disk swap cf:gpu", ""):
        assert parse_reason(someone_elses) is None, someone_elses


def test_only_a_drain_of_clusterforge_for_that_cause_and_nothing_else_is_resumable():
    ours = REMOVED.reason
    assert Node("n", "drained", ours).resumable_for("removed")
    assert Node("n", "draining", ours).resumable_for("removed")
    assert not Node("n", "drained", ours).resumable_for("gpu")
    assert not Node("n", "drained", "admin: fan").resumable_for("removed")
    for state in ("down", "down*", "drained*", "fail", "maint", "idle"):
        assert not Node("n", state, ours).resumable_for("removed"), state


def test_sinfo_lines_become_one_state_per_node():
    lines = ["gpu01|drained|admin: fan|", "gpu01|drained|admin: fan|", "gpu02|draining|cf:removed from the inventory|",
             "gpu03|idle|none|", ""]
    fields = ("NodeList", "StateLong", "Reason")
    assert parse_sinfo("\n".join(lines), fields) == [Node("gpu01", "drained", "admin: fan"),
                                                     Node("gpu02", "draining", "cf:removed from the inventory"),
                                                     Node("gpu03", "idle", "")]


HOUR = 3600
OURS = REMOVED.reason


def cluster(**nodes: Held) -> Slurm:
    """The nodes, each in the state given, in one partition."""
    return Slurm(nodes, {"all": Partition(list(nodes), default=True)})


def drained(reason: str) -> Held:
    return Held(flags={"DRAIN"}, reason=reason)


def running(slurm: Slurm, name: str, cpus: int | None = None) -> None:
    """A user's job on the node for the hour: ALLOCATED, or MIXED on ``cpus`` of its 2 (draining where drained)."""
    slurm.place("alice", [name], HOUR, cpus=cpus)


def listed(slurm: Slurm) -> dict[str, str]:
    """Each node's "state|reason" as sinfo lists it: the long state (node_state_string) and the reason, "none" for
    none."""
    out = slurm.run(["sinfo", "--noheader", "--Node", "--format=%N|%T|%E"]).out
    return {name: rest for name, _, rest in (line.partition("|") for line in out.splitlines())}


def run(slurm: Slurm, command: str, refused: tuple[str, ...] = ()) -> list[str]:
    """``command`` run by the controller's shell, slurmctld refusing to update the nodes ``refused``: it fails
    exactly where one was refused, naming each. What scontrol was asked (scontrol_asked)."""
    slurm.refuse_nodes = set(refused)
    done = slurm.shell(command)
    assert done.rc == (1 if refused else 0), done.err
    for name in refused:
        assert re.search(rf"slurmctld refused to (lift the drain of|drain) {name}$", done.err, re.MULTILINE)
    return scontrol_asked(slurm)


def scontrol_asked(slurm: Slurm) -> list[str]:
    """What scontrol was asked, without the word scontrol (its words joined by spaces)."""
    return [" ".join(argv[1:]) for argv in slurm.asked if argv[0] == "scontrol"]


def test_the_resume_reads_the_reason_again_and_lifts_only_its_own():
    slurm = cluster(gpu01=drained(OURS), gpu02=drained("clusterforge: removed from inventory"),
                    gpu03=drained("admin: fan"),          # an admin took it over meanwhile
                    gpu04=drained(OURS),
                    gpu05=drained("cf:gpu:xid79 gpu3"),   # another cause
                    gpu06=drained("cf:removedx"))
    running(slurm, "gpu02")
    # Slurm finds gpu04 not responding: DOWN, still drained, its reason appended to (set_node_down_ptr), so sinfo
    # lists it "drained*" (a drained node is never "down*" in node_state_string).
    events.not_responding(slurm, "gpu04")
    before = listed(slurm)
    assert before == {"gpu01": f"drained|{OURS}", "gpu02": "draining|clusterforge: removed from inventory",
                      "gpu03": "drained|admin: fan", "gpu04": f"drained*|{OURS} : Not responding",
                      "gpu05": "drained|cf:gpu:xid79 gpu3", "gpu06": "drained|cf:removedx"}
    asked = run(slurm, drains.resume_command(["gpu01", "gpu02", "gpu03", "gpu04", "gpu05", "gpu06"], "removed"))
    assert asked == ['update NodeName=gpu01 State=UNDRAIN', 'update NodeName=gpu02 State=UNDRAIN']
    slurm.advance(1)   # the undrained nodes register again, as slurmctld asks them to (NOT_RESPONDING until then)
    assert listed(slurm) == {**before, "gpu01": "idle|none", "gpu02": "allocated|none"}


def test_a_lift_slurmctld_refuses_fails_the_command_after_the_others_were_tried():
    slurm = cluster(gpu01=drained(OURS), gpu02=drained(OURS))
    asked = run(slurm, drains.resume_command(["gpu01", "gpu02"], "removed"), refused=("gpu01",))
    assert asked == ['update NodeName=gpu01 State=UNDRAIN', 'update NodeName=gpu02 State=UNDRAIN']
    slurm.advance(1)
    assert listed(slurm) == {"gpu01": f"drained|{OURS}", "gpu02": "idle|none"}


def test_the_drain_leaves_a_node_alone_that_is_drained_or_down_already():
    slurm = cluster(gpu01=Held(), gpu02=drained("admin: fan"), gpu03=Held())
    events.not_responding(slurm, "gpu03")
    assert listed(slurm) == {"gpu01": "idle|none", "gpu02": "drained|admin: fan", "gpu03": "down*|Not responding"}
    asked = run(slurm, drains.drain_command("gpu[01-03]", REMOVED))
    assert asked == [f"update NodeName=gpu01 State=DRAIN Reason={OURS}"]
    assert listed(slurm) == {"gpu01": f"drained|{OURS}", "gpu02": "drained|admin: fan",
                             "gpu03": "down*|Not responding"}


def test_the_drain_leaves_a_node_alone_that_is_rebooting_or_in_maintenance():
    # sinfo prints "reboot" before "drain": a node drained with a reboot asked (found by the real-Slurm interleavings,
    # whose drain relabelled it) shows as rebooting, not drained.
    slurm = cluster(gpu01=Held(flags={"DRAIN", "REBOOT_REQUESTED"}, reason="Reboot ASAP", next_state="RESUME"),
                    gpu02=Held(flags={"REBOOT_ISSUED"}), gpu03=Held(), gpu04=Held(),
                    gpu05=Held(flags={"REBOOT_REQUESTED"}), gpu06=Held())
    slurm.reservations["fw"] = Reservation("gpu03", "MAINT")
    # "$": in a maintenance reservation. An idle node there is "maint" (node_state_string never prints "idle$"), so
    # the "$" is a busy node's, under a reservation made over its job (IGNORE_JOBS: reservation.c's _job_overlap
    # refuses one over running jobs without it).
    slurm.reservations["fan"] = Reservation("gpu04", "MAINT,IGNORE_JOBS")
    for name in ("gpu04", "gpu05"):
        running(slurm, name, cpus=1)
    running(slurm, "gpu06")
    before = listed(slurm)
    assert before == {"gpu01": "reboot|Reboot ASAP", "gpu02": "reboot^|none", "gpu03": "maint|none",
                      "gpu04": "mixed$|none", "gpu05": "mixed@|none", "gpu06": "allocated|none"}
    asked = run(slurm, drains.drain_command("gpu[01-06]", REMOVED))
    assert asked == [f"update NodeName=gpu06 State=DRAIN Reason={OURS}"]
    assert listed(slurm) == {**before, "gpu06": f"draining|{OURS}"}


def test_a_drain_slurmctld_refuses_fails_the_command_after_the_others_were_tried():
    slurm = cluster(gpu01=Held(), gpu02=Held(), gpu03=Held())
    running(slurm, "gpu02", cpus=1)
    asked = run(slurm, drains.drain_command("gpu[01-03]", REMOVED), refused=("gpu01",))
    assert asked == [f"update NodeName=gpu0{i} State=DRAIN Reason={OURS}" for i in (1, 2, 3)]
    assert listed(slurm) == {"gpu01": "idle|none", "gpu02": f"draining|{OURS}", "gpu03": f"drained|{OURS}"}


def test_a_drain_whose_sinfo_fails_fails_and_ends_the_script_it_is_part_of():
    slurm = cluster(gpu01=Held(), gpu02=Held(), gpu03=Held())
    slurm.down = True   # slurmctld does not answer
    done = slurm.shell(drains.drain_command("gpu[01-03]", REMOVED) + "; echo after")
    assert done.rc == 1 and "after" not in done.out
    assert scontrol_asked(slurm) == []
    assert "sinfo could not list gpu[01-03]" in done.err and "Unable to contact" in done.err


def test_only_a_reboot_issued_is_one_whose_registration_lifts_a_drain():
    issued = parse_node("NodeName=gpu01 State=DOWN+DRAIN+REBOOT_ISSUED Reason=Reboot ASAP : reboot issued")
    requested = parse_node("NodeName=gpu01 State=MIXED+REBOOT_REQUESTED Reason=reboot requested")
    assert issued.rebooting and not requested.rebooting


def test_a_reboot_is_asked_only_for_nodes_clusterforge_holds_for_that_purpose():
    reboot = Drain("stack", "driver", "reboot into the new driver")
    moves = "cf:stack:driver moves to 550.127.08"
    slurm = cluster(gpu01=drained(moves),
                    gpu02=drained("RMA gpu3 (admin)"),             # an admin's: a reboot would lift it
                    gpu03=drained("cf:roll:reboot batch 1/2"),     # the roll's, for this very purpose
                    gpu04=drained("Kill task failed"),             # Slurm's own
                    gpu05=drained(moves),                          # and Slurm finds it not responding (below)
                    gpu06=drained("cf:gpu:xid79 gpu3"),            # the health check's: not this purpose
                    gpu07=Held(flags={"DRAIN", "REBOOT_REQUESTED"}, reason=reboot.reason,   # asked already
                               next_state="RESUME"),
                    gpu08=Held())                                  # nobody drained it: not rebooted either
    for name in ("gpu03", "gpu07"):
        running(slurm, name, cpus=1)
    events.not_responding(slurm, "gpu05")
    before = listed(slurm)
    assert before == {"gpu01": f"drained|{moves}", "gpu02": "drained|RMA gpu3 (admin)",
                      "gpu03": "draining|cf:roll:reboot batch 1/2", "gpu04": "drained|Kill task failed",
                      "gpu05": f"drained*|{moves} : Not responding", "gpu06": "drained|cf:gpu:xid79 gpu3",
                      "gpu07": f"draining@|{reboot.reason}", "gpu08": "idle|none"}
    asked = run(slurm, drains.reboot_command([f"gpu0{i}" for i in range(1, 9)], ("stack", "roll"), reboot))
    said = f"nextstate=resume reason={reboot.reason}"
    assert asked == [f"reboot ASAP {said} gpu01", f"reboot ASAP {said} gpu03"]
    # asked, not yet issued: gpu01 idle, gpu03 once its job ends; both with the reboot's reason meanwhile
    assert listed(slurm) == {**before, "gpu01": f"reboot|{reboot.reason}", "gpu03": f"draining@|{reboot.reason}"}


def test_a_node_held_by_another_is_named_and_left_as_it_is():
    slurm = cluster(gpu02=drained("RMA gpu3 (admin)"))
    done = slurm.shell(drains.reboot_command(["gpu02"], ("stack",), Drain("stack")))
    assert done.rc == 0 and scontrol_asked(slurm) == []
    assert done.out == "gpu02 left as it is: held by another (drained|RMA gpu3 (admin))\n"
    assert listed(slurm) == {"gpu02": "drained|RMA gpu3 (admin)"}


def test_who_holds_a_node_out_of_service():
    causes = ("stack", "roll")
    assert not Node("n", "drained", "cf:stack:driver moves to 550").held_by_another(causes)
    assert not Node("n", "draining", "cf:roll:reboot batch 1/3").held_by_another(causes)
    assert not Node("n", "idle", "").held_by_another(causes)
    assert not Node("n", "mixed", "").held_by_another(causes)
    for state, reason in (("drained", "RMA gpu3 (admin)"), ("drained", "cf:gpu:xid79 gpu3"),
                          ("down*", "Not responding"), ("down", "cf:stack:driver"), ("fail", "admin"),
                          ("maint", ""), ("reboot^", "")):
        assert Node("n", state, reason).held_by_another(causes), (state, reason)
