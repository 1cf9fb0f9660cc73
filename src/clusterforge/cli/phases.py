"""The line `roll`, `admit` and `accept` say before they first ask the controller. Reaching it may take OpenSSH's
whole connect timeout to fail, and meanwhile the admin should know whom the command waits for. The callers print it
on stderr only, so that a --json document on stdout stays the only thing there."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..reach.hosts import Target


def connecting(command: str, controller: str, targets: Sequence[Target]) -> str:
    """``command``'s line before it connects to ``controller``, with the address (and a port other than 22) it is
    reached at, as the inventory gives them: the same words name it when it cannot be reached."""
    target = next((t for t in targets if t.name == controller), None)
    where = _where(target) if target is not None else controller
    return f"{command}: connecting to the controller {controller}" + (f" ({where})" if where != controller else "")


def _where(target: Target) -> str:
    reach = target.reach
    return reach.hostname + (f" port {reach.port}" if reach.port and reach.port != 22 else "")
