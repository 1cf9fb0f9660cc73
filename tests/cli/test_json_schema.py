"""Every --json document carries "schema", the version of its command's shape (clusterforge/json_documents.py). The
commands with a --json option, walked in the click tree as the command reference walks it, are the ones
json_documents versions; each one's documented shape names `schema`; and each document carries it: produced here
where no cluster or Vault is needed, else asserted by the test file named, which has the stand-ins."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from golden_cases import PROD, ROOT

from clusterforge.json_documents import VERSIONS, document
from clusterforge.reference.commands import leaf_commands

# Where each shape is documented: the page, and the words its description starts at (up to the next heading).
DOCUMENTED = {
    "accept": ("docs/operations/admission.md", "`--json` gives the whole result"),
    "check": ("docs/operations/check.md", "`--json` prints one document"),
    "hosts": ("docs/inventory/index.md", "`hosts --json` prints"),
    "plan": ("docs/operations/plan.md", "`--json` gives the same plan"),
    "roll": ("docs/operations/roll.md", "`--dry-run --json` prints"),
    "secrets check": ("docs/inventory/secrets.md", "`secrets check --json` prints"),
    "show": ("docs/inventory/index.md", "`show --json` prints"),
    "validate": ("docs/inventory/index.md", "`validate --json` prints"),
}
# What prints each document without a cluster or a Vault; PROD's addresses are not routed from here, so check finds
# its hosts unreachable at once and still prints its document.
PRODUCED = {
    "validate": ["validate", "--json", str(PROD)],
    "show": ["show", "--json", str(PROD)],
    "hosts": ["hosts", "--json", str(PROD)],
    "check": ["check", "--json", "--limit", "login01", str(PROD)],
}
# The documents that need stand-ins: a deploy's (plan), a Vault's, a controller's (roll, accept).
ASSERTED_IN = {
    "plan": "tests/cli/test_plan_pipeline.py",
    "secrets check": "tests/vault/test_cli.py",
    "roll": "tests/roll/test_roll_cli.py",
    "accept": "tests/accept/test_cli.py",
}


def json_commands() -> list[str]:
    """Every command with a --json option, by its name under `clusterforge`."""
    return sorted(name.removeprefix("clusterforge ") for name, command in leaf_commands()
                  if any("--json" in getattr(option, "opts", ()) for option in command.params))


def test_every_command_with_json_has_a_schema_version_and_a_way_to_prove_it():
    commands = json_commands()
    assert {"validate", "show", "hosts", "secrets check"} <= set(commands)
    assert sorted(VERSIONS) == commands, "a --json command json_documents does not version, or one gone"
    assert all(isinstance(v, int) and v >= 1 for v in VERSIONS.values())
    assert sorted([*PRODUCED, *ASSERTED_IN]) == commands and sorted(DOCUMENTED) == commands


@pytest.mark.parametrize("command", json_commands())
def test_the_documented_shape_names_schema(command):
    page, start = DOCUMENTED[command]
    text = (ROOT / page).read_text()
    assert text.count(start) == 1, f"{page}: {start!r} not found once"
    section = text.split(start, 1)[1].split("\n## ", 1)[0]
    assert "`schema`" in section or '"schema": 1' in section, f"{page}: {command} --json's shape without schema"


@pytest.mark.parametrize("command", sorted(PRODUCED))
def test_the_document_carries_its_schema(command):
    result = subprocess.run([sys.executable, "-m", "clusterforge.cli", *PRODUCED[command]], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode in (0, 2), result.stderr  # check: 2, its hosts not reached
    body = json.loads(result.stdout)
    assert isinstance(body, dict) and body["schema"] == VERSIONS[command], result.stdout[:200]
    assert next(iter(body)) == "schema"


def test_an_invalid_inventorys_document_carries_its_schema_too(tmp_path):
    (tmp_path / "bad.py").write_text("cluster = (\n")
    result = subprocess.run([sys.executable, "-m", "clusterforge.cli", "validate", "--json", "bad.py"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and json.loads(result.stdout)["schema"] == VERSIONS["validate"]


@pytest.mark.parametrize("command", sorted(ASSERTED_IN))
def test_the_tests_with_stand_ins_assert_the_schema(command):
    asserted = '["schema"] == 1' in (ROOT / ASSERTED_IN[command]).read_text()
    assert asserted, f"{ASSERTED_IN[command]} asserts no schema for {command} --json"


def test_a_body_cannot_bring_a_schema_of_its_own():
    assert json.loads(document("show", {"cluster": "c"})) == {"schema": VERSIONS["show"], "cluster": "c"}
    with pytest.raises(ValueError, match="'schema' is the document's version"):
        document("show", {"schema": 7})
