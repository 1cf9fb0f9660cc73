"""The layering docs/development/architecture.md describes, as import-linter checks it: the contracts in pyproject.toml
are all kept, and each one breaks when a module imports what the contract forbids (checked on a copy of the
package)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
CONTRACTS = {c["id"]: c["name"] for c in
             tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]}


def lint_imports(cwd: Path, **env: str) -> tuple[int, str]:
    result = subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo", "pyproject.toml"], cwd=cwd,
                            env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    # It wraps long contract names at the terminal's width: compare words, not lines.
    return result.returncode, " ".join((result.stdout + result.stderr).split())


def test_every_contract_is_kept():
    code, output = lint_imports(ROOT)
    assert code == 0, output
    for name in CONTRACTS.values():
        assert f"{name} KEPT" in output
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in output


@pytest.mark.parametrize(("contract", "module", "line", "named"), [
    ("pure-model-and-render", "model/hardware.py", "import pyinfra", "clusterforge.model.hardware -> pyinfra"),
    ("pure-model-and-render", "render/gres_conf.py", "import click", "clusterforge.render.gres_conf -> click"),
    ("roles-below-cli", "roles/waits.py", "from ..cli import plan_report", "clusterforge.roles.waits -> "
                                                                          "clusterforge.cli.plan_report"),
    ("layers", "model/hosts.py", "from ..render import text", "clusterforge.model.hosts -> clusterforge.render.text"),
    ("layers", "check/report.py", "from .. import fabric_import", "clusterforge.check.report -> "
                                                                  "clusterforge.fabric_import"),
    ("layers", "health/xid.py", "from .. import errors", "clusterforge.health.xid -> clusterforge.errors"),
    ("health-stdlib-only", "health/parse.py", "import jinja2", "clusterforge.health.parse -> jinja2"),
    ("layers", "exporter/jobs.py", "from .. import versions", "clusterforge.exporter.jobs -> clusterforge.versions"),
    ("exporter-shipped-alone", "exporter/nodes.py", "from ..health import program",
     "clusterforge.exporter.nodes -> clusterforge.health.program"),
    ("exporter-shipped-alone", "exporter/sdiag.py", "import yaml", "clusterforge.exporter.sdiag -> yaml"),
])
def test_a_forbidden_import_breaks_its_contract(tmp_path, contract, module, line, named):
    shutil.copytree(ROOT / "src" / "clusterforge", tmp_path / "src" / "clusterforge",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with (tmp_path / "src" / "clusterforge" / module).open("a") as file:
        file.write(f"\n{line}\n")
    code, output = lint_imports(tmp_path, PYTHONPATH=str(tmp_path / "src"))
    assert code == 1, output
    assert f"{CONTRACTS[contract]} BROKEN" in output
    assert named in output
