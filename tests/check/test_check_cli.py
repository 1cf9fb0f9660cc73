"""`clusterforge check` as an admin runs it, where no cluster is needed: user mistakes exit 2 with one message, an
unreachable cluster exits 2, and the other commands still load neither testinfra nor pyinfra."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from golden_cases import PROD

REPO = Path(__file__).resolve().parents[2]
CLI = [str(REPO / ".venv" / "bin" / "clusterforge")]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=REPO, text=True, capture_output=True, timeout=120)


def test_a_missing_inventory_and_an_unknown_limit_are_user_mistakes():
    missing = run("check", "inventories/nope.py")
    assert missing.returncode == 2 and "inventories/nope.py: no such inventory file" in missing.stderr
    unknown = run("check", "inventories/vagrant.py", "--limit", "gpu[02-03]")
    assert unknown.returncode == 2
    assert "--limit: not hosts or groups of inventories/vagrant.py: gpu03" in unknown.stderr
    assert "Traceback" not in missing.stderr + unknown.stderr


def test_an_inventory_without_host_groups_is_refused(tmp_path):
    bare = tmp_path / "bare.py"
    bare.write_text(PROD.read_text().split("controller, compute, login")[0])
    result = run("check", str(bare))
    assert result.returncode == 2 and "exposes no hosts to pyinfra" in result.stderr


def test_an_unreachable_cluster_is_could_not_check_in_json_too():
    # prod's addresses (10.0.0.0/16) are not routed from here: every connection times out or is refused.
    result = run("check", str(PROD), "--json", "--limit", "login01")
    report = json.loads(result.stdout)
    assert result.returncode == 2 and report["status"] == 2
    assert {(c["host"], c["status"]) for c in report["checks"]} == {("slurm-ctl01", "UNCHECKED"),
                                                                     ("login01", "UNCHECKED")}
    # The shape docs/operations/check.md documents.
    assert report["cluster"] == "prod" and report["summary"] == "could not check everything"
    assert report["findings"] == sum(len(c["findings"]) for c in report["checks"]) > 0
    for check in report["checks"]:
        assert set(check) == {"host", "check", "status", "detail", "findings"}, check
        assert all(set(f) == {"kind", "message"} and f["kind"] == "unchecked" for f in check["findings"]), check


def test_validate_show_and_render_import_neither_testinfra_nor_pyinfra():
    code = ("import sys; from clusterforge.cli import cli; "
            "print(sorted(m for m in ('testinfra', 'pyinfra') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, text=True, capture_output=True, check=True).stdout
    assert out.strip() == "[]"
