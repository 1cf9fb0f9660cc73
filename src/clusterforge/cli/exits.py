"""What each command's exit status means, declared on the command itself: `--help` ends with it (a section of its
own, each status's text wrapped to the terminal and aligned after the codes, as click lays out the options) and the
command reference lists it, so the two cannot say different things. Every command exits 2 for a user mistake (a wrong
argument, an invalid inventory, an unreachable Vault): click's usage errors and the one domain error alike; but
`plan`, whose statuses are terraform plan's, exits 1 for every error (cli/plan.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

import click

MISTAKE = "a mistake in the arguments or the inventory, or a service that could not be used, named on stderr"


def exit_statuses(statuses: Mapping[int, str]) -> Callable[[click.Command], click.Command]:
    """Declare a command's exit statuses (status 2 is MISTAKE unless given); put it above @click.command()."""

    def declare(command: click.Command) -> click.Command:
        meanings = dict(sorted({2: MISTAKE, **statuses}.items()))
        command.exit_statuses = meanings  # type: ignore[attr-defined]
        # Written when --help is, at the formatter's width: click calls the command's format_epilog last.
        command.format_epilog = partial(_format_exit_statuses, command)  # type: ignore[method-assign]
        return command

    return declare


def _format_exit_statuses(command: click.Command, ctx: click.Context, formatter: click.HelpFormatter) -> None:
    """The command's own epilog, if it has one, then "Exit status:" as a section like click's "Options:": one row a
    status, its text wrapped at the help's width with every line after the first aligned under the first."""
    click.Command.format_epilog(command, ctx, formatter)
    with formatter.section("Exit status"):
        formatter.write_dl([(str(code), text) for code, text in (statuses_of(command) or {}).items()])


def statuses_of(command: click.Command) -> dict[int, str] | None:
    return getattr(command, "exit_statuses", None)
