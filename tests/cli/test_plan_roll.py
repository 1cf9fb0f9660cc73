"""`clusterforge plan --roll N` shows the roll it names: the dry run of `clusterforge roll --apply --services --batch
N` with the plan's deploy file, every other option at roll's own default. No host is needed: the planning deploy and
the roll are stood in for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from clusterforge.cli import cli
from clusterforge.cli.plan_report import LAYOUT
from clusterforge.cli.roll import roll

INVENTORY = str(Path(__file__).resolve().parents[2] / "inventories" / "vagrant.py")


@pytest.fixture
def rolls(monkeypatch) -> list[dict]:
    """The options each roll ran with; the planning deploy writes that one host has nothing to do."""
    real_popen = subprocess.Popen

    def planning_deploy(command, env, **options):
        Path(env["CLUSTERFORGE_PLAN"]).write_text(json.dumps({"layout": LAYOUT, "planned": ["ctl"], "hosts": {},
                                                              "unreachable": [], "drain": [], "drain_jobs": []}))
        return real_popen([sys.executable, "-c", "pass"], env=env, **options)

    ran: list[dict] = []
    monkeypatch.setattr(subprocess, "Popen", planning_deploy)
    monkeypatch.setattr(roll, "callback", lambda **options: ran.append(options))
    return ran


def test_plan_roll_runs_the_dry_run_of_the_roll_it_names(tmp_path, rolls):
    deploy = tmp_path / "cluster.py"
    deploy.write_text("")
    runner = CliRunner()
    planned = runner.invoke(cli, ["plan", "--roll", "3", "--deploy", str(deploy), INVENTORY])
    assert planned.exit_code == 0, planned.output
    assert "With `clusterforge roll --apply --services --batch 3`, without stopping a job:" in planned.output
    rolled = runner.invoke(cli, ["roll", "--apply", "--services", "--batch", "3", "--deploy", str(deploy),
                                 "--dry-run", INVENTORY])
    assert rolled.exit_code == 0, rolled.output
    assert len(rolls) == 2 and rolls[0] == rolls[1]
    assert rolls[0]["dry_run"] and rolls[0]["budget"] == 3 and rolls[0]["deploy_file"] == str(deploy)


def test_plan_without_roll_runs_no_roll(rolls):
    planned = CliRunner().invoke(cli, ["plan", INVENTORY])
    assert planned.exit_code == 0, planned.output
    assert rolls == [] and "clusterforge roll" not in planned.output
