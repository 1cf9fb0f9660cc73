"""The clusterforge command loads a command's module only when that command runs or `--help` lists it, and a
command imports what it works with only when it runs: `--help` lists every command without the model, and
`validate` runs without the renderers, the Vault client, pyinfra or testinfra."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner
from golden_cases import PROD, ROOT

from clusterforge.cli import cli

COMMANDS = ["accept", "admit", "apply", "check", "fabric", "hosts", "init", "plan", "render", "repair", "roll", "secrets", "show",
            "validate"]
DEPLOY_TOOLS = ["hvac", "pyinfra", "testinfra"]
RENDERERS = ["clusterforge.render", "jinja2"]
MODEL = ["clusterforge.fabric_import", "clusterforge.model", "pydantic"]

# Runs the command as the console script does, then names the modules it loaded (stdout's last line).
PROBE = """
import json, sys
from clusterforge.cli import main
sys.argv = ["clusterforge", *sys.argv[1:]]
try:
    main()
except SystemExit as end:
    code = end.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def loaded(*args: str) -> tuple[str, set[str]]:
    result = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True,
                            timeout=60, check=True)
    *output, last = result.stdout.splitlines()
    probe = json.loads(last)
    assert probe["code"] in (0, None), result.stdout + result.stderr
    return "\n".join(output), set(probe["modules"])


def packages(modules: set[str], names: list[str]) -> list[str]:
    """Those of ``names`` loaded, as a package or through any module of it."""
    return [name for name in names if any(m == name or m.startswith(name + ".") for m in modules)]


def test_help_lists_every_command_with_its_one_line_help_without_loading_the_model():
    output, modules = loaded("--help")
    listed = output.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed] == COMMANDS
    context = click.Context(cli)
    for name, line in zip(COMMANDS, listed):
        shown = line.split(None, 1)[1].removesuffix("...")
        assert shown and " ".join(cli.get_command(context, name).help.split()).startswith(shown)
    assert packages(modules, MODEL + RENDERERS + DEPLOY_TOOLS) == []


def test_validate_loads_the_model_but_not_the_renderers_nor_the_deploys_tools():
    output, modules = loaded("validate", str(PROD))
    assert "cluster prod is valid" in output
    assert packages(modules, ["clusterforge.model"]) == ["clusterforge.model"]
    assert packages(modules, RENDERERS + DEPLOY_TOOLS) == []


@pytest.mark.parametrize("name", COMMANDS)
def test_every_listed_command_loads_and_shows_its_help(name):
    result = CliRunner().invoke(cli, [name, "--help"], prog_name="clusterforge")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Usage: clusterforge {name} ")
