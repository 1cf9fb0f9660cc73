"""End to end: the tool as an admin installs it. The wheel built from this clone, installed into a fresh virtualenv
outside it (tests/install/venv.py), runs `clusterforge apply` on the deployed test cluster from another directory,
with a copy of the inventory: the deploy inside the installed package runs, finds nothing to do and changes nothing;
then `check` and `roll --dry-run` from the same virtualenv, which change nothing either. Cheap: one no-op deploy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from e2e.testbed import DeployRun, Testbed
from install.venv import build_wheel, fresh_venv, run

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The bin directory of a fresh virtualenv holding the wheel."""
    wheel = build_wheel(tmp_path_factory.mktemp("dist"))
    return fresh_venv(wheel, tmp_path_factory.mktemp("venv") / "venv") / "bin"


def test_apply_check_and_roll_from_the_installed_wheel_change_nothing_on_the_deployed_cluster(
        testbed: Testbed, installed: Path, tmp_path: Path):
    site = tmp_path / "site.py"
    shutil.copy(testbed.inventory, site)
    env = testbed.env()  # the inventory's settings: its release, its auth, the artifact mirror, Vault's address
    before = testbed.fingerprint()

    applied = run([installed / "clusterforge", "apply", "-y", site.name], cwd=tmp_path, env=env, timeout=1800)
    output = applied.stdout + applied.stderr
    assert applied.returncode == 0, output[-6000:]
    packaged = next(installed.parent.glob("lib/python3*/site-packages")) / "clusterforge" / "deploy" / "cluster.py"
    assert f"Loading: {packaged}" in output, output[-3000:]
    assert DeployRun(applied.returncode, output, 0).changed == 0, output[-6000:]
    assert testbed.fingerprint() == before

    checked = run([installed / "clusterforge", "check", site.name], cwd=tmp_path, env=env)
    assert checked.returncode == 0 and "all good (exit 0)" in checked.stdout, checked.stdout + checked.stderr

    rolled = run([installed / "clusterforge", "roll", "--apply", "--reboot", "--dry-run", site.name], cwd=tmp_path,
                 env=env)
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    assert "nodes in" in rolled.stdout and "batch 1/" in rolled.stdout, rolled.stdout
    assert testbed.fingerprint() == before
