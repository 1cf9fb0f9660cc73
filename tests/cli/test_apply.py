"""`clusterforge apply`: the inventory's mistakes stop it before pyinfra runs (exit 2), what it hands to pyinfra, what
--dry shows, and where pyinfra's own text is kept. What it says while it runs, on real connections:
tests/cli/test_pyinfra_events.py; the deploy it runs on simulated hosts: tests/deploy/test_packaged_deploy.py; from an
installed wheel: tests/install and tests/e2e/test_installed.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner
from golden_cases import PROD

from clusterforge.cli import apply_progress, cli, plan_progress
from clusterforge.cli.pyinfra_run import CONFIG, DEPLOY, PYINFRA, PyinfraRun

REPO = Path(__file__).resolve().parents[2]
INVENTORY = str(PROD)


# deploys: conftest.py


def test_the_packaged_deploy_runs_under_pyinfra_of_this_interpreter_with_the_options_handed_through(deploys):
    result = CliRunner().invoke(cli, ["apply", "-y", "-vv", "--limit", "slurm-ctl01", "--limit", "login", INVENTORY])
    assert result.exit_code == 0, result.output
    # The limit as the hosts it names (a group as its hosts), each a pyinfra --limit that matches it alone.
    # Connected to all at once: pyinfra's own parallelism is 20 hosts a CPU.
    assert deploys == [[sys.executable, "-c", PYINFRA, "--config", str(CONFIG), "-y", "-vv", "--limit", "slurm-ctl01",
                        "--limit", "login01", "--limit", "login02", "--parallel", "3", INVENTORY, str(DEPLOY)]]


def test_dry_shows_clusterforges_plan_and_runs_no_deploy(deploys, monkeypatch):
    planned = []

    def make_plan(inventory, hosts, deploy_file, exposed):
        planned.append(hosts)
        body = {"layout": 1, "planned": ["slurm-ctl01"], "unreachable": ["login01"], "drain": [], "drain_jobs": [],
                "hosts": {"slurm-ctl01": [{"operation": "stamp | /etc/clusterforge/deployed.json",
                                           "lines": ["/etc/clusterforge/deployed.json: changed"]}]}}
        return json.dumps(body), PyinfraRun(unreachable={"login01": "connection refused"})

    monkeypatch.setattr(plan_progress, "make_plan", make_plan)
    result = CliRunner().invoke(cli, ["apply", "--dry", "--limit", "slurm-ctl01,login01", INVENTORY])
    # A host that could not be planned: 1, as `clusterforge plan` exits.
    assert result.exit_code == 1 and deploys == [] and planned == [["slurm-ctl01", "login01"]], result.output
    assert "stamp | /etc/clusterforge/deployed.json" in result.output
    assert "login01: COULD NOT BE REACHED, not planned (connection refused)" in result.output


def test_pyinfras_text_goes_to_a_new_log_of_the_admins_alone_and_old_logs_go(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    kept = tmp_path / "clusterforge"
    kept.mkdir()
    for day in range(1, 26):
        (kept / f"apply-202601{day:02}-120000-1.log").write_text("")
    made = apply_progress.log_file()
    assert made.parent == kept and made.stat().st_mode & 0o777 == 0o600
    logs = sorted(p.name for p in kept.iterdir())
    assert len(logs) == apply_progress.KEPT_LOGS and logs[0] == "apply-20260107-120000-1.log" and made.name in logs


def test_an_invalid_inventory_exits_2_naming_its_mistake_before_pyinfra(deploys, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text(PROD.read_text().replace('"5" * 64', '"5" * 63', 1))
    result = CliRunner().invoke(cli, ["apply", "-y", str(broken)])
    assert result.exit_code == 2 and "is not a SHA-256" in result.output and deploys == [], result.output


def test_a_missing_deploy_file_exits_2(deploys, tmp_path):
    result = CliRunner().invoke(cli, ["apply", "--deploy", str(tmp_path / "none.py"), INVENTORY])
    assert result.exit_code == 2 and "none.py: no such deploy file" in result.output and deploys == []


def test_drain_wait_reaches_the_deploy_as_pyinfras_data_and_a_negative_one_is_refused(deploys):
    CliRunner().invoke(cli, ["apply", "-y", "--drain-wait", "600", INVENTORY])
    assert deploys == [[sys.executable, "-c", PYINFRA, "--config", str(CONFIG), "-y", "--parallel", "37", "--data",
                        "drain_wait=600", INVENTORY, str(DEPLOY)]]
    result = CliRunner().invoke(cli, ["apply", "--drain-wait", "-5", INVENTORY])
    assert result.exit_code == 2 and "--drain-wait" in result.output and len(deploys) == 1
