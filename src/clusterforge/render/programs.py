"""The node-side programs, each shipped as one file: a zip of its modules that python3 imports from (zipimport).

A program uploaded module by module is, for as long as the upload lasts (or for good, where a run stops in the
middle), a mix of two versions: a Prolog that starts then fails to import, and Slurm drains the node. One file,
renamed over the old one (ops.file(atomic=True)), is the old program or the new one, never a mix; a process already
running keeps reading the file it opened. The zip is made the same, byte for byte, on every machine and every run:
entries sorted, stored uncompressed (no zlib version in the bytes), with fixed dates and modes; so its digest changes
only with its modules.
"""

from __future__ import annotations

import io
import zipfile
from functools import cache
from importlib import resources

from ..exporter import PACKAGE as EXPORTER_PACKAGE
from ..exporter import PROGRAM_FILES
from .health import PACKAGE as HEALTH_PACKAGE
from .health import PROGRAM as HEALTH
from .slurm_exporter import PROGRAM as EXPORTER

__all__ = ["EXPORTER", "HEALTH", "archive", "exporter_program", "health_modules", "health_program"]

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


def health_modules() -> tuple[str, ...]:
    """Every module of clusterforge/health: the program imports them relatively, whatever their number."""
    return tuple(sorted(f.name for f in resources.files("clusterforge.health").iterdir() if f.name.endswith(".py")))


@cache
def health_program() -> bytes:
    """The node health check (Slurm's HealthCheckProgram, Prolog and Epilog): clusterforge/health as the package
    ``clusterforge_health``."""
    source = resources.files("clusterforge.health")
    return archive({f"{HEALTH_PACKAGE}/{name}": source.joinpath(name).read_bytes() for name in health_modules()})


@cache
def exporter_program() -> bytes:
    """The Slurm exporter: its files (exporter.PROGRAM_FILES, with the health modules it imports) as the package
    ``clusterforge_exporter``, in clusterforge's layout, so that its relative imports resolve as they do here."""
    source = resources.files("clusterforge")
    return archive({f"{EXPORTER_PACKAGE}/{name}": source.joinpath(name).read_bytes() for name in PROGRAM_FILES})
