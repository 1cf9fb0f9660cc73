"""`clusterforge validate` as an admin and a script run it: every problem of an inventory in one run, by the entry's
inventory name with the value given, as text or as JSON (the shape docs/operations documents)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from golden_cases import PROD, ROOT, prod_edited

# The proof: a typo, a wrong type and a missing node, each in a different entry.
MISTAKES = (('Partition("debug", nodes="gpu-node-032", max_time=', 'Partition("debug", nodes="gpu-node-032", max_tme='),
            ("    sockets=2,", '    sockets="two",'),
            ('Partition("train", profiles=("dgx-h100",)', 'Partition("train", nodes="gpu-node-099", profiles=()'))


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clusterforge.cli", "validate", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def broken(tmp_path: Path) -> Path:
    return prod_edited(tmp_path, *MISTAKES)


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_a_typo_a_wrong_type_and_a_missing_node_in_one_run(tmp_path):
    path = broken(tmp_path)
    result = run(path.name, cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "Error: the inventory has 3 problems:",
        "  profiles[dgx-h100].sockets = 'two': Input should be a valid integer, unable to parse string as an integer "
        f"(broken.py:{line_of(path, 'sockets=')})",
        "  partitions[debug].max_tme: unknown field of Partition; did you mean max_time? "
        f"(broken.py:{line_of(path, 'max_tme=')})",
        f"  partitions[train].nodes: gpu-node-099 is not a node of this cluster (broken.py:{line_of(path, '099')})",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.py"]  # nothing written beside it


def test_json_lists_the_problems_as_objects(tmp_path):
    path = broken(tmp_path)
    result = run("--json", path.name, cwd=tmp_path)
    assert result.returncode == 2 and result.stderr == ""
    assert json.loads(result.stdout) == {"schema": 1, "inventory": "broken.py", "valid": False, "problems": [
        {"where": "profiles[dgx-h100].sockets", "value": "'two'",
         "what": "Input should be a valid integer, unable to parse string as an integer",
         "origin": f"broken.py:{line_of(path, 'sockets=')}"},
        {"where": "partitions[debug].max_tme", "what": "unknown field of Partition; did you mean max_time?",
         "origin": f"broken.py:{line_of(path, 'max_tme=')}"},
        {"where": "partitions[train].nodes", "what": "gpu-node-099 is not a node of this cluster",
         "origin": f"broken.py:{line_of(path, '099')}"},
    ]}


def test_json_of_a_valid_inventory():
    result = run("--json", str(PROD))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"schema": 1, "inventory": str(PROD), "valid": True, "cluster": "prod",
                                         "slurm_version": "22.05", "nodes": 32, "gpus": 256, "partitions": 3,
                                         "problems": []}


def test_json_of_a_file_that_is_no_inventory(tmp_path):
    (tmp_path / "bad.py").write_text("cluster = (\n")
    result = run("--json", "bad.py", cwd=tmp_path)
    assert result.returncode == 2
    (problem,) = json.loads(result.stdout)["problems"]
    assert problem["where"] == "bad.py" and problem["what"].startswith("bad.py:1: invalid Python")
