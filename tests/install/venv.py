"""The wheel built from this clone and installed into a fresh virtualenv outside it, as an admin installs the tool:
its dependencies from PyPI, and nothing of the clone on the path (no PYTHONPATH, the commands run elsewhere)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run(command: list[str | Path], cwd: Path, env: Mapping[str, str] | None = None,
        timeout: int = 600) -> subprocess.CompletedProcess[str]:
    """A command with the clone off the path: PYTHONPATH and the clone's virtualenv left out of its environment."""
    clean = {k: v for k, v in (env or os.environ).items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(c) for c in command], cwd=cwd, env=clean, capture_output=True, text=True,
                          timeout=timeout, check=False)


def build_wheel(into: Path) -> Path:
    built = run([REPO / ".venv" / "bin" / "pip", "wheel", "--no-deps", "--wheel-dir", into, REPO], cwd=into)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = into.glob("clusterforge-*.whl")
    return wheel


def fresh_venv(wheel: Path, where: Path) -> Path:
    """A new virtualenv at ``where`` with the wheel and its dependencies installed."""
    made = run([sys._base_executable, "-m", "venv", where], cwd=where.parent)  # type: ignore[attr-defined]
    assert made.returncode == 0, made.stderr
    installed = run([where / "bin" / "pip", "install", "--quiet", wheel], cwd=where.parent, timeout=900)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    return where
