"""`clusterforge init` and the placeholders of an inventory: the starter is written, never over a file; every command
refuses an inventory with a placeholder left, naming its line and what to put there (validate, and pyinfra's own run
of the file through `host_groups`); filled in, the starter is valid."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from golden_cases import STARTER, filled

from clusterforge.cli import cli
from clusterforge.cli.init import STARTER as PACKAGED
from clusterforge.loader import load

WANTED = ("mount the exports", "`ibdev2netdev` names them", "the compute fabric's HCA ports", "NCCL bootstraps over",
          "your acceptance image", "your Vault's https:// address", "enroot_4.1.2-1_amd64.deb", "3bf863cc.pub")


def test_init_writes_the_starter_and_lists_each_placeholder_with_its_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["init", "mysite"])
    assert result.exit_code == 0, result.output
    site = tmp_path / "mysite" / "site.py"
    assert site.read_text() == STARTER.read_text() == PACKAGED.read_text()
    listed = [line for line in result.output.splitlines() if line.startswith("  ")]
    assert len(listed) == len(WANTED) and "fill its 8 placeholders:" in result.output
    for wanted in WANTED:
        line = next(line for line in listed if wanted in line)
        number = int(line.rsplit(":", 1)[1].rstrip(")"))
        assert "placeholder(" in site.read_text().splitlines()[number - 1] or '"0" * 64' in line or \
            "_SHA256" in site.read_text().splitlines()[number - 1], line


def test_init_never_writes_over_a_site_py(tmp_path):
    (tmp_path / "site.py").write_text("mine\n")
    result = CliRunner().invoke(cli, ["init", str(tmp_path)])
    assert result.exit_code == 2 and "exists already: nothing was written" in result.output
    assert (tmp_path / "site.py").read_text() == "mine\n"


def test_every_problem_of_the_starter_is_a_placeholder_and_filled_it_is_valid(tmp_path):
    problems = CliRunner().invoke(cli, ["validate", "--json", str(STARTER)])
    assert problems.exit_code == 2
    found = json.loads(problems.stdout)["problems"]
    assert len(found) == len(WANTED)
    assert all(p["where"] == "placeholder" or p["what"].startswith("a placeholder (64 zeros)") for p in found), found
    site = tmp_path / "site.py"
    site.write_text(filled(STARTER.read_text()))
    assert load(site).valid.name == "prod"


def test_a_placeholder_in_any_entry_is_named_by_validate_and_stops_pyinfras_own_run(tmp_path):
    site = tmp_path / "site.py"
    site.write_text(filled(STARTER.read_text()).replace(
        'DRIVER = "550.163.01-1"', 'DRIVER = placeholder("550.163.01-1", "the driver your nodes run")'))
    result = CliRunner().invoke(cli, ["validate", str(site)])
    number = next(n for n, line in enumerate(site.read_text().splitlines(), 1) if line.startswith("DRIVER = "))
    assert result.exit_code == 2
    assert "placeholder: replace it with the driver your nodes run (" in result.output, result.output
    assert f"site.py:{number})" in result.output, result.output
    # pyinfra runs an inventory file itself: host_groups refuses it there, before any connection.
    ran = subprocess.run([sys.executable, "-c", f"import runpy; runpy.run_path({str(site)!r})"], text=True,
                         capture_output=True, cwd=Path(__file__).parent, timeout=120, check=False)
    assert ran.returncode != 0 and "the driver your nodes run" in ran.stderr, ran.stderr[-2000:]


def test_64_zeros_are_a_placeholder_wherever_an_artifact_is_pinned(tmp_path):
    site = tmp_path / "site.py"
    site.write_text(filled(STARTER.read_text()).replace(
        'PYXIS_TAR_SHA256 = "063653ba39125ac29796cc6079701d1ec34dd4c5baf698efacc0f36bf3619681"',
        'PYXIS_TAR_SHA256 = "0" * 64'))
    result = CliRunner().invoke(cli, ["validate", str(site)])
    assert result.exit_code == 2
    assert ("containers.pyxis.source.sha256: a placeholder (64 zeros): download "
            "https://github.com/NVIDIA/pyxis/archive/refs/tags/v0.24.0.tar.gz once and pin what "
            "`sha256sum pyxis-0.24.0.tar.gz` prints") in result.output, result.output
