"""What each command's exit status means, declared on the command itself: `--help` ends with it and the command
reference lists it, so the two cannot say different things. Every command exits 2 for a user mistake (a wrong
argument, an invalid inventory, an unreachable Vault): click's usage errors and the one domain error alike; but
`plan`, whose statuses are terraform plan's, exits 1 for every error (cli/plan.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import click

MISTAKE = "a mistake in the arguments or the inventory, or a service that could not be used, named on stderr"


def exit_statuses(statuses: Mapping[int, str]) -> Callable[[click.Command], click.Command]:
    """Declare a command's exit statuses (status 2 is MISTAKE unless given); put it above @click.command()."""

    def declare(command: click.Command) -> click.Command:
        meanings = dict(sorted({2: MISTAKE, **statuses}.items()))
        command.exit_statuses = meanings  # type: ignore[attr-defined]
        # \b keeps click from joining the lines into one paragraph.
        command.epilog = "\b\nExit status:\n" + "\n".join(f"  {code}  {text}" for code, text in meanings.items())
        return command

    return declare


def statuses_of(command: click.Command) -> dict[int, str] | None:
    return getattr(command, "exit_statuses", None)
