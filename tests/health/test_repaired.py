"""The repaired hold (health/repaired.py), through the node health program as the deploy ships it (tests/health_node.py;
tests/health/test_program.py says how its stand-ins behave): a node of a profile with admission that held hardware
faults in an earlier boot is held by the gate, in cf-gate-repaired-<node>, from the first check of its new boot, which
slurmd runs before the node registers. slurmctld, its reservations with it, is the one Slurm stand-in's
(tests/slurm_standin)."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from health_node import Node

from clusterforge.slurm.commands import Answer

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the extra kernel-log source must be root's (CI is root)")

XID79 = "NVRM: Xid (PCI:0000:5d:00): 79, pid=1912, GPU has fallen off the bus."    # gpu3, until a reboot
XID95 = "NVRM: Xid (PCI:0000:5d:00): 95, pid=3434, Uncontained memory error"        # gpu3, until a reset
HOLD = "cf-gate-repaired-gpu01"


@pytest.fixture
def node(tmp_path):
    node = Node(tmp_path)
    node.expect = replace(node.expect, admission=True)
    return node


def reservations(node: Node) -> list[str]:
    return node.reservations


def creates(node: Node) -> list[str]:
    return [line for line in node.asked if line.startswith("scontrol create")]


CREATE = "scontrol create reservation"


def refuse_reservations(node: Node) -> None:
    """slurmctld answers, and refuses every reservation (slurm_errno.c's words)."""
    with node.controller() as slurm:
        slurm.refuse[CREATE] = Answer(
            1, "", "Error creating the reservation: Requested node configuration is not available\n")


def held_faults(node: Node) -> dict:
    return json.loads((node.state_dir / "held-faults.json").read_text())


def test_a_node_back_from_a_hardware_fault_is_held_by_the_gate_from_the_first_check_of_its_new_boot(node):
    node.kernel(XID79)
    node.run()
    assert node.reason.startswith("cf:gpu:xid79 gpu3") and reservations(node) == []   # not in the faulty boot
    node.reboot()
    done = node.run()
    assert done.returncode == 0, done.stdout
    assert (f"held gpu01 in {HOLD} until it passes its acceptance: back from a boot with cf:gpu:xid79 gpu3"
            in done.stdout)
    assert reservations(node) == [HOLD]
    assert creates(node) == [f"scontrol create reservation ReservationName={HOLD} StartTime=now Duration=infinite "
                             "Users=root Flags=MAINT,IGNORE_JOBS Nodes=gpu01"]
    assert node.state == "IDLE"   # the health check's own drain is lifted: the gate tests the node inside its hold
    assert held_faults(node) == {"boot": "boot-2", "faults": []}   # forgotten once held
    node.run()
    node.run()
    assert len(creates(node)) == 1   # once a boot


def test_the_hold_is_created_before_the_node_registers_after_a_reboot_through_slurm(node):
    node.kernel(XID79)
    node.run()
    node.reboot()
    drains = node.updates
    # The check at slurmd's start, before registration: Slurm still says the reboot is under way.
    node.set(state="DOWN+DRAIN+REBOOT_ISSUED", reason="Reboot ASAP : reboot issued")
    node.run()
    assert reservations(node) == [HOLD]
    assert node.updates == drains   # healthy now: nothing else asked of the node's state


def test_a_hold_that_exists_already_is_taken_as_made_and_the_faults_forgotten(node):
    # A check killed between creating the hold and forgetting the faults: the next one finds the hold made.
    node.kernel(XID79)
    node.run()
    node.reboot()
    node.reserve(HOLD)
    done = node.run()
    assert f"held gpu01 in {HOLD}" in done.stdout
    assert reservations(node) == [HOLD] and held_faults(node)["faults"] == []


def test_a_controller_that_does_not_answer_leaves_the_faults_for_the_next_check_which_holds_the_node(node):
    node.kernel(XID79)
    node.run()
    node.reboot()
    with node.controller() as slurm:
        slurm.down = True
    done = node.run()
    assert done.returncode == 1
    assert "could not hold gpu01 for the admission gate: scontrol exit 1: Error creating the reservation: Unable to " \
           "contact slurm controller (connect failure); the next check tries again" in done.stdout
    assert held_faults(node)["boot"] == "boot-1"   # kept: what the hold is made of
    # scontrol says "Error creating the reservation" here too, yet slurmctld refused nothing: no drain for it
    assert "not made" not in done.stdout and not [u for u in node.updates if "cf:check:hold" in u]
    with node.controller() as slurm:
        slurm.down = False
    node.run()
    assert reservations(node) == [HOLD] and held_faults(node) == {"boot": "boot-2", "faults": []}


def test_without_admission_no_node_is_held_and_the_old_boots_faults_are_forgotten(node):
    node.expect = replace(node.expect, admission=False)
    node.kernel(XID79)
    node.run()
    node.reboot()
    node.run()
    assert reservations(node) == [] and not creates(node)
    assert node.state == "IDLE"
    # Admission turned on later holds no node for a fault of a boot long past.
    node.expect = replace(node.expect, admission=True)
    node.reboot()
    node.run()
    assert reservations(node) == []


def test_a_boot_without_hardware_faults_holds_nothing(node):
    node.kernel("NVRM: Xid (PCI:0000:18:00): 13, pid=7, Graphics SM Warp Exception")   # the application's
    node.run()
    node.reboot()
    node.run()
    assert reservations(node) == []


def test_a_fault_a_reset_of_its_gpu_ended_holds_nothing_after_a_later_reboot(node):
    node.kernel(XID95)
    node.run()
    node.run("reset", "gpu3")
    assert node.state == "IDLE"
    node.reboot()
    node.run()
    assert reservations(node) == []


def test_a_fault_seen_while_an_admin_held_the_node_holds_it_repaired_and_the_admins_drain_stays(node):
    node.set(state="IDLE+DRAIN", reason="disk swap")
    node.kernel(XID79)
    node.run()
    node.reboot()
    node.run()
    assert reservations(node) == [HOLD]
    assert (node.state, node.reason, node.updates) == ("IDLE+DRAIN", "disk swap", [])


def test_a_hardware_fault_again_in_the_new_boot_drains_the_node_inside_its_hold(node):
    node.kernel(XID79)
    node.run()
    node.reboot()
    node.kernel(XID79)
    done = node.run()
    assert reservations(node) == [HOLD]
    assert node.reason.startswith("cf:gpu:xid79 gpu3") and done.returncode == 1
    assert [f["reason"][:17] for f in held_faults(node)["faults"]] == ["cf:gpu:xid79 gpu3"]   # this boot's, held


def test_a_hold_slurmctld_refuses_keeps_the_node_drained_until_the_hold_is_made(node):
    # Before, the node registered unheld and took users' jobs at once, its repair untested.
    node.kernel(XID79)
    node.run()
    node.reboot()
    refuse_reservations(node)
    done = node.run()
    assert done.returncode == 1 and reservations(node) == []
    assert node.reason.startswith(f"cf:check:hold {HOLD} not made: Requested node configuration is not available"), \
        done.stdout
    assert "DRAIN" in node.state
    assert held_faults(node)["boot"] == "boot-1"   # kept: the hold is tried again at every check
    node.run()
    assert "DRAIN" in node.state and reservations(node) == []
    with node.controller() as slurm:
        del slurm.refuse[CREATE]
    done = node.run()
    assert reservations(node) == [HOLD] and held_faults(node) == {"boot": "boot-2", "faults": []}
    assert node.state.split("+")[0] == "IDLE" and "DRAIN" not in node.state, done.stdout  # in its hold, for the gate


def test_a_refused_hold_leaves_an_admins_drain_as_it_is(node):
    node.kernel(XID79)
    node.run()
    node.reboot()
    node.set(state="IDLE+DRAIN", reason="disk swap")
    before = node.updates
    refuse_reservations(node)
    node.run()
    assert (node.state, node.reason, node.updates) == ("IDLE+DRAIN", "disk swap", before)
