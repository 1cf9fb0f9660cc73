"""`clusterforge roll` as an admin runs it, where no cluster is needed: mistakes and an unreachable controller exit 2
with one message, before anything is drained."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI = [str(REPO / ".venv" / "bin" / "clusterforge")]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "roll", *args], cwd=REPO, text=True, capture_output=True, timeout=120, check=False)


def test_what_to_do_must_be_said_and_the_limit_must_name_compute_nodes():
    said = run("inventories/vagrant.py")
    assert said.returncode == 2 and "say what the roll does: --reboot, --apply, or both" in said.stderr
    unknown = run("--reboot", "--limit", "gpu[02-03],ctl", "inventories/vagrant.py")
    assert unknown.returncode == 2
    assert "--limit: not compute nodes of inventories/vagrant.py: ctl, gpu03" in unknown.stderr
    assert run("--reboot", "--batch", "0", "inventories/vagrant.py").returncode == 2
    services = run("--reboot", "--services", "inventories/vagrant.py")
    assert services.returncode == 2
    assert "--services deploys to the service hosts: it goes with --apply" in services.stderr
    assert "Traceback" not in said.stderr + unknown.stderr


def test_an_unreachable_controller_is_a_mistake_named_before_any_drain():
    # prod's addresses (10.0.0.0/16) are not routed from here.
    result = run("--reboot", "inventories/prod.py")
    assert result.returncode == 2 and result.stderr.startswith("Error: slurm-ctl01: "), result.stderr
    assert "Traceback" not in result.stderr and "batch" not in result.stdout
