"""The --json documents of the commands that read an inventory, as a script reads them: stdout parsed, each field
asserted against the inventory (tests/cli/test_plan_pipeline.py has plan's, tests/vault/test_cli.py secrets
check's, tests/roll roll --dry-run's)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from golden_cases import PROD, ROOT



def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clusterforge.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def test_show_json_holds_what_show_prints():
    result = run("show", "--json", str(PROD))
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert (body["cluster"], body["slurm_version"], body["auth"]) == ("prod", "22.05", "munge")
    assert body["controller"] == {"name": "slurm-ctl01", "address": "10.0.0.10"}
    assert body["backup_controller"] is None and body["database"]["name"] == "slurm-db01"
    assert [h["name"] for h in body["login"]] == ["login01", "login02"]
    assert body["nfs"] == {"server": {"name": "nfs01", "address": "10.0.0.40"},
                           "exports": ["/export/home", "/export/datasets"]}
    [profile] = body["profiles"]
    assert profile["name"] == "dgx-h100" and profile["hostlist"] == "gpu-node-[001-032]"
    assert len(profile["nodes"]) == 32 and profile["nodes"][0] == "gpu-node-001"
    assert (profile["sockets"], profile["cores_per_socket"], profile["threads_per_core"]) == (2, 56, 2)
    assert profile["real_memory_mib"] == 2000000 and profile["gpus"] == {"count": 8, "type": "h100"}
    assert body["total"] == {"nodes": 32, "cpus": 7168, "gpus": 256}
    partitions = {p["name"]: p for p in body["partitions"]}
    assert list(partitions) == ["train", "debug", "priority"]
    assert partitions["train"]["default"] is True and partitions["train"]["preemptable"] is True
    assert partitions["train"]["preempt_mode"] == "requeue"
    assert partitions["debug"]["nodes"] == ["gpu-node-032"] and partitions["debug"]["max_time"] == "00:30:00"
    assert partitions["priority"]["preempts"] == ["train"] and partitions["priority"]["priority_tier"] == 10
    assert partitions["priority"]["preempt_mode"] is None
    fabric = body["fabric"]
    assert fabric["plugin"] == "tree" and fabric["rail_optimized"] is False and fabric["block_sizes"] == []
    assert fabric["spines"][0] == {"name": "spine01", "switches": ["leaf01", "leaf02", "leaf03", "leaf04"]}
    assert [len(leaf["nodes"]) for leaf in fabric["leaves"]] == [8, 8, 8, 8]
    assert body["accounting"]["qos"] == [{"name": "high", "settings": {"Priority": 100,
                                                                       "MaxTRESPerUser": "gres/gpu=64"}}]


def test_show_json_lists_accounts_and_users_with_their_settings(tmp_path):
    text = PROD.read_text()
    qos = 'qos=(Qos("high", priority=100, max_tres_per_user="gres/gpu=64"),),'
    assert qos in text
    accounts = ('accounts=(Account("research", fairshare=40), Account("ml", parent="research", max_wall="1-00:00:00")),'
                'users=(User("ann", accounts=("ml", "research"), default_account="ml", max_jobs=4),'
                'User("bob", accounts=("ml",), admin="operator")),')
    path = tmp_path / "accounts.py"
    path.write_text(text.replace(qos, qos + accounts).replace("    Accounting,", "    Account, Accounting, User,", 1))
    result = run("show", "--json", path.name, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    accounting = json.loads(result.stdout)["accounting"]
    assert accounting["enforce"] == ["associations", "limits", "qos", "safe"] and accounting["prune"] is False
    assert accounting["accounts"] == [{"name": "research", "parent": "root", "settings": {"Fairshare": 40}},
                                      {"name": "ml", "parent": "research", "settings": {"MaxWall": "1-00:00:00"}}]
    assert accounting["users"] == [
        {"name": "ann", "accounts": ["ml", "research"], "default_account": "ml", "admin": None,
         "settings": {"MaxJobs": 4}},
        {"name": "bob", "accounts": ["ml"], "default_account": "ml", "admin": "operator", "settings": {}}]


def test_show_json_of_an_invalid_inventory_is_no_document_and_exits_2(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text(PROD.read_text().replace("default=True", "default=False"))
    result = run("show", "--json", path.name, cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert "no partition is the default" in result.stderr
