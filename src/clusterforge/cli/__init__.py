"""The clusterforge command. Thin: each command group's module parses arguments and calls the core; this one joins
them into one command and turns the one domain error type into a message and exit 2.

inventory.py holds validate, render, show and hosts; secrets.py, fabric.py, check.py, plan.py, roll.py, accept.py
admit.py and repair.py one group or command each; plan_report.py is what `clusterforge plan` prints from the file a
planning deploy writes, roll_options.py the options of `roll` (which `plan --roll` invokes), pyinfra_run.py how
plan, apply and roll run the deploy, apply_progress.py what apply says as it runs.

A command's module is imported only when that command runs or `--help` lists it, and it imports only click: what
the command works with (the model, the renderers, the Vault client, testinfra, pyinfra) it imports when it runs. So
`clusterforge --help` loads no pydantic model, and `validate` loads neither the renderers nor the deploy's tools.
"""

from __future__ import annotations

from importlib import import_module

import click

from ..errors import ClusterforgeError

USER_MISTAKE = 2

# Each command by name: the module of this package that defines it, as an attribute of the same name.
COMMANDS = {
    "accept": "accept",
    "admit": "admit",
    "apply": "apply",
    "check": "check",
    "fabric": "fabric",
    "hosts": "inventory",
    "init": "init",
    "plan": "plan",
    "render": "inventory",
    "repair": "repair",
    "roll": "roll",
    "secrets": "secrets",
    "show": "inventory",
    "validate": "inventory",
}


class _UserMistake(click.ClickException):
    exit_code = USER_MISTAKE


class _Commands(click.Group):
    """Loads each command from its module when it is asked for (click's lazily loaded subcommands), and catches the
    one domain error type once, for every command, and prints it without a traceback."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            return getattr(import_module(f"{__name__}.{COMMANDS[cmd_name]}"), cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except ClusterforgeError as error:
            raise _UserMistake(str(error)) from None


@click.group(cls=_Commands)
@click.version_option(package_name="clusterforge")
def cli() -> None:
    """Describe a Slurm cluster once, in a typed Python inventory; render and deploy it."""


def main() -> None:
    cli(prog_name="clusterforge")
