"""`clusterforge roll` as an admin runs it, where no cluster is needed: mistakes and an unreachable controller exit 2
with one message, before anything is drained; --dry-run --json and the times on a roll's lines against the Slurm
stand-in, reached as the roll's controller (controller.py)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from golden_cases import PROD
from roll.controller import Controller
from slurm_standin import Slurm

from clusterforge.cli import cli

REPO = Path(__file__).resolve().parents[2]
CLI = [str(REPO / ".venv" / "bin" / "clusterforge")]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "roll", *args], cwd=REPO, text=True, capture_output=True, timeout=120, check=False)


def test_what_to_do_must_be_said_and_the_limit_must_name_compute_nodes():
    said = run("inventories/vagrant.py")
    assert said.returncode == 2 and "say what the roll does: --reboot, --apply, or both" in said.stderr
    unknown = run("--reboot", "--limit", "gpu[02-03],ctl", "inventories/vagrant.py")
    assert unknown.returncode == 2
    assert "--limit: not hosts or groups of inventories/vagrant.py: gpu03; not compute nodes of inventories/vagrant.py: ctl" in unknown.stderr
    assert run("--reboot", "--batch", "0", "inventories/vagrant.py").returncode == 2
    services = run("--reboot", "--services", "inventories/vagrant.py")
    assert services.returncode == 2
    assert "--services deploys to the service hosts: it goes with --apply" in services.stderr
    assert "Traceback" not in said.stderr + unknown.stderr


def test_an_unreachable_controller_is_a_mistake_named_before_any_drain():
    # prod's addresses (10.0.0.0/16) are not routed from here.
    result = run("--reboot", str(PROD))
    *said, error = result.stderr.splitlines()
    assert result.returncode == 2 and error.startswith("Error: the controller slurm-ctl01: "), result.stderr
    assert len(said) == 1 and said[0].endswith(" roll: connecting to the controller slurm-ctl01 (10.0.0.10)"), said
    assert "Traceback" not in result.stderr and "batch" not in result.stdout


@pytest.fixture
def controller(monkeypatch) -> Controller:
    """The roll's SSH connections replaced by the Slurm stand-in's controller (every host answers as it): gpu02 runs
    alice's job, gpu01 is idle."""
    from clusterforge.reach import ssh

    slurm = Slurm.of(["gpu01", "gpu02"], partition="gpu")
    slurm.place("alice", ["gpu02"], 10**6)
    stand_in = Controller(slurm)

    class Connections:
        def __init__(self, targets) -> None:
            self.targets = targets

        def runner(self, name: str):
            return stand_in

        def close(self) -> None:
            pass

        def __enter__(self):
            return self

        def __exit__(self, *_exc) -> None:
            self.close()

    monkeypatch.setattr(ssh, "Connections", Connections)
    return stand_in


def test_dry_run_json_is_the_batches_and_the_jobs_each_waits_for(controller):
    [job] = controller.slurm.jobs.values()
    result = CliRunner().invoke(cli, ["roll", "--apply", "--services", "--dry-run", "--json", "inventories/vagrant.py"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["schema"] == 1
    # Whom it waits for, before it connects: on stderr, so that stdout is the JSON document alone.
    assert result.stderr == "roll: connecting to the controller ctl (10.77.0.10)\n"
    assert body["nodes"] == 2 and body["width"] == 1 and body["left_alone"] == [] and body["continued"] == []
    assert body["batches"] == [
        {"index": 1, "nodes": ["gpu01"], "hostlist": "gpu01", "jobs": []},
        {"index": 2, "nodes": ["gpu02"], "hostlist": "gpu02", "jobs": [f"{job.job_id} alice gpu02"]},
    ]
    assert body["first"] == [{"host": "ctl", "roles": ["slurmdbd", "slurmctld"], "dump": "slurm_acct_db"}]
    assert body["last"] == [{"host": "login1", "roles": ["login"]}]
    assert not any(c.startswith(("rc=0;", "scontrol update")) for c in controller.sent), "a dry run drained"


def test_dry_run_json_names_the_nodes_left_alone(controller):
    assert controller.slurm.run(["scontrol", "update", "NodeName=gpu01", "State=DRAIN", "Reason=admin: fan"]).rc == 0
    result = CliRunner().invoke(cli, ["roll", "--reboot", "--batch", "2", "--dry-run", "--json",
                                      "inventories/vagrant.py"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["left_alone"] == [{"node": "gpu01", "state": "drained", "reason": "admin: fan", "why": "skipped",
                                   "counted": False}]
    assert body["nodes"] == 1 and body["batches"][0]["nodes"] == ["gpu02"] and body["first"] == body["last"] == []


def test_json_without_dry_run_is_refused_before_anything():
    result = run("--reboot", "--json", "inventories/vagrant.py")
    assert result.returncode == 2 and "--json goes with --dry-run" in result.stderr and result.stdout == ""


def test_each_line_of_a_roll_starts_with_its_time(controller):
    # gpu02's job outlasts --wait 0: the roll drains it, waits no longer and stops, naming the job.
    [job] = controller.slurm.jobs.values()
    result = CliRunner().invoke(cli, ["roll", "--reboot", "--wait", "0", "--limit", "gpu02", "inventories/vagrant.py"])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    stamp = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[+-]\d{4} ")
    assert lines and all(stamp.match(line) for line in lines), lines
    assert stamp.match(result.stderr) and "roll: connecting to the controller ctl (10.77.0.10)" in result.stderr
    assert any("1 node in 1 batch of at most 1" in line for line in lines), lines
    assert any("Stopped: " in line and f"{job.job_id} alice gpu02" in line for line in lines), lines
