"""The ended repairs on the controller: history.jsonl keeps only its last entries, while the metrics' counters (the
store's running totals) count every repair ever ended, across the history's trimming and the loop's restarts, and a
pass that ends no repair reads neither file again."""

from __future__ import annotations

import json

import pytest
from repair.standin import XID79, bench

from clusterforge.repair import metrics, store
from clusterforge.repair.passes import Loop
from clusterforge.repair.store import Store

NODES = [f"gpu0{n}" for n in range(1, 6)]


@pytest.fixture(autouse=True)
def few_kept(monkeypatch):
    monkeypatch.setattr(store, "HISTORY_KEPT", 3)


def repaired(tmp_path):
    """Five nodes rebooted back to service at once: five ended repairs."""
    b = bench(tmp_path, names=NODES, budget=5)
    for node in NODES:
        b.health_drains(node, XID79)
    b.tick()
    b.tick(60, passes=3)
    return b


def lines(b) -> list[dict]:
    """history.jsonl as it is on disk."""
    with open(f"{b.loop.store.root}/history.jsonl", encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def counted(text: str) -> list[str]:
    return [line for line in text.splitlines()
            if line.startswith(("clusterforge_repair_ended_total", "clusterforge_repair_seconds_to_service_count"))]


def test_the_history_keeps_its_last_entries_and_the_counters_every_repair(tmp_path):
    b = repaired(tmp_path)
    kept = lines(b)
    assert [h["node"] for h in kept] == NODES[-3:] and all(h["outcome"] == "back in service" for h in kept)
    assert b.loop.store.history() == kept
    text = metrics.text(b.loop.store.history(), b.loop.store.nodes(), b.loop.store.breaker(), 0)
    assert counted(text) == ['clusterforge_repair_ended_total{klass="reboot",outcome="back"} 5',
                             'clusterforge_repair_seconds_to_service_count{how="automatic"} 5',
                             'clusterforge_repair_seconds_to_service_count{how="manual"} 0']
    total = sum(h["ended_at"] - h["seen_at"] for h in kept) * 5 / 3   # the five took as long each
    assert f'clusterforge_repair_seconds_to_service_sum{{how="automatic"}} {total:.0f}' in text


def test_a_restarted_loop_counts_on_from_its_totals(tmp_path):
    b = repaired(tmp_path)
    before = metrics.text(b.loop.store.history(), b.loop.store.nodes(), b.loop.store.breaker(), 0)
    restarted = Store(str(tmp_path / "repair"))
    assert metrics.text(restarted.history(), restarted.nodes(), restarted.breaker(), 0) == before
    b.loop = Loop(restarted, b.loop.plan, b.slurm, b.power_cycle, log=b.logged.append, clock=lambda: float(b.slurm.now))
    b.slurm.advance(86400 * 2)   # past the attempts' window: the same nodes are repaired again
    b.health_drains("gpu01", XID79)
    b.tick()
    b.tick(60, passes=3)
    assert [h["node"] for h in lines(b)] == ["gpu04", "gpu05", "gpu01"]
    text = metrics.text(restarted.history(), restarted.nodes(), restarted.breaker(), 0)
    assert counted(text)[:2] == ['clusterforge_repair_ended_total{klass="reboot",outcome="back"} 6',
                                 'clusterforge_repair_seconds_to_service_count{how="automatic"} 6']


def test_a_history_from_before_the_totals_is_counted_whole_then_trimmed(tmp_path):
    old = [{"node": f"gpu{n:02}", "fault": XID79, "class": "reboot", "outcome": "back in service", "seen_at": 0.0,
            "ended_at": 100.0, "automatic": True, "in_service": True} for n in range(1, 8)]
    (tmp_path / "repair").mkdir()
    (tmp_path / "repair" / "history.jsonl").write_text("".join(json.dumps(h) + "\n" for h in old))
    kept = Store(str(tmp_path / "repair"))
    assert len(kept.history()) == 7 and kept.history().totals.ended == {"reboot": {"back": 7}}
    kept.ended({**old[0], "outcome": "quarantined after 2 attempt(s)", "in_service": False})
    assert len((tmp_path / "repair" / "history.jsonl").read_text().splitlines()) == 3
    assert kept.history().totals.ended == {"reboot": {"back": 7, "quarantined": 1}}
    assert kept.history().totals.to_service == {"automatic": {"seconds": 700.0, "count": 7}}


def test_a_pass_that_ends_no_repair_reads_neither_file_again(tmp_path, monkeypatch):
    b = repaired(tmp_path)
    reads = []
    real = Store._read_history
    monkeypatch.setattr(Store, "_read_history", lambda self: reads.append(1) or real(self))
    first = b.loop.store.history()
    for _ in range(3):
        b.tick()
        assert b.loop.store.history() == first
    assert reads == [1]
    b.health_drains("gpu01", XID79)
    b.slurm.advance(86400 * 2)
    b.tick()
    b.tick(60, passes=3)
    assert b.loop.store.history()[-1]["node"] == "gpu01" and len(reads) == 2
