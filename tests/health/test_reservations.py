"""reservations.py: the gate's holds, their names and commands, and the reading of `scontrol show reservation` as
22.05, 24.11 and 26.05 print it (captured from the real-Slurm tier, tests/health/fixtures; the commands run against
the real slurmctld in tests/realslurm/test_reservations.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.health import reservations
from clusterforge.health.parse import ParseError
from clusterforge.health.reservations import Reservation

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
