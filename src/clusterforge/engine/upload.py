"""Handing a secret to pyinfra's files.put without it reaching the operator's disk or pyinfra's output."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from ..errors import DeployError, for_pyinfra
from ..secrets import Secret

if TYPE_CHECKING:
    from .run import DeployRun


class SecretFile(io.BytesIO):
    """A secret as the ``src`` of files.put: uploaded from memory, never written to a local file. Its name and repr
    are a label. pyinfra shows an in-memory source by its ``name`` when it
    has one (``--debug-operations``, ``--json``), and by its contents otherwise."""

    def __init__(self, secret: Secret) -> None:
        super().__init__(secret.reveal())
        self.name = repr(secret)

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__


def refuse_diff(run: DeployRun, dest: str) -> None:
    """Stop if pyinfra was asked for --diff, which prints the old and new contents of a file that changes."""
    if getattr(run.pyinfra.config, "DIFF", False):
        raise for_pyinfra(DeployError(f"pyinfra --diff would print the contents of {dest}, which is a secret. Run "
                                      "without --diff; --dry still shows which files would change"))
