"""`clusterforge apply`: the inventory's mistakes stop it before pyinfra runs (exit 2), and what it hands to pyinfra.
The deploy it runs on simulated hosts: tests/deploy/test_packaged_deploy.py; from an installed wheel:
tests/install and tests/e2e/test_installed.py."""

from __future__ import annotations

import sys
from pathlib import Path

from click.testing import CliRunner

from clusterforge.cli import cli
from golden_cases import PROD
from clusterforge.cli.pyinfra_run import CONFIG, DEPLOY, PYINFRA

REPO = Path(__file__).resolve().parents[2]
INVENTORY = str(PROD)


# execs: conftest.py


def test_the_packaged_deploy_runs_under_pyinfra_of_this_interpreter_with_the_options_handed_through(execs):
    result = CliRunner().invoke(cli, ["apply", "-y", "--dry", "-vv", "--limit", "slurm-ctl01", "--limit", "login",
                                      INVENTORY])
    assert result.exit_code == 0, result.output
    # The limit as the hosts it names (a group as its hosts), each a pyinfra --limit that matches it alone.
    # Connected to all at once: pyinfra's own parallelism is 20 hosts a CPU.
    assert execs == [[sys.executable, "-c", PYINFRA, "--config", str(CONFIG), "-y", "--dry", "-vv", "--limit", "slurm-ctl01", "--limit",
                      "login01", "--limit", "login02", "--parallel", "3", INVENTORY, str(DEPLOY)]]


def test_an_invalid_inventory_exits_2_naming_its_mistake_before_pyinfra(execs, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text(PROD.read_text().replace('"5" * 64', '"5" * 63', 1))
    result = CliRunner().invoke(cli, ["apply", "-y", str(broken)])
    assert result.exit_code == 2 and "is not a SHA-256" in result.output and execs == [], result.output


def test_a_missing_deploy_file_exits_2(execs, tmp_path):
    result = CliRunner().invoke(cli, ["apply", "--deploy", str(tmp_path / "none.py"), INVENTORY])
    assert result.exit_code == 2 and "none.py: no such deploy file" in result.output and execs == []


def test_drain_wait_reaches_the_deploy_as_pyinfras_data_and_a_negative_one_is_refused(execs):
    CliRunner().invoke(cli, ["apply", "-y", "--drain-wait", "600", INVENTORY])
    assert execs == [[sys.executable, "-c", PYINFRA, "--config", str(CONFIG), "-y", "--parallel", "37", "--data", "drain_wait=600", INVENTORY,
                      str(DEPLOY)]]
    result = CliRunner().invoke(cli, ["apply", "--drain-wait", "-5", INVENTORY])
    assert result.exit_code == 2 and "--drain-wait" in result.output and len(execs) == 1
