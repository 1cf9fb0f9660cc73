"""The node-side programs, each shipped as one file: a zip of its modules that python3 imports from (zipimport).

A program uploaded module by module is, for as long as the upload lasts (or for good, where a run stops in the
middle), a mix of two versions: a Prolog that starts then fails to import, and Slurm drains the node. One file,
renamed over the old one (ops.file(atomic=True)), is the old program or the new one, never a mix; a process already
running keeps reading the file it opened (its launcher imports through a descriptor: render/health.py's
imports_from). The zip is made the same, byte for byte, on every machine and every run:
entries sorted, stored uncompressed (no zlib version in the bytes), with fixed dates and modes; so its digest changes
only with its modules.
"""

from __future__ import annotations

import io
import re
import zipfile
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

from ..exporter import PACKAGE as EXPORTER_PACKAGE
from ..gate import PACKAGE as GATE_PACKAGE
from ..repair import PACKAGE as REPAIR_PACKAGE
from .gate import PROGRAM as GATE
from .health import PACKAGE as HEALTH_PACKAGE
from .health import PROGRAM as HEALTH
from .slurm_exporter import PROGRAM as EXPORTER

__all__ = ["EXPORTER", "GATE", "HEALTH", "REPAIR", "archive", "exporter_files", "exporter_program", "gate_files",
           "gate_program", "health_files", "health_program", "repair_files", "repair_program", "shipped_with"]

REPAIR = "/usr/lib/clusterforge/clusterforge-repair.pyz"

_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip entry holds


def archive(files: dict[str, bytes]) -> bytes:
    """A zip of ``files`` (name in the zip -> content), the same bytes for the same files."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as zipped:
        for name in sorted(files):
            entry = zipfile.ZipInfo(name, date_time=_EPOCH)
            entry.create_system = 3  # Unix: the mode below is read as one
            entry.external_attr = 0o100644 << 16
            zipped.writestr(entry, files[name])
    return out.getvalue()


@cache
def health_files() -> tuple[str, ...]:
    """The node health check's files: every module of clusterforge/health and the slurm modules they import (the
    node-state gate, the holds, the command runner), found from their imports."""
    return shipped_with(resources.files("clusterforge"), "health")


@cache
def health_program() -> bytes:
    """The node health check (Slurm's HealthCheckProgram, Prolog, Epilog and RebootProgram): its files
    (health_files) as the package ``clusterforge_health``, in clusterforge's layout."""
    return _program(HEALTH_PACKAGE, health_files())


def _file(root: Traversable, module: tuple[str, ...]) -> str | None:
    """The file of a module of ``root``'s package, as a path under it ('slurm/drains.py'), or None: not a module."""
    for path in ("/".join(module) + ".py", "/".join((*module, "__init__.py"))):
        if root.joinpath(*path.split("/")).is_file():
            return path
    return None


# A relative import statement: `from .x import y`, `from .. import (a,\n b)`, at any depth of a module. Every deploy
# ships the programs, so it finds their modules each run: matching this is some 20 times faster than parsing each
# module, and a test holds it to Python's own parse over every module of the package (tests/render).
_RELATIVE_IMPORT = re.compile(r"^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|(?:[^\n#;\\]|\\\n)*)",
                              re.MULTILINE)


def relative_imports(source: str) -> list[tuple[int, str | None, tuple[str, ...]]]:
    """Each relative import of a module's source: (level, module or None, names imported)."""
    found = []
    for dots, module, names in _RELATIVE_IMPORT.findall(source):
        listed = re.sub(r"#[^\n]*", "", names).strip("()").replace("\\\n", " ").split(",")
        found.append((len(dots), module or None, tuple(words[0] for n in listed if (words := n.split()))))
    return found


def _imported(root: Traversable, path: str, files: dict[tuple[str, ...], str | None]) -> set[str]:
    """The files of ``root``'s package that the module at ``path`` imports relatively, and their packages'
    ``__init__.py`` (Python runs those first). Absolute imports are the standard library's or a third party's.
    ``files``: each module's file (``_file``) as found so far, since many modules import the same ones."""
    package = tuple(path.split("/")[:-1])
    found: set[str] = set()
    for level, name, names in relative_imports(root.joinpath(*path.split("/")).read_text(encoding="utf-8")):
        base = (*package[:len(package) - level + 1], *(name.split(".") if name else ()))
        # `from .x import y`: y is a name of x, or a module of the package x (`from . import families`).
        for module in (base, *((*base, each) for each in names)):
            for depth in range(len(module) + 1):
                if (prefix := module[:depth]) not in files:
                    files[prefix] = _file(root, prefix)
                if files[prefix] is not None:
                    found.add(files[prefix])
    return found


def shipped_with(root: Traversable, package: str) -> tuple[str, ...]:
    """Every module of ``package`` (a directory of ``root``'s package) and every module of ``root``'s package that
    they import, directly or not, with the packages' ``__init__.py``: paths under ``root``, sorted."""
    todo = sorted(f"{package}/{f.name}" for f in root.joinpath(package).iterdir() if f.name.endswith(".py"))
    todo.append("__init__.py")
    files: set[str] = set()
    known: dict[tuple[str, ...], str | None] = {}
    while todo:
        path = todo.pop()
        if path not in files:
            files.add(path)
            todo += sorted(_imported(root, path, known) - files)
    return tuple(sorted(files))


@cache
def exporter_files() -> tuple[str, ...]:
    """The Slurm exporter's files: every module of clusterforge/exporter and the health modules they import (the
    drain format, the parsers it reads with, the command runner), found from their imports, not listed by hand."""
    return shipped_with(resources.files("clusterforge"), "exporter")


@cache
def exporter_program() -> bytes:
    """The Slurm exporter: its files (exporter_files) as the package ``clusterforge_exporter``, in clusterforge's
    layout, so that its relative imports resolve as they do here."""
    return _program(EXPORTER_PACKAGE, exporter_files())


@cache
def gate_files() -> tuple[str, ...]:
    """The admission gate's files: every module of clusterforge/gate and the health and admission modules they
    import (the holds, the drains, the command runner, the tests' scripts, parsers and verdicts), found from their
    imports."""
    return shipped_with(resources.files("clusterforge"), "gate")


@cache
def gate_program() -> bytes:
    """The admission gate: its files (gate_files) as the package ``clusterforge_gate``, in clusterforge's layout."""
    return _program(GATE_PACKAGE, gate_files())


def _program(package: str, files: tuple[str, ...]) -> bytes:
    """``files`` (paths under clusterforge's package) as the package ``package``, in clusterforge's layout, so that
    their relative imports resolve as they do here."""
    source = resources.files("clusterforge")
    return archive({f"{package}/{name}": source.joinpath(*name.split("/")).read_bytes() for name in files})


@cache
def repair_files() -> tuple[str, ...]:
    """The repair loop's files: every module of clusterforge/repair and the slurm and health modules they import
    (the node-state gate, the node reader, the holds, the Xid table, the command runner), found from their imports."""
    return shipped_with(resources.files("clusterforge"), "repair")


@cache
def repair_program() -> bytes:
    """The repair loop: its files (repair_files) as the package ``clusterforge_repair``."""
    return _program(REPAIR_PACKAGE, repair_files())
