"""What `clusterforge plan` prints and exits with, from the file a planning deploy writes (engine/planning.py)."""

from __future__ import annotations

import json

import pytest

from clusterforge.cli.plan_report import INCOMPLETE, LAYOUT, NOTHING, PENDING, parse, render
from clusterforge.errors import ClusterforgeError

FILE = {"operation": "Slurm files | /etc/slurm/slurm.conf", "lines": ["/etc/slurm/slurm.conf: changed"],
        "diff": "--- a\n+++ b\n@@ -1 +1 @@\n-A=1\n+A=2\n"}
RECONFIGURE = {"operation": "slurmctld | scontrol reconfigure", "lines": ["run: scontrol reconfigure"]}


def written(hosts: dict, planned: list[str], unreachable: list[str] = (), drain: list[str] = (),
            jobs: list[str] = ()) -> str:
    return json.dumps({"layout": LAYOUT, "planned": planned, "unreachable": list(unreachable), "hosts": hosts,
                       "drain": list(drain), "drain_jobs": list(jobs)})


def test_hosts_that_would_do_the_same_are_shown_once_with_their_diff():
    report = parse(written({"ctl": [FILE, RECONFIGURE], "gpu01": [FILE], "gpu02": [FILE]},
                           ["ctl", "gpu01", "gpu02", "login1"]))
    text = render(report)
    assert text.count("Slurm files | /etc/slurm/slurm.conf") == 2  # ctl's list differs from the nodes'
    assert "gpu01, gpu02: 1 to do" in text and "ctl: 2 to do" in text and "login1: nothing to do" in text
    assert "      +A=2" in text
    assert text.endswith("Plan: 4 changes on 3 of 4 hosts.")
    assert report.exit_code(detailed=True) == PENDING == 2
    assert report.exit_code(detailed=False) == NOTHING == 0  # terraform plan's success, changes or not


def test_nothing_to_do_exits_0():
    report = parse(written({}, ["ctl", "gpu01"]))
    assert report.exit_code(detailed=True) == report.exit_code(detailed=False) == NOTHING
    assert render(report, hosts=lambda names: "+".join(names)) == "ctl+gpu01: nothing to do\n\nPlan: nothing to do " \
                                                                  "on 2 hosts."


def test_an_unreachable_host_makes_the_plan_incomplete_whatever_the_rest():
    report = parse(written({"gpu01": [FILE]}, ["gpu01"], unreachable=["gpu02"]))
    assert report.exit_code(detailed=True) == report.exit_code(detailed=False) == INCOMPLETE == 1
    assert "gpu02: COULD NOT BE REACHED, not planned" in render(report)
    assert "gpu02: COULD NOT BE REACHED, not planned (Could not connect (timed out))" in \
        render(report, reasons={"gpu02": "Could not connect (timed out)"})
    assert "1 could not be reached (gpu02)" in render(report)


def test_nodes_to_drain_are_changes_and_name_their_jobs():
    report = parse(written({}, ["ctl"], drain=["gpu05"], jobs=["41 alice gpu05"]))
    assert report.exit_code(detailed=True) == PENDING
    assert render(report).startswith("Nodes removed from the inventory, to drain first: gpu05; jobs there now: 41 "
                                     "alice gpu05. The deploy would drain it and stop, changing nothing, until these "
                                     "jobs end (--data drain_wait=SECONDS waits for them)")


def test_a_file_of_another_layout_is_refused():
    with pytest.raises(ClusterforgeError, match="another version"):
        parse(json.dumps({"layout": LAYOUT + 1, "planned": [], "hosts": {}}))


def test_a_note_is_shown_and_is_no_change():
    body = json.loads(written({}, ["ctl"]))
    report = parse(json.dumps({**body, "notes": ["ctl: left in the accounting database ...: user carol"]}))
    assert report.exit_code(detailed=True) == NOTHING
    assert "Note, the deploy changes nothing here: ctl: left in the accounting database ...: user carol" in \
        render(report)
