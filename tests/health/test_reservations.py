"""reservations.py: the gate's holds, their names and commands, and the reading of `scontrol show reservation` as
22.05, 24.11 and 26.05 print it (captured from the real-Slurm tier, tests/health/fixtures; the commands run against
the real slurmctld in tests/realslurm/test_reservations.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.slurm import reservations
from clusterforge.slurm.parse import ParseError
from clusterforge.slurm.reservations import Reservation

FIXTURES = Path(__file__).parent / "fixtures"


def test_a_hold_is_named_for_its_cause_and_node_and_read_back():
    assert reservations.name("new", "gpu-b02") == "cf-gate-new-gpu-b02"
    assert reservations.name("repaired", "gpu01") == "cf-gate-repaired-gpu01"
    assert reservations.parse_name("cf-gate-new-gpu-b02") == ("new", "gpu-b02")
    assert reservations.parse_name("cf-gate-repaired-gpu01") == ("repaired", "gpu01")
    for someone_elses in ("admin_fw", "cf-gate-", "cf-gate-new", "cf-gate-new-", "cf-gate-broken-gpu01",
                          "cf-gate-new-gpu[01-02]", "xcf-gate-new-gpu01"):
        assert reservations.parse_name(someone_elses) is None, someone_elses


@pytest.mark.parametrize(("cause", "node", "message"), [
    ("fixed", "gpu01", "new or repaired, not 'fixed'"), ("new", "gpu[01-02]", "not one node's name: 'gpu[01-02]'"),
    ("new", "", "not one node's name: ''"), ("new", "gpu01,gpu02", "not one node's name")])
def test_a_hold_for_anything_but_one_node_and_a_known_cause_is_refused(cause, node, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        reservations.name(cause, node)


def test_the_commands():
    assert reservations.create_argv("cf-gate-new-gpu01", "gpu01") == [
        "scontrol", "create", "reservation", "ReservationName=cf-gate-new-gpu01", "StartTime=now",
        "Duration=infinite", "Users=root", "Flags=MAINT,IGNORE_JOBS", "Nodes=gpu01"]
    assert reservations.delete_argv("cf-gate-new-gpu01") == ["scontrol", "delete",
                                                              "ReservationName=cf-gate-new-gpu01"]
    assert reservations.create_command("cf-gate-new-gpu01", "gpu01") == (
        "scontrol show reservation cf-gate-new-gpu01 >/dev/null 2>&1 || scontrol create reservation "
        "ReservationName=cf-gate-new-gpu01 StartTime=now Duration=infinite Users=root Flags=MAINT,IGNORE_JOBS "
        "Nodes=gpu01")


@pytest.mark.parametrize("release", ["22.05", "24.11", "26.05"])
def test_each_releases_output_is_read_the_same(release):
    text = (FIXTURES / f"scontrol-show-reservation-{release}.txt").read_text()
    found = reservations.parse_reservations(text)
    assert found == [
        Reservation("cf-gate-new-gpu-b02", "gpu-b02", frozenset({"MAINT", "IGNORE_JOBS", "SPEC_NODES"}), "root",
                    "ACTIVE"),
        Reservation("admin_fw", "gpu01,gpu-b02", frozenset({"MAINT", "SPEC_NODES"}), "root", "ACTIVE")]
    # -o prints each record on one line: the same reservations
    one_line = "\n".join(" ".join(block.split()) for block in text.strip().split("\n\n")) + "\n"
    assert reservations.parse_reservations(one_line) == found
    assert reservations.held(found) == {"gpu-b02": "new"}


def test_no_reservation_is_an_empty_list_and_anything_else_is_refused():
    assert reservations.parse_reservations("No reservations in the system\n") == []
    for not_it in ("", "slurm_load_reservations error: Unable to contact slurm controller (connect failure)",
                   "Reservation cf-gate-new-gpu01 not found", "NodeName=gpu01 State=IDLE",
                   "ReservationName=x StartTime=now", "junk ReservationName=x Nodes=a Flags=MAINT"):
        with pytest.raises(ParseError):
            reservations.parse_reservations(not_it)


def test_held_names_each_gate_node_once_new_before_repaired():
    def hold(name: str) -> Reservation:
        return Reservation(name, name.rsplit("-", 1)[-1], frozenset({"MAINT"}), "root", "ACTIVE")
    found = [hold("cf-gate-repaired-gpu03"), hold("cf-gate-repaired-gpu01"), hold("cf-gate-new-gpu01"),
             hold("maint-gpu02"), hold("cf-gate-new-gpu04"), hold("cf-gate-repaired-gpu04")]
    assert reservations.held(found) == {"gpu01": "new", "gpu03": "repaired", "gpu04": "new"}
    assert list(reservations.held(found)) == ["gpu01", "gpu03", "gpu04"]


@pytest.mark.parametrize(("hostlist", "listed", "not_listed"), [
    ("gpu01", ["gpu01"], ["gpu1", "gpu010", "gpu02"]),
    ("gpu01,gpu-b02", ["gpu01", "gpu-b02"], ["gpu-b0", "gpu02"]),
    ("gpu[01-04,07]", ["gpu01", "gpu03", "gpu04", "gpu07"], ["gpu05", "gpu1", "gpu001", "gpu[01-04,07]", "cpu01"]),
    ("gpu[1-10]", ["gpu1", "gpu9", "gpu10"], ["gpu01", "gpu11", "gpu0"]),
    ("gpu[098-101]", ["gpu098", "gpu099", "gpu100", "gpu101"], ["gpu98", "gpu102", "gpu097"]),
    ("r[1-2]-gpu[01-08],cpu[1-2]", ["r1-gpu01", "r2-gpu08", "cpu2"], ["r3-gpu01", "r1-gpu09", "r1-gpu1"]),
    ("gpu[1-2]-ib", ["gpu1-ib", "gpu2-ib"], ["gpu1", "gpu3-ib"]),
])
def test_a_reservations_nodes_are_read_as_slurm_expands_them(hostlist, listed, not_listed):
    for node in listed:
        assert reservations.lists(hostlist, node), (hostlist, node)
    for node in not_listed:
        assert not reservations.lists(hostlist, node), (hostlist, node)


@pytest.mark.parametrize("hostlist", ["gpu[01-02", "gpu01-02]", "gpu[a-b]", "gpu[[01-02]]", "gpu[01-]"])
def test_what_is_not_a_hostlist_is_refused(hostlist):
    with pytest.raises(ParseError):
        reservations.lists(hostlist, "gpu01")


def maint(name: str, nodes: str, flags: str = "MAINT", state: str = "ACTIVE") -> Reservation:
    return Reservation(name, nodes, frozenset(flags.split(",")), "root", state)


HOLD = maint("cf-gate-repaired-gpu01", "gpu01", "MAINT,IGNORE_JOBS,SPEC_NODES")


def test_the_gates_hold_is_the_nodes_maintenance_only_where_no_one_elses_names_the_node():
    assert reservations.gate_hold([HOLD], "gpu01") == "cf-gate-repaired-gpu01"
    assert reservations.gate_hold([maint("cf-gate-new-gpu01", "gpu01"), maint("admin_fw", "gpu[02-04]")],
                                  "gpu01") == "cf-gate-new-gpu01"
    # Held by no one else: a reservation without MAINT, one not started yet, another node's hold.
    assert reservations.gate_hold([HOLD, maint("plain", "gpu01", "SPEC_NODES"),
                                   maint("later", "gpu[01-02]", state="INACTIVE"),
                                   maint("cf-gate-new-gpu02", "gpu02")], "gpu01") == "cf-gate-repaired-gpu01"
    # An admin's maintenance, alone or over the hold, or one whose nodes cannot be read: the node is another's.
    for others in ([maint("admin_fw", "gpu[01-02]")], [HOLD, maint("admin_fw", "gpu[01-02]")],
                   [HOLD, maint("odd", "gpu[01")], [maint("cf-gate-new-gpu02", "gpu[01-02]"), HOLD]):
        assert reservations.gate_hold(others, "gpu01") is None, others
    # No hold at all (deleted since the node showed maintenance), or another node's.
    assert reservations.gate_hold([], "gpu01") is None
    assert reservations.gate_hold([maint("cf-gate-new-gpu02", "gpu02")], "gpu01") is None
    assert reservations.gate_hold([maint("cf-gate-new-gpu01", "gpu01", state="INACTIVE")], "gpu01") is None
