"""Every command works with the base install: each third-party package a module of clusterforge imports (at its top
or inside a function) is a base dependency in pyproject.toml, or one of theirs, never a test or docs extra only.
The exporter is left out: the controller runs it on Debian's python3-prometheus-client, not on this install."""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "clusterforge"
SHIPPED_APART = {PACKAGE / "exporter"}


def imported_packages(package: Path) -> dict[str, list[str]]:
    """Top-level names of the absolute imports of each module under ``package``, with the modules importing them."""
    found: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        if any(apart in path.parents for apart in SHIPPED_APART):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], []).append(str(path.relative_to(package)))
    return found


def base_distributions() -> set[str]:
    """The base dependencies and, installed here, everything they require (extras left out)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [Requirement(text) for text in project["dependencies"]]
    seen: set[str] = set()
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in seen or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        todo += [Requirement(text) for text in importlib.metadata.requires(name) or []]
    return seen


def missing_from_base(package: Path) -> dict[str, list[str]]:
    providers = importlib.metadata.packages_distributions()
    base = base_distributions()
    missing = {}
    for name, importers in imported_packages(package).items():
        if name == "clusterforge" or name in sys.stdlib_module_names or name == "__future__":
            continue
        if not {canonicalize_name(d) for d in providers.get(name, [])} & base:
            missing[name] = importers
    return missing


# Imported only by a program the deploy ships to the controller, where its role installs the Debian package.
ON_THE_CONTROLLER = {"sushy": ["repair/bmc.py"]}


def test_every_package_imported_at_run_time_is_a_base_dependency():
    missing = missing_from_base(PACKAGE)
    assert {name: importers for name, importers in missing.items() if ON_THE_CONTROLLER.get(name) != importers} == {}


def test_what_only_the_controller_imports_is_installed_there_by_the_deploy():
    from clusterforge.render.programs import repair_files
    from clusterforge.roles.repair import BMC_PACKAGES

    assert "python3-sushy" in BMC_PACKAGES["redfish"]
    assert set(ON_THE_CONTROLLER["sushy"]) <= set(repair_files())


def test_what_check_and_roll_connect_through_is_in_the_base_dependencies():
    assert {"pytest-testinfra", "pytest", "pyinfra", "paramiko"} <= base_distributions()


def test_a_module_importing_a_test_only_package_is_named(tmp_path):
    planted = tmp_path / "clusterforge"
    (planted / "check").mkdir(parents=True)
    (planted / "check" / "report.py").write_text("def later():\n    import importlinter\n    import paramiko.client\n")
    assert missing_from_base(planted) == {"importlinter": ["check/report.py"]}
