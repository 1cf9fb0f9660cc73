"""`clusterforge accept`'s mistakes, each exit 2 with what and where, before any host is reached."""

from __future__ import annotations

from click.testing import CliRunner
from golden_cases import PROD, prod_edited

from clusterforge.cli import cli

ADMISSION = '    admission=Admission(programs=Programs(image="registry.example.org#hpc/acceptance:2026.11")),\n'


def test_an_inventory_without_admission_says_what_to_add(tmp_path):
    inventory = prod_edited(tmp_path, (ADMISSION, ""))
    result = CliRunner().invoke(cli, ["accept", str(inventory), "--dry-run"])
    assert result.exit_code == 2
    assert f"{inventory}: no profile has admission: give the GPU profiles admission=Admission(" in result.output


def test_limit_naming_a_node_without_admission_is_refused():
    result = CliRunner().invoke(cli, ["accept", str(PROD), "--limit", "gpu-node-[031-033]", "--dry-run"])
    assert result.exit_code == 2
    assert f"--limit: not nodes with admission in {PROD}: gpu-node-033" in result.output


def test_a_limit_that_is_not_a_hostlist_is_refused():
    result = CliRunner().invoke(cli, ["accept", str(PROD), "--limit", "gpu-node-[031-", "--dry-run"])
    assert result.exit_code == 2 and "--limit: " in result.output
