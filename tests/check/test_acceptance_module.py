"""The acceptance tests an admin runs as docs/operations/check.md says, `pytest --pyargs
clusterforge.check.acceptance`: pytest collects them although the module is not named like a test, skips them
without an inventory, and makes one test per check and host of the inventory given (collected only here: no
cluster is reached)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from golden_cases import PROD

REPO = Path(__file__).resolve().parents[2]


def pytest_pyargs(cwd: Path, *args: str, inventory: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLUSTERFORGE_")}
    if inventory:
        env["CLUSTERFORGE_INVENTORY"] = inventory
    # From a directory of the admin's, not the repository: no pytest configuration of clusterforge's applies.
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--pyargs",
                           "clusterforge.check.acceptance", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def test_without_an_inventory_it_is_collected_and_skipped(tmp_path):
    result = pytest_pyargs(tmp_path, "-rs")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "collected 1 item" in result.stdout and "1 skipped" in result.stdout
    assert "set CLUSTERFORGE_INVENTORY to an inventory" in result.stdout


def test_with_an_inventory_it_has_one_test_per_check_and_host(tmp_path):
    result = pytest_pyargs(tmp_path, "--collect-only", "-q", "-k", "gpu-node-001",
                           inventory=str(PROD))
    assert result.returncode == 0, result.stdout + result.stderr
    ids = [line.split("::", 1)[1] for line in result.stdout.splitlines() if "::test_host[" in line]
    assert ids and all(i.startswith("test_host[gpu-node-001-") for i in ids)
    assert {"test_host[gpu-node-001-hardware]", "test_host[gpu-node-001-gpus]"} <= set(ids)
