"""The code the README and the docs show is code that works: every Python sample parses, every field it gives an
inventory entry is one the entry has, its imports import, and a sample that elides nothing (no `...`) runs and
builds a valid cluster. Every relative link of the README (read on the repository's front page, outside the site's
strict build) points at a file that exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from clusterforge import model
from clusterforge.model import Cluster, resolve

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def samples() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((f"{page.relative_to(ROOT)}:{line}", match.group(1)))
    return found


SAMPLES = samples()


def elides(code: str) -> bool:
    return any(isinstance(node, ast.Constant) and node.value is Ellipsis for node in ast.walk(ast.parse(code)))


IMPORTING = [(where, code) for where, code in SAMPLES if re.search(r"^from clusterforge", code, re.MULTILINE)]
COMPLETE = [(where, code) for where, code in IMPORTING if not elides(code)]
ENTRIES = {name: getattr(model, name) for name in model.__all__}


def test_the_docs_show_samples_and_a_complete_inventory():
    assert SAMPLES
    assert any(where.startswith("README.md") for where, _ in COMPLETE)


@pytest.mark.parametrize(("where", "code"), SAMPLES, ids=[where for where, _ in SAMPLES])
def test_every_python_sample_parses(where, code):
    ast.parse(code, filename=where)


@pytest.mark.parametrize(("where", "code"), SAMPLES, ids=[where for where, _ in SAMPLES])
def test_every_field_a_sample_gives_an_entry_is_one_it_has(where, code):
    unknown = [f"{node.func.id}({keyword.arg}=...)" for node in ast.walk(ast.parse(code))
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ENTRIES
               for keyword in node.keywords
               if keyword.arg is not None and keyword.arg not in ENTRIES[node.func.id].model_fields]
    assert not unknown, f"{where}: no such field: {', '.join(unknown)}"


@pytest.mark.parametrize(("where", "code"), IMPORTING, ids=[where for where, _ in IMPORTING])
def test_the_imports_of_a_sample_import(where, code):
    imports = [node for node in ast.parse(code).body if isinstance(node, (ast.Import, ast.ImportFrom))]
    exec(compile(ast.Module(body=imports, type_ignores=[]), where, "exec"), {})  # noqa: S102


@pytest.mark.parametrize(("where", "code"), COMPLETE, ids=[where for where, _ in COMPLETE])
def test_a_complete_sample_builds_a_valid_cluster(where, code, monkeypatch):
    monkeypatch.chdir(ROOT)  # a sample names files as the repository's inventories do
    namespace: dict[str, object] = {"__name__": "sample"}
    exec(compile(code, where, "exec"), namespace)  # noqa: S102 - the repository's own documentation
    clusters = [value for value in namespace.values() if isinstance(value, Cluster)]
    assert clusters, f"{where} imports from clusterforge, elides nothing, and builds no Cluster"
    for cluster in clusters:
        resolve(cluster)


def test_every_relative_link_of_the_readme_exists():
    text = (ROOT / "README.md").read_text()
    targets = [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t) and not t.startswith("#")]
    missing = [t for t in targets if not (ROOT / t.split("#", 1)[0]).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"


def test_the_test_command_builds_the_site_strictly_and_counts_its_warnings():
    """`mkdocs build --strict --quiet` counts no warning and passes a broken link (mkdocs/mkdocs#4126): seen here,
    a page with a broken link built with exit 0 with --quiet and 1 without it."""
    builds = [line for line in (ROOT / "scripts" / "test.sh").read_text().splitlines()
              if "mkdocs build" in line and not line.lstrip().startswith("#")]
    assert builds and all("--strict" in line and "--quiet" not in line and " -q" not in line for line in builds)
