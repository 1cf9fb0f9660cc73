"""The command reference: every clusterforge command with its help, usage, an example, its options as a table (each
as its --help shows it, from the click definitions) and its exit statuses (declared on the command, cli/exits.py)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import click

from ..cli import cli
from ..cli.exits import statuses_of
from ..errors import ClusterforgeError

# One example a command, shown under its summary: the common use, on the example inventory.
EXAMPLES = {
    "clusterforge accept": "clusterforge accept site.py --reserve --dry-run",
    "clusterforge admit": "clusterforge admit site.py gpu-node-[003-004]",
    "clusterforge apply": "clusterforge apply site.py --limit 'gpu-node-[001-004]'",
    "clusterforge check": "clusterforge check site.py --smoke",
    "clusterforge fabric import": "clusterforge fabric import fabric.txt --inventory site.py",
    "clusterforge hosts": "clusterforge hosts --json site.py",
    "clusterforge init": "clusterforge init mysite",
    "clusterforge plan": "clusterforge plan site.py",
    "clusterforge render": "clusterforge render site.py --out rendered/",
    "clusterforge repair": "clusterforge repair site.py --close-breaker",
    "clusterforge roll": "clusterforge roll --reboot --batch 4 --dry-run site.py",
    "clusterforge secrets check": "clusterforge secrets check site.py",
    "clusterforge secrets init": "clusterforge secrets init site.py",
    "clusterforge secrets rotate": "clusterforge secrets rotate site.py munge-key",
    "clusterforge show": "clusterforge show site.py",
    "clusterforge validate": "clusterforge validate site.py",
}

INTRO = """# Commands

Generated from the command definitions at every build of these pages; `clusterforge COMMAND --help` prints the same
options and exit statuses. Every command exits 2 for a user mistake (a wrong argument, an invalid inventory, a Vault
that cannot be used) with the mistake named on stderr, and changes nothing then; `plan` exits 1 instead, as
terraform plan does, since its 2 means changes pending under `--detailed-exitcode`.

The deploy is `clusterforge apply INVENTORY`; from a clone, pyinfra's own command runs the same deploy:
`pyinfra INVENTORY deploy/cluster.py` (see [the deploy](../operations/deploy.md)).

## JSON for scripts

With `--json`, a command prints one JSON object on stdout. Its `schema` field is the version of that command's
shape: 1 for every command today. It goes up when a field is removed or renamed, or changes its type or meaning. A
new field leaves it as it is. A script checks `schema` and stops on a version it was not written for:

```bash
clusterforge hosts --json site.py |
  jq -e '.schema == 1' >/dev/null || { echo "new shape" >&2; exit 1; }
```

## All commands

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


def _anchor(name: str) -> str:
    return name.replace(" ", "-")


def _help_text(command: click.Command) -> str:
    """The command's --help text as Markdown: click's no-rewrap marker (a line of just \\b) dropped."""
    text = inspect.cleandoc(command.help or "")
    return "\n".join(line for line in text.splitlines() if line.strip() != "\b")


def options_table(name: str, command: click.Command) -> str:
    """Every option as --help shows it (its default and range included), one row each, --help last."""
    context = click.Context(command, info_name=name)
    records = [param.get_help_record(context) for param in command.get_params(context)
               if isinstance(param, click.Option)]
    rows = [f"| `{option}` | {_cell(text)} |" for option, text in (r for r in records if r is not None)]
    return "\n".join(["| Option | What it does |", "|---|---|", *rows])


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def command_section(name: str, command: click.Command) -> str:
    statuses = statuses_of(command)
    if not statuses:
        raise ClusterforgeError(f"{name} declares no exit statuses (cli/exits.py): the reference cannot list them")
    example = EXAMPLES.get(name)
    if example is None:
        raise ClusterforgeError(f"{name} has no example (EXAMPLES in reference/commands.py): the reference needs one")
    usage = command.get_usage(click.Context(command, info_name=name))
    lines = [f"## {name}", "", _help_text(command), "", "```", usage, "```", "", "**Example**", "", "```bash",
             example, "```", "", "**Options**", "", options_table(name, command), "", "**Exit status**", "",
             "| Status | Meaning |", "|---|---|"]
    lines += [f"| {code} | {meaning} |" for code, meaning in statuses.items()]
    return "\n".join(lines) + "\n"


def commands_page() -> str:
    commands = list(leaf_commands())
    table = "".join(f"| [`{name}`](#{_anchor(name)}) | {command.get_short_help_str(limit=100)} |\n"
                    for name, command in commands)
    return "\n".join([INTRO + table, *(command_section(name, command) for name, command in commands)])
