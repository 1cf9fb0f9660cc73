"""The layering docs/development/architecture.md describes, as import-linter checks it: the contracts in pyproject.toml
are all kept, and each one breaks when a module imports what the contract forbids (checked on a copy of the
package). No module imports itself through others (an import cycle), in any package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
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
    ("roles-below-cli", "engine/waits.py", "from ..cli import plan_report", "clusterforge.engine.waits -> "
                                                                          "clusterforge.cli.plan_report"),
    ("steps-through-the-engine", "roles/nfs.py", "from pyinfra import host", "clusterforge.roles.nfs -> pyinfra"),
    ("steps-through-the-engine", "roles/mariadb.py", "import gevent", "clusterforge.roles.mariadb -> gevent"),
    ("layers", "engine/state.py", "from ..roles import common", "clusterforge.engine.state -> clusterforge.roles.common"),
    ("layers", "reach/ssh.py", "from ..check import findings", "clusterforge.reach.ssh -> clusterforge.check.findings"),
    ("reach-over-openssh", "reach/sudo.py", "import click", "clusterforge.reach.sudo -> click"),
    ("operations-through-reach", "roll/batches.py", "import testinfra", "clusterforge.roll.batches -> testinfra"),
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



def import_cycles(graph: grimp.ImportGraph) -> list[str]:
    """The import cycles among the graph's modules, imports inside functions included: for each import, the shortest
    way back from what it imports, if any. Each named once, from its first module by name: 'a.x -> a.y -> a.x'."""
    found = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back:
                modules = (module, *back[:-1])
                first = modules.index(min(modules))
                found.add(" -> ".join((*modules[first:], *modules[:first], min(modules))))
    return sorted(found)


def test_no_module_imports_itself_through_others():
    assert import_cycles(grimp.build_graph("clusterforge", cache_dir=None)) == []


def test_an_import_cycle_is_found_and_named():
    graph = grimp.ImportGraph()
    for importer, imported in [("p.cli.plan", "p.cli.roll"), ("p.cli.roll", "p.cli.run"), ("p.cli.run", "p.cli.plan"),
                               ("p.cli.roll", "p.cli.plan"), ("p.cli.plan", "p.errors"), ("p.model.a", "p.model.b"),
                               ("p.model.b", "p.model.a"), ("p.cli.run", "p.errors")]:
        graph.add_import(importer=importer, imported=imported)
    assert import_cycles(graph) == ["p.cli.plan -> p.cli.roll -> p.cli.plan", "p.cli.plan -> p.cli.roll -> p.cli.run -> "
                                    "p.cli.plan", "p.model.a -> p.model.b -> p.model.a"]
    graph.remove_import(importer="p.cli.roll", imported="p.cli.plan")
    graph.remove_import(importer="p.model.b", imported="p.model.a")
    assert import_cycles(graph) == ["p.cli.plan -> p.cli.roll -> p.cli.run -> p.cli.plan"]
    graph.remove_import(importer="p.cli.run", imported="p.cli.plan")
    assert import_cycles(graph) == []


# What makes a string a command on a node's state in Slurm: scontrol's update of a state, its reboot, a next state.
NODE_STATE_WORDS = ("scontrol update", "scontrol reboot", "State=DRAIN", "State=UNDRAIN", "State=RESUME",
                    "State=DOWN", "nextstate=")
GATE = Path("slurm") / "drains.py"
# What makes a string a command on Slurm's reservations (the admission gate's holds): not drains, but a hold keeps a
# node from users' jobs as surely, so they too are built in one module (slurm/reservations.py).
RESERVATION_WORDS = ("ReservationName=", "create reservation", "delete reservation", "Flags=MAINT")
HOLDS = Path("slurm") / "reservations.py"


def node_state_commands(path: Path, words: tuple[str, ...] = NODE_STATE_WORDS) -> list[str]:
    """The string constants of a module (f-strings' parts included) that compose a node-state command: neither a
    docstring nor a command-line option's help."""
    import ast

    tree = ast.parse(path.read_text())
    prose = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                prose.add(id(body[0].value))
        if isinstance(node, ast.keyword) and node.arg in ("help", "description"):
            prose.update(id(n) for n in ast.walk(node.value))
    return [f"{path.name}:{node.lineno}: {node.value[:60]!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
            and any(word.lower() in node.value.lower() for word in words)]


def test_only_the_gate_composes_a_command_on_a_nodes_state():
    package = ROOT / "src" / "clusterforge"
    found = [hit for path in sorted(package.rglob("*.py")) if path.relative_to(package) != GATE
             for hit in node_state_commands(path)]
    assert found == [], "node-state commands composed outside slurm/drains.py"
    assert node_state_commands(package / GATE)  # the gate itself does compose them: the test sees them


def test_only_the_holds_module_composes_a_command_on_reservations():
    package = ROOT / "src" / "clusterforge"
    found = [hit for path in sorted(package.rglob("*.py")) if path.relative_to(package) != HOLDS
             for hit in node_state_commands(path, RESERVATION_WORDS)]
    assert found == [], "reservation commands composed outside slurm/reservations.py"
    assert node_state_commands(package / HOLDS, RESERVATION_WORDS)
    assert node_state_commands(package / HOLDS) == []  # and no drain, undrain, resume or reboot


def test_a_node_state_command_composed_elsewhere_is_found(tmp_path):
    module = tmp_path / "elsewhere.py"
    module.write_text('"""Docs may say scontrol reboot ASAP nextstate=resume."""\n'
                      'def f(n):\n    """scontrol update State=DRAIN, in a docstring."""\n'
                      '    return f"scontrol reboot ASAP nextstate=resume {n}"\n')
    assert [hit.split(": ", 1)[0] for hit in node_state_commands(module)] == ["elsewhere.py:4"]


ARCHITECTURE = ROOT / "docs" / "development" / "architecture.md"


def documented_layers(text: str) -> list[str]:
    """The lines of the architecture page's ```layers block, spaces around each ``|`` made one."""
    block = text.split("```layers\n", 1)[1].split("```", 1)[0]
    return [" | ".join(part.strip() for part in line.split("|")) for line in block.splitlines() if line.strip()]


def contracted_layers() -> list[str]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c for c in contracts if c["id"] == "layers"]
    return [" | ".join(part.strip() for part in line.split("|")) for line in layers["layers"]]


def test_the_architecture_page_lists_the_layers_the_contract_holds_and_describes_each_part():
    """The page cannot drift from the contract again: its list is the contract's, line for line, and every part of
    a layer has an entry (``**name**``) on the page."""
    text = ARCHITECTURE.read_text()
    assert documented_layers(text) == contracted_layers()
    parts = [part for line in contracted_layers() for part in line.split(" | ")]
    assert [part for part in parts if f"**{part}**" not in text] == []


def test_a_layer_the_page_does_not_list_is_found():
    text = ARCHITECTURE.read_text().replace("roll | accept | deploy\n", "roll | deploy\n", 1)
    assert documented_layers(text) != contracted_layers()
