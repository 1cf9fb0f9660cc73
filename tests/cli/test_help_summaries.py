"""Every command's summary in `--help`, as an 80-column terminal shows it: a whole sentence, never cut by click
mid-phrase ("..."), for the commands of clusterforge and of each of its groups."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from clusterforge.cli import cli


def groups(group: click.Group = cli, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    context = click.Context(group)
    found = [path]
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            found += groups(command, (*path, name))
    return found


def listed(path: tuple[str, ...]) -> dict[str, str]:
    """The commands the group's --help lists, each with its summary as shown."""
    shown = CliRunner().invoke(cli, [*path, "--help"], terminal_width=80)
    assert shown.exit_code == 0, shown.output
    lines = shown.output.split("\nCommands:\n", 1)[1].splitlines()
    return {line.split()[0]: line.split(None, 1)[1] for line in lines if line.startswith("  ") and line.split()}


@pytest.mark.parametrize("path", groups(), ids=lambda path: " ".join(("clusterforge", *path)))
def test_each_summary_is_a_whole_sentence(path):
    summaries = listed(path)
    assert summaries
    cut = {name: said for name, said in summaries.items() if said.endswith("...") or not said.endswith(".")}
    assert cut == {}, cut


def test_the_summaries_are_the_first_sentence_of_each_help():
    context = click.Context(cli)
    for name, said in listed(()).items():
        first = (cli.get_command(context, name).help or "").split("\n\n", 1)[0]
        assert " ".join(first.split()).startswith(said), name
