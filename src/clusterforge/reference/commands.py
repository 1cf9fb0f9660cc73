"""The command reference: every clusterforge command with its options (laid out by mkdocs-click from the click
definitions) and its exit statuses (declared on the command, cli/exits.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import click

from ..cli import cli
from ..cli.exits import statuses_of
from ..errors import ClusterforgeError

INTRO = """# Commands

Generated from the command definitions at every build of these pages; `clusterforge COMMAND --help` prints the same
options and exit statuses. Every command exits 2 for a user mistake (a wrong argument, an invalid inventory, a Vault
that cannot be used) with the mistake named on stderr, and changes nothing then.

The deploy is `clusterforge apply INVENTORY`; from a clone, pyinfra's own command runs the same deploy:
`pyinfra INVENTORY deploy/cluster.py` (see [the deploy](../operations/deploy.md)).

| Command | What it does |
|---|---|
"""


def leaf_commands(group: click.Group = cli, path: tuple[str, ...] = ("clusterforge",)
                  ) -> Iterator[tuple[str, click.Command]]:
    """Every command that runs something, with its full name ("clusterforge fabric import"), in name order."""
    context = click.Context(group, info_name=path[-1])
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if command is None:
            continue
        if isinstance(command, click.Group):
            yield from leaf_commands(command, (*path, name))
        else:
            yield " ".join((*path, name)), command


def _defined_at(command: click.Command) -> tuple[str, str]:
    """The module and attribute that hold ``command``, for mkdocs-click to load it by."""
    module = sys.modules[command.callback.__module__]  # type: ignore[union-attr]
    for attribute, value in vars(module).items():
        if value is command:
            return module.__name__, attribute
    raise ClusterforgeError(f"{command.name}: not found in {module.__name__}")


def _anchor(name: str) -> str:
    return name.replace(" ", "-")


def command_section(name: str, command: click.Command) -> str:
    statuses = statuses_of(command)
    if not statuses:
        raise ClusterforgeError(f"{name} declares no exit statuses (cli/exits.py): the reference cannot list them")
    module, attribute = _defined_at(command)
    lines = ["::: mkdocs-click", f"    :module: {module}", f"    :command: {attribute}", f"    :prog_name: {name}",
             "    :depth: 1", "    :style: plain", "", "**Exit status**", "", "| Status | Meaning |", "|---|---|"]
    lines += [f"| {code} | {meaning} |" for code, meaning in statuses.items()]
    return "\n".join(lines) + "\n"


def commands_page() -> str:
    commands = list(leaf_commands())
    table = "".join(f"| [`{name}`](#{_anchor(name)}) | {command.get_short_help_str(limit=100)} |\n"
                    for name, command in commands)
    return "\n".join([INTRO + table, *(command_section(name, command) for name, command in commands)])
