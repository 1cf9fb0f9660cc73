"""Every `--help` page as an 80-column terminal shows it: no line wider than the terminal, the exit statuses wrapped
with their text aligned after the code, and a group's help naming only commands that group has."""

from __future__ import annotations

import re

import click
import pytest
from click.testing import CliRunner

from clusterforge.cli import cli
from clusterforge.cli.exits import statuses_of

COLUMNS = 80


def commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command and group under ``group`` (itself first), each with its path of names below clusterforge."""
    found: list[tuple[tuple[str, ...], click.Command]] = [(path, group)]
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            found += commands(command, (*path, name))
        else:
            found.append(((*path, name), command))
    return found


def name_of(path: tuple[str, ...]) -> str:
    return " ".join(("clusterforge", *path))


def help_page(path: tuple[str, ...], **width) -> str:
    shown = CliRunner().invoke(cli, [*path, "--help"], **width)
    assert shown.exit_code == 0, shown.output
    return shown.output


PATHS = [path for path, _ in commands()]
# An 80-column terminal as click learns it: the width given to the context, or $COLUMNS (shutil.get_terminal_size).
WIDTHS = {"terminal_width": {"terminal_width": COLUMNS}, "COLUMNS": {"env": {"COLUMNS": str(COLUMNS)}}}


def test_the_walk_finds_every_command_and_group():
    names = {name_of(path) for path in PATHS}
    assert {"clusterforge", "clusterforge secrets", "clusterforge secrets rotate", "clusterforge fabric import",
            "clusterforge accept", "clusterforge validate"} <= names
    assert len(names) >= 18


@pytest.mark.parametrize("width", WIDTHS.values(), ids=WIDTHS.keys())
@pytest.mark.parametrize("path", PATHS, ids=name_of)
def test_no_help_line_is_wider_than_the_terminal(path, width):
    wide = [(len(line), line) for line in help_page(path, **width).splitlines() if len(line) > COLUMNS]
    assert wide == [], "\n".join(f"{length}: {line}" for length, line in wide)


def exit_section(page: str) -> list[str]:
    return page.split("\nExit status:\n", 1)[1].splitlines()


@pytest.mark.parametrize("path", [path for path, command in commands() if statuses_of(command)], ids=name_of)
def test_each_exit_status_is_wrapped_with_its_text_aligned_after_the_code(path):
    command = dict(commands())[path]
    statuses = statuses_of(command)
    lines = exit_section(help_page(path, terminal_width=COLUMNS))
    entries: dict[int, list[str]] = {}
    column = None
    for line in lines:
        if not line.strip():
            break
        start = re.match(r"^  (\d+) +", line)
        if start:
            code = int(start.group(1))
            entries[code] = [line[start.end():]]
            column = column or start.end()
            assert start.end() == column, f"status {code}'s text does not start where the others' do: {line!r}"
        else:
            indent = len(line) - len(line.lstrip())
            assert entries and indent == column, f"a continued line not aligned after the code: {line!r}"
            entries[code].append(line.strip())
    assert list(entries) == list(statuses)
    for code, meaning in statuses.items():
        assert " ".join(entries[code]) == " ".join(meaning.split()), code


def test_a_long_exit_status_is_wrapped_not_cut():
    shown = exit_section(help_page(("accept",), terminal_width=COLUMNS))
    assert len([line for line in shown if line.strip()]) > len(statuses_of(dict(commands())[("accept",)]))


def all_names() -> set[str]:
    return {path[-1] for path in PATHS if path}


@pytest.mark.parametrize("path", [path for path, command in commands() if isinstance(command, click.Group)],
                         ids=name_of)
def test_a_group_help_names_only_commands_it_has(path):
    """A command's name in a group's help (as a word: "check", "import") is one of that group's own commands, or the
    group itself: its help offers nothing it cannot do."""
    group = dict(commands())[path]
    own = {*group.list_commands(click.Context(group)), *path[-1:]}
    words = set(re.findall(r"[a-z][a-z-]*", (group.help or "").lower()))
    assert (words & all_names()) - own == set(), name_of(path)


def test_fabric_help_says_what_fabric_import_does():
    page = help_page(("fabric",), terminal_width=COLUMNS)
    assert "ibnetdiscover" in page and "--inventory" in page


def test_secrets_rotate_names_its_secrets_in_words_not_a_choice_cut_across_lines():
    from clusterforge.cli.secrets import KIND_NAMES, rotate_command

    shown = rotate_command.get_help(click.Context(rotate_command, info_name="rotate", terminal_width=80))
    assert shown.splitlines()[0] == "Usage: rotate [OPTIONS] INVENTORY SECRET"
    assert f"SECRET is {', '.join(KIND_NAMES[:-1])} or {KIND_NAMES[-1]}." in " ".join(shown.split())
