"""The layering docs/development/architecture.md describes, as import-linter checks it: the contracts in pyproject.toml
are all kept, and each one breaks when a module imports what the contract forbids (checked on a copy of the
package). No module imports itself through others (an import cycle), in any package."""

from __future__ import annotations

import ast
import os
import re
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
    # check/ compares the live fabric through fabric_import/, a layer below it: never the other way.
    ("layers", "fabric_import/report.py", "from ..check import findings", "clusterforge.fabric_import.report -> "
                                                                          "clusterforge.check.findings"),
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


def _code_strings(tree: ast.AST) -> list[ast.Constant]:
    """The string constants of a module (f-strings' parts included) that are neither a docstring nor a command-line
    option's help."""
    prose = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                prose.add(id(body[0].value))
        if isinstance(node, ast.keyword) and node.arg in ("help", "description"):
            prose.update(id(n) for n in ast.walk(node.value))
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose]


def node_state_commands(path: Path, words: tuple[str, ...] = NODE_STATE_WORDS) -> list[str]:
    """The string constants of a module that compose a node-state command."""
    return [f"{path.name}:{node.lineno}: {node.value[:60]!r}" for node in _code_strings(ast.parse(path.read_text()))
            if any(word.lower() in node.value.lower() for word in words)]


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
# Slurm's commands on its nodes and jobs, which slurm/ alone composes (nodes.py, jobs.py, controller.py, drains.py,
# reservations.py): a module elsewhere runs what slurm/ builds, over its own transport.
SLURM_COMMANDS = ("sinfo", "scontrol", "sbatch", "scancel", "squeue", "srun", "sacct", "sdiag")
# What follows a command where a string runs it: an option, a subcommand of scontrol's, or the rest given by an
# f-string's next part; where it runs: at the start of the text, after $( or a pipe, or timeout(1)'s bound.
_SUBCOMMANDS = ("show", "update", "reboot", "ping", "reconfigure", "create", "delete", "token", "cancel_reboot",
                "requeue", "requeuehold", "hold", "release", "listpids", "suspend", "resume", "wait_job", "write")
_RUNS = re.compile(r"(?:^\s*|\$\(\s*|\|\s*|&&\s*|\btimeout(?:\s+-\S+(?:\s+\d+)?)*\s+\d+\s+)"
                   rf"({'|'.join(SLURM_COMMANDS)})(?=\s+-|\s+(?:{'|'.join(_SUBCOMMANDS)})\b|\s+$)")
SLURM = Path("slurm")


def slurm_commands(path: Path) -> list[str]:
    """Where a module composes one of SLURM_COMMANDS: an argv whose first word it is (a list or tuple of more than
    command names), or a string that runs it; not a docstring, a help text, a message naming it in passing."""
    tree = ast.parse(path.read_text())
    firsts = {id(node.elts[0]) for node in ast.walk(tree) if isinstance(node, (ast.List, ast.Tuple)) and node.elts
              and not all(isinstance(e, ast.Constant) and e.value in SLURM_COMMANDS for e in node.elts)}
    return [f"{path.name}:{node.lineno}: {node.value[:60]!r}" for node in _code_strings(tree)
            if (id(node) in firsts and node.value in SLURM_COMMANDS) or _RUNS.search(node.value)]


def test_only_slurm_composes_a_slurm_command():
    package = ROOT / "src" / "clusterforge"
    found = [hit for path in sorted(package.rglob("*.py")) if path.relative_to(package).parts[0] != SLURM.name
             for hit in slurm_commands(path)]
    assert found == [], "Slurm commands composed outside slurm/"
    for module in ("nodes.py", "jobs.py", "controller.py", "drains.py", "reservations.py"):
        assert slurm_commands(package / SLURM / module), module  # slurm/ itself does compose them: the test sees them


def test_a_slurm_command_composed_elsewhere_is_found(tmp_path):
    module = tmp_path / "elsewhere.py"
    module.write_text('''"""Docs may say sinfo -N and scontrol show node."""
import click
ARGV = ["squeue", "-h"]
NAMES = ("sinfo", "squeue")
ON_NODE = f"sh -c 's=$(sinfo --noheader --node={1})'"
@click.option("--smoke", help="srun --immediate on every node")
def f(job, n):
    """scancel 42, in a docstring."""
    said = [f"not listed by sinfo", f"could not drain {n}: scontrol {job}", f"{n}: sbatch: refused"]
    return (f"scancel {job}", f"timeout -k 2 10 scontrol show config", "x | sacct --starttime=now",
            ["srun", "hostname"], {"sdiag": 1}, said)
''')
    assert [hit.split(": ", 1)[0] for hit in slurm_commands(module)] == [
        "elsewhere.py:3", "elsewhere.py:5", "elsewhere.py:10", "elsewhere.py:10", "elsewhere.py:10", "elsewhere.py:11"]
