"""The wheel is the whole tool: built from this clone, installed into a fresh virtualenv outside it (its
dependencies from PyPI, no PYTHONPATH, the working directory elsewhere), every command loads, an inventory copied
out of the clone validates, and the deploy `clusterforge apply` runs is the one inside the installed package.
Needs PyPI (the `install` tier); the wheel's build needs hatchling and hatch-vcs from it too, and the clone's git
history for its version."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import click
import pytest
from install.venv import REPO, build_wheel, fresh_venv, run

from clusterforge.cli import cli

pytestmark = pytest.mark.install


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    return fresh_venv(wheel, tmp_path_factory.mktemp("venv") / "venv")


@pytest.fixture
def elsewhere(tmp_path) -> Path:
    """A working directory outside the clone, with a copy of the example inventory."""
    shutil.copy(REPO / "inventories" / "vagrant.py", tmp_path / "site.py")
    return tmp_path


def test_the_wheel_holds_the_deploy_inside_the_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {"clusterforge/deploy/cluster.py", "clusterforge/deploy/order.py", "clusterforge/cli/apply.py",
            "clusterforge/starter/site.py.example"} <= set(names)
    assert not [n for n in names if n.startswith(("deploy/", "tests/", "inventories/"))]


def commands() -> list[str]:
    """Every command of the CLI, as its click group lists them (clusterforge/cli/__init__.py)."""
    return cli.list_commands(click.Context(cli))


def test_every_command_runs_from_the_installed_wheel(venv, elsewhere):
    clusterforge = venv / "bin" / "clusterforge"
    listed = run([clusterforge, "--help"], cwd=elsewhere)
    assert listed.returncode == 0, listed.stderr
    # What `--help` lists: each command on a line of its own, its name first, two spaces in.
    shown = [line.split()[0] for line in listed.stdout.split("Commands:\n", 1)[1].splitlines()
             if line.startswith("  ") and not line.startswith("   ")]
    assert shown == commands() and {"accept", "admit", "apply", "validate"} <= set(shown)
    for name in commands():
        helped = run([clusterforge, name, "--help"], cwd=elsewhere)
        assert helped.returncode == 0 and helped.stdout.startswith(f"Usage: clusterforge {name} "), helped.stderr
    valid = run([clusterforge, "validate", "site.py"], cwd=elsewhere)
    assert valid.returncode == 0, valid.stderr
    assert valid.stdout.startswith("site.py: cluster vagrant is valid for Slurm")


def test_init_from_the_installed_wheel_writes_the_starter_and_validate_names_each_placeholder(venv, tmp_path):
    made = run([venv / "bin" / "clusterforge", "init", "mysite"], cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    assert (tmp_path / "mysite" / "site.py").read_text() == (REPO / "inventories" / "prod.py").read_text()
    assert "fill its 8 placeholders:" in made.stdout and made.stdout.count("(mysite/site.py:") == 8, made.stdout
    refused = run([venv / "bin" / "clusterforge", "validate", "mysite/site.py"], cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("placeholder") == 8, refused.stderr


def test_the_installed_deploy_file_is_the_packages_and_check_and_roll_have_what_they_connect_through(venv, elsewhere):
    probe = ("import testinfra, clusterforge.check.run, clusterforge.roll.run, clusterforge.deploy.order as order\n"
             "from clusterforge.cli.pyinfra_run import DEPLOY\n"
             "print(DEPLOY, DEPLOY.is_file(), len(order.deploy.__doc__) > 0, order.__file__)")
    found = run([venv / "bin" / "python", "-c", probe], cwd=elsewhere)
    assert found.returncode == 0, found.stderr
    deploy, is_file, documented, module = found.stdout.split()
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert Path(deploy) == site / "clusterforge" / "deploy" / "cluster.py" and is_file == "True" == documented
    assert Path(module) == site / "clusterforge" / "deploy" / "order.py"
    assert not str(REPO) in found.stdout


def test_apply_checks_the_inventory_before_pyinfra_and_names_its_mistake(venv, elsewhere):
    # A mistake the inventory has whatever the environment (a digest of the Enroot package is used only without a
    # mirror: with CLUSTERFORGE_ARTIFACTS set, as in CI, a broken one let apply run pyinfra against the test
    # cluster), and hosts no machine answers at, should the check before pyinfra ever be lost.
    text = (elsewhere / "site.py").read_text()
    assert text.count("real_memory=2048") == 1 and text.count('"10.77.0.') >= 4
    (elsewhere / "broken.py").write_text(text.replace("real_memory=2048", "real_memory=0").replace('"10.77.0.',
                                                                                                '"192.0.2.'))
    refused = run([venv / "bin" / "clusterforge", "apply", "-y", "broken.py"], cwd=elsewhere)
    assert refused.returncode == 2 and "profiles[test-gpu].real_memory: must be positive, not 0" in refused.stderr, \
        refused.stdout + refused.stderr
    assert "Connecting to hosts" not in refused.stdout + refused.stderr


def test_the_wheels_version_names_the_commit_it_was_built_from(venv, elsewhere):
    # Two commits' builds never say the same version (hatch-vcs): 0.1.devN+g<commit>, or the tag of a release.
    said = run([venv / "bin" / "clusterforge", "--version"], cwd=elsewhere)
    assert said.returncode == 0, said.stderr
    version = said.stdout.split("version ", 1)[1].strip()
    head = run(["git", "-C", REPO, "rev-parse", "HEAD"], cwd=elsewhere).stdout.strip()
    tag = run(["git", "-C", REPO, "describe", "--tags", "--exact-match", "HEAD"], cwd=elsewhere).stdout.strip()
    if tag:
        assert version == tag.removeprefix("v"), version
    else:
        commit = next(part[1:] for part in version.split("+", 1)[1].split(".") if part.startswith("g"))
        assert len(commit) >= 7 and head.startswith(commit), (version, head)
