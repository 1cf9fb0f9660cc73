"""The one error type the CLI catches, and the problems an inventory can have."""

from __future__ import annotations

import sys
from dataclasses import dataclass


class ClusterforgeError(Exception):
    """A mistake the user can fix. The CLI prints it as one clean message and exits 2."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with an inventory: where (the entry's path), what, and the file:line it was written at."""

    where: str
    message: str
    origin: str | None = None

    def __str__(self) -> str:
        text = f"{self.where}: {self.message}"
        return f"{text} ({self.origin})" if self.origin else text


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
    """The error as pyinfra's CLI prints it, one clean line rather than a traceback, when it runs under that CLI
    (an inventory or deploy file); the error itself anywhere else. pyinfra is imported only when it is running."""
    if "pyinfra_cli" not in sys.modules or isinstance(error, _pyinfra_error_types()):
        return error
    from pyinfra.api.exceptions import PyinfraError

    kind = _AS_PYINFRA.get(type(error))
    if kind is None:
        kind = _AS_PYINFRA[type(error)] = type(type(error).__name__, (type(error), PyinfraError), {})
    clone = kind.__new__(kind)
    clone.__dict__.update(error.__dict__)
    clone.args = error.args
    return clone


_AS_PYINFRA: dict[type, type] = {}


def _pyinfra_error_types() -> tuple[type, ...]:
    from pyinfra.api.exceptions import PyinfraError

    return (PyinfraError,)
