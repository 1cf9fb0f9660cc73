"""docs/index.md's table of commands names every command there is: each top-level command, and each command of a
group (`secrets check`, `fabric import`), taken from the click tree, so a command added without a row fails here."""

from __future__ import annotations

import re
from pathlib import Path

from clusterforge.reference.commands import leaf_commands

INDEX = Path(__file__).resolve().parents[2] / "docs" / "index.md"


def table_commands(text: str) -> list[str]:
    """The command each row of the table under "## The commands" names: its first cell's words up to the first
    argument or option (`clusterforge secrets init INVENTORY` is "clusterforge secrets init")."""
    section = text.split("\n## The commands\n", 1)[1].split("\n## ", 1)[0]
    named = []
    for cell in re.findall(r"^\| `(clusterforge[^`]*)` \|", section, re.MULTILINE):
        words = []
        for word in cell.split():
            if not re.fullmatch(r"[a-z][a-z-]*", word):
                break
            words.append(word)
        named.append(" ".join(words))
    return named


def test_a_row_names_its_command_without_its_arguments():
    table = "## The commands\n\n| command | what |\n|---|---|\n| `clusterforge secrets init INVENTORY` | x |\n" \
            "| `clusterforge admit INVENTORY HOSTS` | y |\n| `clusterforge roll --dry-run INVENTORY` | z |\n"
    assert table_commands("\n" + table) == ["clusterforge secrets init", "clusterforge admit", "clusterforge roll"]


def test_the_table_names_every_command_once():
    named = table_commands(INDEX.read_text())
    commands = [name for name, _ in leaf_commands()]
    assert {"clusterforge accept", "clusterforge admit", "clusterforge secrets check",
            "clusterforge secrets rotate"} <= set(commands)
    assert sorted(set(commands) - set(named)) == [], "commands missing from docs/index.md's table"
    assert sorted(set(named) - set(commands)) == [], "rows of docs/index.md's table that name no command"
    assert len(named) == len(set(named)), "a command with two rows"
