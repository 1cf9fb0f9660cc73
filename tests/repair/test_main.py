"""The loop's command line on Slurm's stand-in: a pass writes its metrics, --close-breaker opens the way for new
repairs; a plan that cannot be read repairs no one (--status: test_status.py)."""

from __future__ import annotations

from repair.standin import XID79, bench

from clusterforge.repair import main as repair_main
from clusterforge.repair import metrics


def test_the_metrics_count_outcomes_time_to_service_quarantine_and_breaker(tmp_path):
    b = bench(tmp_path)
    b.health_drains("gpu01", XID79)
    b.tick()
    b.tick(60, passes=3)
    store = b.loop.store
    text = metrics.text(store.history(), store.nodes(), store.breaker(), 0)
    assert 'clusterforge_repair_ended_total{klass="reboot",outcome="back"} 1' in text
    assert 'clusterforge_repair_seconds_to_service_count{how="automatic"} 1' in text
    assert 'clusterforge_repair_actions{action="reboot",klass="reboot",outcome="done"} 1' in text
    assert "clusterforge_repair_breaker_open 0" in text and "clusterforge_repair_in_progress 0" in text
    directory = tmp_path / "textfile"
    directory.mkdir()
    metrics.write(str(directory), text)
    assert (directory / metrics.FILE).read_text() == text


def test_a_plan_that_cannot_be_read_repairs_no_one(tmp_path, capsys):
    (tmp_path / "repair.json").write_text("{not json")
    assert repair_main.main(["--once", "--plan", str(tmp_path / "repair.json"), "--state-dir",
                             str(tmp_path / "state"), "--metrics-dir", str(tmp_path / "none")]) == 1
    assert "could not be read: no node is repaired" in capsys.readouterr().err


def test_close_breaker_from_the_command_line(tmp_path, capsys):
    assert repair_main.main(["--close-breaker", "--state-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "the breaker was not open\n"
