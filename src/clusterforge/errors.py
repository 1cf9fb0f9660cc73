"""The one error type the CLI catches, and the problems an inventory can have."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType


class ClusterforgeError(Exception):
    """A mistake the user can fix. The CLI prints it as one clean message and exits 2."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with an inventory: where (the entry's path), what, the file:line it was written at, and the
    value given as Python writes it, where a type mistake shows it (a secret's never)."""

    where: str
    message: str
    origin: str | None = None
    value: str | None = None

    def __str__(self) -> str:
        where = f"{self.where} = {self.value}" if self.value is not None else self.where
        text = f"{where}: {self.message}"
        return f"{text} ({self.origin})" if self.origin else text

    def to_json(self) -> dict[str, str]:
        """``where``, ``what``, and ``value`` and ``origin`` where known: ``validate --json``'s objects."""
        shown = {"where": self.where, "what": self.message, "value": self.value, "origin": self.origin}
        return {key: text for key, text in shown.items() if text is not None}


class DeployError(ClusterforgeError):
    """A host, or the run, cannot be brought to what the inventory says (ids taken, a partial key change, keys
    that disagree): the deploy stops with this message, before changing what it would have got wrong."""


class InventoryError(ClusterforgeError):
    """Every problem found in an inventory at once."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...]):
        self.problems = tuple(problems)
        super().__init__(self._text())

    def _text(self) -> str:
        count = len(self.problems)
        head = f"the inventory has {count} problem{'s' if count != 1 else ''}:"
        return "\n".join([head, *(f"  {p}" for p in self.problems)])


def for_pyinfra(error: ClusterforgeError) -> ClusterforgeError:
    """The error as pyinfra's CLI prints it (one line, no traceback) when it runs under that CLI, from an inventory
    or a deploy file; the error itself anywhere else. pyinfra is imported only when it is the one running."""
    if "pyinfra_cli" not in sys.modules:
        return error
    from pyinfra.api.exceptions import PyinfraError

    if isinstance(error, PyinfraError):
        return error
    # A class made for this error alone (errors are few, and end the run): still a ``type(error)``, and a
    # PyinfraError, which pyinfra prints as one line.
    kind = type(type(error).__name__, (_AtTheCallersLine, type(error), PyinfraError), {})
    clone = kind.__new__(kind)
    clone.__dict__.update(error.__dict__)
    clone.args = error.args
    return clone


_PACKAGE_DIR = str(Path(__file__).resolve().parent)
_TRACEBACK = BaseException.__traceback__


class _AtTheCallersLine(Exception):
    """pyinfra prefixes an error with the innermost frame of its traceback that is not pyinfra's own; these frames
    stop at the caller of clusterforge (the inventory or deploy line), not at the clusterforge line that raised."""

    @property  # type: ignore[override]
    def __traceback__(self) -> TracebackType | None:
        entries = []
        tb = _TRACEBACK.__get__(self)
        while tb is not None:
            entries.append(tb)
            tb = tb.tb_next
        while len(entries) > 1 and entries[-1].tb_frame.f_code.co_filename.startswith(_PACKAGE_DIR):
            entries.pop()
        chain = None
        for entry in reversed(entries):
            chain = TracebackType(chain, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
        return chain

    @__traceback__.setter
    def __traceback__(self, value: TracebackType | None) -> None:
        _TRACEBACK.__set__(self, value)
