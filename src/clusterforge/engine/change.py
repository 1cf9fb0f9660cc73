"""What one operation of the deploy does on one host, decided once, before any operation exists.

A role asks for an operation (``ops.file``, ``ops.daemon``, ...: engine/ops.py); the answer is a ``Change``, worked out
from the host's state read before the run (engine/state.py) and what the inventory wants. It holds everything anyone
asks of that decision: whether it acts and the commands it sends, what `clusterforge plan` says of it (with a diff for
a file, and the reason of a restart), and what pyinfra says where it does nothing. The rehearsal records it, `plan`
reports it, a real run hands its commands to one pyinfra operation (engine/run.py), and a role that chains on it reads
``acts`` (or ``writes``). Nothing decides it a second time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..secrets import Secret


@dataclass(frozen=True, slots=True)
class Upload:
    """A file written on the host from memory (a Secret is never shown: engine/upload.py)."""

    path: str
    content: bytes | str | Secret

    def __repr__(self) -> str:
        return f"Upload({self.path})"


@dataclass(frozen=True, slots=True)
class Call:
    """A Python function run on the host when the operation runs, given the host as a step sees it (engine/run.py's
    Here), then ``args`` and ``kwargs``. Made with run.py's ``call``, which checks them against its parameters."""

    function: Callable[..., None]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Command = str | Upload | Call


@dataclass(frozen=True, slots=True)
class Diff:
    """A text file's change, as `clusterforge plan` shows it: made into a unified diff only when a plan is made."""

    path: str
    installed: str | None  # None: the file is new
    wanted: str


@dataclass(frozen=True, slots=True)
class Change:
    """One operation on one host. ``commands``: what the host runs, in order; none where it is already right.
    ``said``: what it does, in an admin's words (`clusterforge plan`); ``why``: the reason of a restart.
    ``otherwise``: what pyinfra says of it where it does nothing. ``shared``: every host of the run gets the
    operation, acting or not, because pyinfra orders hosts only through the operations they share. ``holds``: for
    a file, what it holds once done, which a daemon's inputs are made of (engine/ops.py's ``service``)."""

    name: str
    commands: tuple[Command, ...] = ()
    said: tuple[str, ...] = ()
    diff: Diff | None = None
    why: str = ""
    otherwise: str = ""
    shared: bool = False
    holds: str | None = None  # a file's: the SHA-256 of what it holds once done (None: it is absent)

    @property
    def acts(self) -> bool:
        return bool(self.commands)

    @property
    def writes(self) -> bool:
        """It writes a file's content, not only its owner or mode."""
        return any(isinstance(c, Upload) for c in self.commands)
