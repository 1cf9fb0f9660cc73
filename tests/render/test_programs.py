"""The node-side programs as the deploy ships them, one file each (render/programs.py): the same bytes on every build,
every module in them, the exporter's found from its imports, nothing imported but the standard library (and, for the
Slurm exporter, Debian's prometheus_client), checked by importing every module in a bare python3 that has only
those, and the health check's launchers running it: as any user."""

from __future__ import annotations

import ast
import hashlib
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from needs import skip_or_fail

from clusterforge.health.expect import Expectations
from clusterforge.model.settings import EPILOG_PROGRAM, HEALTH_PROGRAM, PROLOG_PROGRAM
from clusterforge.render import health, programs

PYTHON = "/usr/bin/python3"  # the node's: Debian's python3, as the launchers run it
SRC = Path(programs.__file__).resolve().parents[1]


def built_elsewhere(function: str) -> str:
    """The sha256 of a program built by another process, in another directory, with another umask."""
    code = (f"import hashlib, os; os.umask(0o077); from clusterforge.render import programs; "
            f"print(hashlib.sha256(programs.{function}()).hexdigest())")
    return subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True, check=True,
                          timeout=60).stdout.strip()


@pytest.mark.parametrize("function", ["health_program", "exporter_program"])
def test_a_program_is_the_same_bytes_on_every_build(function):
    assert built_elsewhere(function) == hashlib.sha256(getattr(programs, function)()).hexdigest()


def test_the_health_program_holds_every_health_module_and_slurms_as_they_are_in_clusterforges_layout():
    # Of slurm/, all but the jobs and the controller's other commands, which the node's check never runs.
    shipped = ["__init__.py", *(f"{d}/{p.name}" for d in ("health", "slurm") for p in (SRC / d).glob("*.py")
                                if p.name not in ("jobs.py", "controller.py"))]
    assert programs.health_files() == tuple(sorted(shipped))
    with zipfile.ZipFile(io.BytesIO(programs.health_program())) as zipped:
        names = zipped.namelist()
        assert names == [f"clusterforge_health/{n}" for n in programs.health_files()]
        assert all(zipped.read(n) == (SRC / n.split("/", 1)[1]).read_bytes() for n in names)
        assert {i.date_time for i in zipped.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_the_exporter_holds_its_package_and_the_slurm_modules_it_imports_in_clusterforges_layout():
    exporter = [f"exporter/{p.name}" for p in sorted((SRC / "exporter").glob("*.py"))]
    # What the exporter imports of slurm/ today: its commands (the node listing, the jobs' listing, sdiag), the drain
    # format the node reader says whose a drain is with, the parsers, the runner, the admission gate's holds; of
    # admission, the nodes' records (the gate's, read as nobody); nothing of health/.
    assert programs.exporter_files() == tuple(sorted(["__init__.py", *exporter, "admission/__init__.py",
                                                      "admission/records.py", "slurm/__init__.py",
                                                      "slurm/commands.py", "slurm/controller.py", "slurm/drains.py",
                                                      "slurm/jobs.py", "slurm/nodes.py", "slurm/parse.py",
                                                      "slurm/reservations.py"]))
    with zipfile.ZipFile(io.BytesIO(programs.exporter_program())) as zipped:
        assert zipped.namelist() == [f"clusterforge_exporter/{n}" for n in programs.exporter_files()]
        assert zipped.read("clusterforge_exporter/slurm/drains.py") == (SRC / "slurm" / "drains.py").read_bytes()


def test_a_health_module_the_exporter_comes_to_import_is_shipped_with_it_and_what_that_one_imports(tmp_path):
    tree = tmp_path / "clusterforge"
    for path in ["__init__.py", *(f"{d}/{p.name}" for d in ("exporter", "health", "slurm", "admission")
                                  for p in (SRC / d).glob("*.py"))]:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_bytes((SRC / path).read_bytes())
    before = programs.shipped_with(tree, "exporter")
    assert "health/xid.py" not in before
    with (tree / "exporter" / "sdiag.py").open("a") as module:
        module.write("\n\ndef later():\n    from ..health.xid import bus_id\n    return bus_id\n")
    # xid.py with its package's __init__.py, and the module xid.py itself imports (health/parse.py, which imports
    # slurm/parse.py, shipped already): nothing else.
    assert set(programs.shipped_with(tree, "exporter")) - set(before) == {"health/__init__.py", "health/xid.py",
                                                                          "health/parse.py"}
    (tree / "health" / "xid.py").write_text("from . import gpu_names, probes\n")
    assert set(programs.shipped_with(tree, "exporter")) - set(before) >= {"health/xid.py", "health/gpu_names.py",
                                                                          "health/probes.py"}


def imports_alone(program: bytes, package: str, tmp_path: Path, allowed: tuple[str, ...] = ()
                  ) -> subprocess.CompletedProcess:
    """Every module of ``program`` imported by a python3 whose path is the program, the standard library and the
    ``allowed`` directories: -I ignores PYTHON* and the user's site, -S the site packages."""
    path = tmp_path / f"{package}.pyz"
    path.write_bytes(program)
    with zipfile.ZipFile(io.BytesIO(program)) as zipped:
        modules = [n[:-3].replace("/", ".").removesuffix(".__init__") for n in zipped.namelist()]
    code = ("import importlib, sys; sys.path[:0] = sys.argv[1:]; "
            f"[importlib.import_module(m) for m in {modules!r}]; print('imported', len({modules!r}))")
    return subprocess.run([PYTHON, "-I", "-S", "-c", code, str(path), *allowed], capture_output=True, text=True,
                          timeout=60, check=False, cwd=tmp_path)


def test_the_health_program_imports_only_the_standard_library(tmp_path):
    found = imports_alone(programs.health_program(), "health", tmp_path)
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("imported")
    # The check sees an import outside the standard library: a module that imports one fails.
    program = {f"clusterforge_health/{n}": (SRC / n).read_bytes() for n in programs.health_files()}
    program["clusterforge_health/health/probes.py"] += b"\nimport jinja2\n"
    broken = imports_alone(programs.archive(program), "broken", tmp_path)
    assert broken.returncode != 0 and "No module named 'jinja2'" in broken.stderr


# Debian's python3-prometheus-client, and what it imports that Debian ships apart (python3-decorator).
CLIENT = ("prometheus_client", "decorator")


def prometheus_client_alone(tmp_path: Path) -> str:
    """A directory holding only Debian's prometheus_client and its own dependencies, as the controller has them."""
    code = "import importlib, sys; print(*(importlib.import_module(m).__file__ for m in sys.argv[1:]))"
    where = subprocess.run([PYTHON, "-I", "-c", code, *CLIENT], capture_output=True, text=True, check=False,
                           timeout=60)
    if where.returncode != 0:
        skip_or_fail("python3-prometheus-client is not installed (tests/exporter/apt-packages.txt)")
    alone = tmp_path / "site"
    alone.mkdir()
    for found in map(Path, where.stdout.split()):
        module = found.parent if found.name == "__init__.py" else found
        (alone / module.name).symlink_to(module)
    return str(alone)


def test_the_exporter_imports_only_the_standard_library_and_prometheus_client(tmp_path):
    allowed = prometheus_client_alone(tmp_path)
    found = imports_alone(programs.exporter_program(), "exporter", tmp_path, (allowed,))
    assert found.returncode == 0, found.stderr
    program = {f"clusterforge_exporter/{n}": (SRC / n).read_bytes() for n in programs.exporter_files()}
    program["clusterforge_exporter/exporter/nodes.py"] += b"\nimport yaml\n"
    broken = imports_alone(programs.archive(program), "broken", tmp_path, (allowed,))
    assert broken.returncode != 0 and "No module named 'yaml'" in broken.stderr


def installed(tmp_path: Path, path: str) -> Path:
    """The launcher the deploy installs at ``path``, on the health program in ``tmp_path``."""
    program = tmp_path / "clusterforge-health.pyz"
    program.write_bytes(programs.health_program())
    text = health.launcher(path)
    assert text.startswith("#!/usr/bin/python3 -I\n") and repr(health.PROGRAM) in text
    launcher = tmp_path / path.rsplit("/", 1)[1]
    launcher.write_text(text.replace(repr(health.PROGRAM), repr(str(program))))
    launcher.chmod(0o755)
    return launcher


def test_the_launchers_run_the_program_from_its_one_file_each_in_its_mode(tmp_path):
    """As any user, with the program's own overrides for its files: a report when asked, the check with no
    argument (scontrol a stand-in that says the node is idle), and the prolog whatever it is given."""
    (tmp_path / "bin").mkdir()
    scontrol = tmp_path / "bin" / "scontrol"
    scontrol.write_text('#!/bin/sh\necho "NodeName=gpu01 State=IDLE Reason=(null)"\n')
    scontrol.chmod(0o755)
    (tmp_path / "boot_id").write_text("boot-1\n")
    expect = tmp_path / "health.json"
    expect.write_text(Expectations(node="gpu01", probes=("mounts",), mounts=("/",)).to_json())
    state = tmp_path / "state"
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "CLUSTERFORGE_HEALTH_EXPECT": str(expect),
           "CLUSTERFORGE_HEALTH_STATE": str(state), "CLUSTERFORGE_HEALTH_BOOT_ID": str(tmp_path / "boot_id")}

    def run(path: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(installed(tmp_path, path)), *args], env=env, capture_output=True, text=True,
                              timeout=60, check=False)

    report = run(HEALTH_PROGRAM, "report")
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout) == {"node": "gpu01", "notes": [], "findings": []}
    assert not state.exists()  # a report changes nothing
    check = run(HEALTH_PROGRAM)
    assert check.returncode == 0, check.stdout + check.stderr
    assert " none 0 finding(s)" in (state / "last-check").read_text()
    wrong = run(HEALTH_PROGRAM, "repot")
    assert wrong.returncode == 2 and "usage: clusterforge-health" in wrong.stderr
    for path in (PROLOG_PROGRAM, EPILOG_PROGRAM):  # Slurm passes none: the mode is the launcher's own
        boundary = run(path, "repot")
        assert (boundary.returncode, boundary.stdout, boundary.stderr) == (0, "", "")


# Run before the launcher's own lines: once the program has started importing, a newer build is renamed over its
# file, as a deploy may do at any moment. zipimport reads the file's index once, then opens the file again, by its
# name, for each module it imports.
RENAMED_MEANWHILE = """import os, sys
def hook(event, args, newer=sys.argv.pop(1), program=sys.argv.pop(1)):
    if event == "import" and args[0].endswith(".commands") and os.path.exists(newer):
        os.rename(newer, program)
sys.addaudithook(hook)
"""


def test_a_newer_program_renamed_over_a_starting_one_leaves_it_reading_the_file_it_opened(tmp_path):
    launcher = installed(tmp_path, HEALTH_PROGRAM)
    with zipfile.ZipFile(io.BytesIO(programs.health_program())) as zipped:
        # Every module a line longer: the old index points the later imports at the wrong bytes of the new file.
        newer = programs.archive({n: b"# a newer build\n" + zipped.read(n) for n in zipped.namelist()})
    (tmp_path / "newer.pyz").write_bytes(newer)
    (tmp_path / "boot_id").write_text("boot-1\n")
    expect = tmp_path / "health.json"
    expect.write_text(Expectations(node="gpu01", probes=("mounts",), mounts=("/",)).to_json())
    env = {"PATH": "/usr/bin:/bin", "CLUSTERFORGE_HEALTH_EXPECT": str(expect),
           "CLUSTERFORGE_HEALTH_STATE": str(tmp_path / "state"),
           "CLUSTERFORGE_HEALTH_BOOT_ID": str(tmp_path / "boot_id")}
    report = subprocess.run([PYTHON, "-I", "-c", RENAMED_MEANWHILE + launcher.read_text(), str(tmp_path / "newer.pyz"),
                             str(tmp_path / "clusterforge-health.pyz"), "report"], env=env, capture_output=True,
                            text=True, timeout=60, check=False)
    assert not (tmp_path / "newer.pyz").exists()  # renamed while the program imported its modules
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["findings"] == []


def relative_imports_parsed(source: str) -> list[tuple[int, str | None, tuple[str, ...]]]:
    """``programs.relative_imports`` by Python's own parse: what the fast reading must equal."""
    return [(node.level, node.module, tuple(alias.name for alias in node.names))
            for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom) and node.level]


def test_the_fast_reading_of_relative_imports_is_pythons_own_parse_for_every_module_of_the_package():
    # The deploy finds the programs' modules each run by a pattern, not by parsing: it must read every module of
    # clusterforge as Python's parser does, or a program could ship without a module it imports.
    modules = sorted(SRC.rglob("*.py"))
    assert len(modules) > 200
    for module in modules:
        source = module.read_text(encoding="utf-8")
        assert sorted(programs.relative_imports(source), key=str) == sorted(relative_imports_parsed(source),
                                                                           key=str), module


def test_the_fast_reading_takes_each_way_of_writing_a_relative_import():
    source = ("from . import a\nfrom .b import c as d, e  # a comment\n"
              "from ..f.g import (\n    h,  # why\n    i as j,\n)\n"
              "def k():\n    from ...l import m; import os\n    from .n import \\\n        o\n"
              'x = """\nfrom .p import q\n"""\n')
    expected = [(1, None, ("a",)), (1, "b", ("c", "e")), (2, "f.g", ("h", "i")), (3, "l", ("m",)), (1, "n", ("o",))]
    assert sorted(relative_imports_parsed(source), key=str) == sorted(expected, key=str)
    # A statement inside a string is no import: the parse knows, the pattern does not; the package has none such
    # (the test above), and one would show there.
    assert sorted(programs.relative_imports(source), key=str) == sorted([*expected, (1, "p", ("q",))], key=str)
