"""The clusterforge command as an admin runs it: exit codes, messages, files, and never a traceback for a mistake."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from golden_cases import GOLDEN, PROD, ROOT, prod_edited

PYINFRA = Path(sys.executable).with_name("pyinfra")


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clusterforge.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def broken(tmp_path: Path, old: str, new: str) -> Path:
    return prod_edited(tmp_path, (old, new))


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_validate_a_valid_inventory():
    result = run("validate", str(PROD))
    assert result.returncode == 0, result.stderr
    assert "cluster prod is valid for Slurm 22.05 (32 nodes, 256 GPUs, 3 partitions)" in result.stdout


def test_validate_lists_every_problem_one_per_line_and_exits_2(tmp_path):
    path = broken(tmp_path, 'Partition("debug", nodes="gpu-node-032"', 'Partition("debug", nodes="gpu-node-033"')
    path.write_text(path.read_text().replace('files="/dev/nvidia[0-7]"', 'files="/dev/nvidia[0-6]"'))
    result = run("validate", path.name, cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0] == "Error: the inventory has 2 problems:"
    debug_line = line_of(path, 'Partition("debug"')
    gpus_line = line_of(path, "gpus=Gpus(")
    assert lines[1:] == [
        f"  profiles[dgx-h100].gpus.files: /dev/nvidia[0-6] names 7 device files but count is 8 (broken.py:{gpus_line})",
        f"  partitions[debug].nodes: gpu-node-033 is not a node of this cluster (broken.py:{debug_line})",
    ]


def test_validate_refuses_a_fabric_manager_that_is_not_the_drivers_version_at_its_line(tmp_path):
    path = broken(tmp_path, "fabric_manager=DRIVER,", 'fabric_manager="550.144.03-1",')
    result = run("validate", path.name, cwd=tmp_path)
    assert result.returncode == 2, result.stdout
    assert result.stderr.strip().splitlines() == [
        "Error: the inventory has 1 problem:",
        "  stack.gpu.fabric_manager: '550.144.03-1' is not the driver's version '550.163.01-1': nvidia-fabricmanager "
        "must match the driver to the patch level or the NVSwitch fabric never starts and CUDA sees no usable GPU "
        f"(broken.py:{line_of(path, 'fabric_manager=')})",
    ]


@pytest.mark.parametrize("old, new, expected", [
    ("sockets=2,", "sockets=2,,", "broken.py:{line}: invalid Python"),
    ("sockets=2,", "sockets=TWO,", "broken.py:{line}: NameError: name 'TWO' is not defined"),
    ("sockets=2,", 'sockets="two",', "profiles[dgx-h100].sockets = 'two': Input should be a valid integer"),
    ("sockets=2,", "sockets=2, socket=3,", "profiles[dgx-h100].socket: unknown field of Profile"),
])
def test_python_mistakes_in_the_inventory_are_located_without_a_traceback(tmp_path, old, new, expected):
    path = broken(tmp_path, old, new)
    result = run("validate", path.name, cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert expected.format(line=line_of(path, new)) in result.stderr


def test_an_inventory_without_a_cluster(tmp_path):
    (tmp_path / "empty.py").write_text("hosts = ['a']\n")
    result = run("validate", "empty.py", cwd=tmp_path)
    assert result.returncode == 2 and "empty.py: defines no Cluster" in result.stderr


def test_a_missing_inventory_file(tmp_path):
    result = run("validate", "nope.py", cwd=tmp_path)
    assert result.returncode == 2 and "nope.py: no such inventory file" in result.stderr


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_render_writes_every_file_as_the_golden_case(tmp_path, version):
    result = run("render", str(PROD), "--out", str(tmp_path / "out"), "--slurm-version", version)
    assert result.returncode == 0, result.stderr
    expected = GOLDEN / f"prod-{version}" / "expected"
    written = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert written == sorted(p.name for p in expected.iterdir())
    for name in written:
        assert (tmp_path / "out" / name).read_bytes() == (expected / name).read_bytes()


def test_render_twice_gives_identical_bytes(tmp_path):
    for out in ("a", "b"):
        assert run("render", str(PROD), "--out", str(tmp_path / out)).returncode == 0
    for file in (tmp_path / "a").iterdir():
        assert file.read_bytes() == (tmp_path / "b" / file.name).read_bytes()


def test_render_for_an_unsupported_release(tmp_path):
    result = run("render", str(PROD), "--out", str(tmp_path), "--slurm-version", "20.11")
    assert result.returncode == 2
    assert "Error: Slurm 20.11 is not supported; clusterforge renders for 21.08, 22.05" in result.stderr
    assert not any(tmp_path.iterdir())


def test_render_refuses_an_invalid_inventory_and_writes_nothing(tmp_path):
    path = broken(tmp_path, 'default=True', 'default=False')
    result = run("render", path.name, "--out", "out", cwd=tmp_path)
    assert result.returncode == 2 and "no partition is the default" in result.stderr
    assert not (tmp_path / "out").exists()


def test_show_summarises_the_cluster():
    result = run("show", str(PROD))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "dgx-h100   32 nodes  2x56 cores x2 threads, 2000000 MiB, 8 x h100  gpu-node-[001-032]" in out
    assert "total: 32 nodes, 7168 CPUs, 256 GPUs" in out
    assert "train*" in out and "priority    32 nodes  max 2-00:00:00  tier 10  preempts train" in out
    assert "leaf03: 8 nodes  gpu-node-[017-024]" in out
    assert "spine01: leaf01, leaf02, leaf03, leaf04" in out


ACCOUNTS = """
        accounts=(Account("research", fairshare=40, qos=("high", "normal"), default_qos="normal"),
                  Account("ml", parent="research", grp_tres_mins="gres/gpu=43200", max_wall="1-00:00:00"),
                  Account("ops")),
        users=(User("ann", accounts=("ml", "research"), default_account="ml", max_jobs=4),
               User("bob", accounts=("ops",), admin="operator")),"""


def test_show_lists_qos_the_account_tree_users_and_limits(tmp_path):
    qos = 'qos=(Qos("high", priority=100, max_tres_per_user="gres/gpu=64"),),'
    path = broken(tmp_path, qos, qos + ACCOUNTS)
    path.write_text(path.read_text().replace("    Accounting,", "    Account, Accounting, User,", 1))
    result = run("show", path.name, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = lines.index("accounting (enforce associations,limits,qos,safe)")
    assert lines[start + 1:] == [
        "  qos high  Priority=100  MaxTRESPerUser=gres/gpu=64",
        "  account root",
        "    account research  Fairshare=40  QOS=high,normal  DefaultQOS=normal  users ann",
        "      account ml  GrpTRESMins=gres/gpu=43200  MaxWall=1-00:00:00  users ann*",
        "    account ops  users bob*",
        "  user ann  MaxJobs=4",
        "  user bob  admin operator",
    ]


def test_pyinfra_reports_inventory_problems_cleanly_and_touches_no_host(tmp_path):
    path = broken(tmp_path, 'leaf="leaf04"', 'leaf="leaf05"')
    result = subprocess.run([str(PYINFRA), path.name, "exec", "--", "true"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Traceback" not in output
    assert "nodes[gpu-node-[025-032]].leaf: 'leaf05' is not a leaf of the fabric" in output
    assert f"pyinfra error in broken.py line {line_of(path, 'host_groups(cluster')}" in output
    assert "Connecting" not in output and "Connected" not in output


@pytest.mark.parametrize("old, new, expected, needle", [
    # A problem that belongs to one key of the inventory points at that key's own line.
    ("default=True, max_time=\"7-00:00:00\"", "max_time=\"7-00:00:00\"",
     "partitions: no partition is the default: set default=True on one", "    partitions=("),
    ("    vault=Vault(", "    slurm_conf_extra={\n        \"MaxJobCount\": 50000,\n        \"ReturnToServce\": 1,\n    },\n"
                          "    vault=Vault(",
     "slurm_conf_extra[ReturnToServce]: not a slurm.conf key in Slurm 22.05", '"ReturnToServce"'),
    # A misspelt field is one problem that names the field meant.
    ("cores_per_socket=56,", "cores_per_sockt=56,",
     "profiles[dgx-h100].cores_per_sockt: unknown field of Profile; did you mean cores_per_socket?",
     "cores_per_sockt"),
])
def test_a_problem_points_at_the_line_of_what_is_wrong(tmp_path, old, new, expected, needle):
    path = broken(tmp_path, old, new)
    result = run("validate", path.name, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("Error: the inventory has 1 problem:"), result.stderr
    assert f"{expected}" in result.stderr and f"(broken.py:{line_of(path, needle)})" in result.stderr, result.stderr


@pytest.mark.parametrize("old, new, expected", [
    # pyinfra runs the file itself: the first mistake stops it, named by the entry's class.
    ("sockets=2,", 'sockets="two",', "Profile.sockets = 'two': Input should be a valid integer"),
    ("cores_per_socket=56,", "cores_per_sockt=56,", "did you mean cores_per_socket?"),
])
def test_pyinfra_reports_a_python_mistake_in_the_inventory_as_cleanly_as_validate(tmp_path, old, new, expected):
    path = broken(tmp_path, old, new)
    result = subprocess.run([str(PYINFRA), path.name, "exec", "--", "true"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "Traceback" not in output and "pydantic" not in output, output
    assert expected in output and f"(broken.py:{line_of(path, new)})" in output, output
    assert "pyinfra error in broken.py line" in output  # the inventory's line, not clusterforge's
    assert "Connecting" not in output


def test_a_controller_that_also_runs_jobs_is_one_host_in_both_groups(tmp_path):
    path = broken(tmp_path, 'controller=Host("slurm-ctl01", address="10.0.0.10")',
                  'controller=Host("gpu-node-001", address="10.0.1.1")')
    result = run("hosts", "--json", path.name, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    listing = json.loads(result.stdout)
    assert (listing["schema"], listing["cluster"]) == (1, "prod")
    hosts = listing["hosts"]
    assert [h["name"] for h in hosts].count("gpu-node-001") == 1
    node = next(h for h in hosts if h["name"] == "gpu-node-001")
    assert node["groups"] == ["controller", "compute"] and len(node["device_files"]) == 8


def test_the_cli_starts_without_pyinfra_or_the_vault_client():
    # validate, render and show touch neither; the secrets commands import the Vault client when they run.
    probe = "import sys, clusterforge.cli; print(sorted(m for m in ('pyinfra', 'hvac') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True).stdout.strip() == "[]"
    from clusterforge.cli.secrets import _NEXT_DEPLOY, KIND_NAMES
    from clusterforge.secrets import KINDS

    assert sorted(KINDS) == list(KIND_NAMES) == sorted(_NEXT_DEPLOY)
