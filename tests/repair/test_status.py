"""The loop's --status on Slurm's stand-in: each repair under way with what it waits for and its deadline in UTC, the
quarantined nodes with how to lift them, the breaker, the last repairs ended (newest last); as JSON (--json) for
`clusterforge check`, bounded however long the history, and read back by the one reader beside its writer."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
from repair.standin import XID48, XID79, bench

from clusterforge.repair import main as repair_main
from clusterforge.repair import status
from clusterforge.repair.passes import close_breaker
from clusterforge.repair.store import Store


def said(b) -> str:
    return status.text(status.read(b.loop.store, float(b.slurm.now)))


def test_each_repair_under_way_with_its_next_step_and_deadline_then_quarantine_and_breaker(tmp_path):
    b = bench(tmp_path, attempts=1, breaker=0)
    b.health_drains("gpu01", XID79)
    b.tick()
    text = said(b)
    assert text.startswith("breaker: open since ")
    assert ": 1 nodes faulted within 3600 s, more than 0: gpu01; no new repair starts until an admin closes it " \
           "(clusterforge repair --close-breaker INVENTORY)" in text
    assert "under way:" not in text
    assert close_breaker(b.loop.store, float(b.slurm.now))
    b.tick()
    text = said(b)
    deadline = status.utc(b.loop.store.node("gpu01").repair.deadline)
    assert text.splitlines()[:2] == [
        "breaker: closed", "under way:"]
    assert text.splitlines()[2] == (
        f"  gpu01: reboot (attempt 1) for {XID79}; next: the node to register after Slurm's reboot (the node's jobs "
        f"end first), by {deadline} (in 900 s)")
    b.slurm.reboot_s = 10 ** 6
    b.tick(1000)
    text = said(b)
    assert "under way:" not in text
    assert ("quarantined (nothing automatic touches them; an admin's resume lifts it):\n"
            "  gpu01: cf:repair:quarantined xid79 1; scontrol update nodename=gpu01 state=resume\n") in text
    assert text.splitlines()[-1].startswith(f"  {status.utc(b.slurm.now)} gpu01: quarantined after 1 attempt(s) "
                                            f"({XID79}; reboot; ")


def test_a_deadline_passed_is_said_as_passed_and_a_wait_for_jobs_has_none():
    r = status.UnderWay("gpu01", XID79, "reboot", 1, "", 0.0, 1000.0)
    assert status.when(r.deadline, 1030.0) == ("by 1970-01-01T00:16:40Z (passed 30 s ago: the loop acts at its "
                                               "next pass)")
    waiting = status.UnderWay("gpu02", XID48, "wait-gpu", 1, "gpu3", 0.0, 0.0)
    text = status.text(status.Status(1030.0, under_way=(waiting,)))
    assert f"  gpu02: wait-gpu (attempt 1) for {XID48}; next: the jobs on gpu3 to end, then its reset, no deadline: " \
           "jobs are never killed" in text


def test_the_last_ended_oldest_first_with_their_actions_and_time_from_fault(tmp_path):
    b = bench(tmp_path)
    b.health_drains("gpu02", XID79)
    b.tick()
    b.tick(60, passes=3)
    b.health_drains("gpu01", XID79)
    b.tick()
    b.tick(60, passes=3)
    ended = said(b).split("last ended:\n")[1].splitlines()
    assert [line.split()[1] for line in ended] == ["gpu02:", "gpu01:"]
    assert ended[-1].endswith(f"gpu01: back in service ({XID79}; reboot; 180 s from its fault)")


def test_observe_mode_says_what_it_would_have_done(tmp_path):
    b = bench(tmp_path, mode="observe")
    b.health_drains("gpu01", XID79)
    b.tick()
    assert said(b).splitlines()[-1].endswith(f"gpu01: observed ({XID79}; would reboot; 0 s from its fault)")


def test_the_json_through_the_command_line_reads_back_as_the_status(tmp_path, capsys):
    b = bench(tmp_path, attempts=1)
    b.health_drains("gpu01", XID79)
    b.health_drains("gpu02", XID48)
    b.tick()
    b.health_resets("gpu02")
    b.tick()
    b.slurm.reboot_s = 10 ** 6
    b.tick(1000)
    assert repair_main.main(["--status", "--json", "--state-dir", b.loop.store.root]) == 0
    out = capsys.readouterr().out
    read = status.from_json(out)
    assert dataclasses.replace(read, now=0.0) == dataclasses.replace(status.read(b.loop.store, 0.0), now=0.0)
    assert [q.node for q in read.quarantined] == ["gpu01"] and read.under_way == ()
    assert [(e.node, e.outcome, e.actions, e.in_service) for e in read.ended] == [
        ("gpu01", "quarantined after 1 attempt(s)", ("reboot",), False),
        ("gpu02", "back in service", ("reset",), True)]
    assert json.loads(out)["version"] == status.VERSION and out.endswith("}\n") and out.count("\n") == 1


def test_the_json_is_bounded_per_node_and_in_all_keeping_the_newest(tmp_path):
    store = Store(str(tmp_path))
    for i in range(8):
        for n in range(12):
            store.ended({"node": f"gpu{n:02}", "fault": XID79, "class": "reboot", "outcome": "back in service",
                         "actions": ["reboot"], "seen_at": i * 100.0 + n, "ended_at": i * 100.0 + n + 60,
                         "automatic": True, "in_service": True})
    ended = status.from_json(status.to_json(status.read(store, 1000.0))).ended
    assert len(ended) == status.OVERALL
    per_node = {}
    for e in ended:
        per_node.setdefault(e.node, []).append(e.seen_at)
    assert max(len(v) for v in per_node.values()) == status.PER_NODE
    # the newest kept: every node's last five rounds, less the oldest round's first ten nodes, oldest first
    assert ended[-1].node == "gpu11" and ended[-1].seen_at == 711.0 and ended[0].seen_at == 310.0
    assert [e.ended_at for e in ended] == sorted(e.ended_at for e in ended)


def test_a_history_line_the_loop_did_not_write_is_left_out(tmp_path):
    (tmp_path / "history.jsonl").write_text('["not", "an", "entry"]\n{"node": "gpu01"}\n{"cut": \n'
                                            '{"node": "gpu02", "fault": "f", "outcome": "back in service", '
                                            '"actions": ["reboot"], "seen_at": 1, "ended_at": 5}\n')
    assert [e.node for e in status.read(Store(str(tmp_path)), 10.0).ended] == ["gpu02"]


def test_status_of_a_loop_that_never_ran_is_empty(tmp_path, capsys):
    assert repair_main.main(["--status", "--state-dir", str(tmp_path / "none")]) == 0
    assert capsys.readouterr().out == "breaker: closed\n"


def test_a_state_dir_it_may_not_read_is_refused_not_read_as_nothing_under_way(tmp_path, monkeypatch, capsys):
    listdir = os.listdir

    def refused(path):
        if str(path) == str(tmp_path):
            raise PermissionError(13, "Permission denied", str(path))
        return listdir(path)

    monkeypatch.setattr(os, "listdir", refused)
    assert repair_main.main(["--status", "--json", "--state-dir", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"{tmp_path}: permission denied: --status reads root's files (run it as root)\n"


def test_json_without_status_is_a_mistake_in_the_arguments(capsys):
    with pytest.raises(SystemExit) as exited:
        repair_main.main(["--json"])
    assert exited.value.code == 2 and "--json goes with --status" in capsys.readouterr().err


def test_the_reader_refuses_another_version_or_a_garbled_answer():
    with pytest.raises(ValueError, match="version 2, this reads 1"):
        status.from_json('{"version": 2}')
    with pytest.raises(ValueError, match="lacks or garbles 'breaker'"):
        status.from_json('{"version": 1, "now": 0}')
    with pytest.raises(ValueError):
        status.from_json("Traceback (most recent call last):")
