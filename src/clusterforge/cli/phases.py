"""How `roll`, `admit` and `accept` speak while they work: each line of a run with the time it was said (a batch or a
round may wait an hour), and first, the controller they are about to ask. Reaching it may take OpenSSH's whole
connect timeout to fail, and meanwhile the admin should know whom the command waits for. That line goes to stderr
only, so that a --json document on stdout stays the only thing there."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..reach.hosts import Target


def stamped(line: str, err: bool = False) -> None:
    """A run's line, with the time it was said."""
    click.echo(f"{datetime.now().astimezone():%Y-%m-%d %H:%M:%S%z} {line}", err=err)


def announce(command: str, controller: str, targets: Sequence[Target], timed: bool) -> None:
    """``connecting``'s line on stderr, with its time where every line of the run has one (``timed``)."""
    line = connecting(command, controller, targets)
    if timed:
        stamped(line, err=True)
    else:
        click.echo(line, err=True)


def connecting(command: str, controller: str, targets: Sequence[Target]) -> str:
    """``command``'s line before it connects to ``controller``, with the address (and a port other than 22) it is
    reached at, as the inventory gives them: the same words name it when it cannot be reached."""
    target = next((t for t in targets if t.name == controller), None)
    where = _where(target) if target is not None else controller
    return f"{command}: connecting to the controller {controller}" + (f" ({where})" if where != controller else "")


def _where(target: Target) -> str:
    reach = target.reach
    return reach.hostname + (f" port {reach.port}" if reach.port and reach.port != 22 else "")
