"""End to end: the tool as an admin installs it, walking docs/own-machines.md. The wheel built from this clone,
installed into a fresh virtualenv outside it (tests/install/venv.py), writes the starter inventory (`init`), whose
placeholders `validate` names; then, from another directory with a copy of the test cluster's inventory (the site's
own, filled in), `validate`, `secrets init`, `plan`, `apply`, `check` and `roll --dry-run` run on the deployed test
cluster: the plan and the deploy inside the installed package find nothing to do, and nothing changes, but the
deploy's stamp where the wheel is of another version than the one that deployed (a tree changed since the clone's
virtualenv was made). Cheap: one planning run and one no-op deploy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from e2e.testbed import MACHINES, REPO, Testbed
from install.venv import run

from clusterforge.words import counted

pytestmark = pytest.mark.e2e


def stamped_version(testbed: Testbed) -> str:
    return json.loads(testbed.run(MACHINES["ctl"], "cat /etc/clusterforge/deployed.json"))["clusterforge"]


@pytest.fixture
def stamps_kept(testbed: Testbed):
    """The stamps of the clone's clusterforge on every host after the test, as the modules after it expect them
    (a plan with nothing to do): the clone's deploy stamps them again where the wheel's version stamped them."""
    yield
    clone = run([REPO / ".venv" / "bin" / "clusterforge", "--version"], cwd=REPO).stdout.split()[-1]
    if stamped_version(testbed) != clone:
        again = testbed.deploy()
        assert again.returncode == 0, again.output[-3000:]


def test_the_guide_walked_from_the_installed_wheel_changes_nothing_on_the_deployed_cluster(
        testbed: Testbed, installed: Path, tmp_path: Path, stamps_kept):
    site = tmp_path / "site.py"
    shutil.copy(testbed.inventory, site)
    env = testbed.env()  # the inventory's settings: its release, its auth, the artifact mirror, Vault's address
    before = testbed.fingerprint()

    # Steps 1 to 3: the starter, its placeholders named, and the site's inventory valid.
    started = run([installed / "clusterforge", "init", "mysite"], cwd=tmp_path, env=env)
    assert started.returncode == 0 and "fill its 8 placeholders:" in started.stdout, started.stdout + started.stderr
    unfilled = run([installed / "clusterforge", "validate", "mysite/site.py"], cwd=tmp_path, env=env)
    assert unfilled.returncode == 2 and unfilled.stderr.count("(mysite/site.py:") == 8, unfilled.stderr
    valid = run([installed / "clusterforge", "validate", site.name], cwd=tmp_path, env=env)
    assert valid.returncode == 0 and "is valid for Slurm" in valid.stdout, valid.stdout + valid.stderr
    # Steps 4 and 5: the secrets are there already, and the plan finds nothing to do.
    secrets = run([installed / "clusterforge", "secrets", "init", site.name], cwd=tmp_path, env=env)
    assert secrets.returncode == 0 and "0 created," in secrets.stdout, secrets.stdout + secrets.stderr
    # The stamp names the clusterforge that deployed each host: a wheel of another version stamps them anew.
    version = run([installed / "clusterforge", "--version"], cwd=tmp_path, env=env).stdout.split()[-1]
    restamps = len(MACHINES) if version != stamped_version(testbed) else 0
    planned = run([installed / "clusterforge", "plan", site.name], cwd=tmp_path, env=env, timeout=1800)
    if restamps:
        assert planned.returncode == 0 and f"Plan: {restamps} changes on" in planned.stdout, planned.stdout
        steps = {line.split("|")[0].strip() for line in planned.stdout.splitlines() if " | " in line}
        assert steps == {"stamp"}, planned.stdout
    else:
        assert planned.returncode == 0 and "Plan: nothing to do on" in planned.stdout, planned.stdout + planned.stderr

    applied = run([installed / "clusterforge", "apply", "-y", site.name], cwd=tmp_path, env=env, timeout=1800)
    output = applied.stdout + applied.stderr
    assert applied.returncode == 0, output[-6000:]
    packaged = next(installed.parent.glob("lib/python3*/site-packages")) / "clusterforge" / "deploy" / "cluster.py"
    # apply's own lines (cli/apply_progress.py): the deploy file it hands pyinfra, and its summary.
    said = applied.stdout.splitlines()
    assert f"apply: preparing {len(MACHINES)} hosts with the deploy file {packaged}" in said, output[-3000:]
    assert said[-1] == f"apply: {len(MACHINES)} hosts, {counted(restamps, 'change')}, 0 failed, 0 not reached", \
        output[-6000:]
    assert testbed.fingerprint() == before

    checked = run([installed / "clusterforge", "check", site.name], cwd=tmp_path, env=env)
    assert checked.returncode == 0 and "all good (exit 0)" in checked.stdout, checked.stdout + checked.stderr

    rolled = run([installed / "clusterforge", "roll", "--apply", "--reboot", "--dry-run", site.name], cwd=tmp_path,
                 env=env)
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    assert "nodes in" in rolled.stdout and "batch 1/" in rolled.stdout, rolled.stdout
    assert testbed.fingerprint() == before
