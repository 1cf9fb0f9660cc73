"""The clusterforge command. Thin: each command group's module parses arguments and calls the core; this one joins
them into one command and turns the one domain error type into a message and exit 2.

inventory.py holds validate, render, show and hosts; secrets.py, fabric.py, check.py and plan.py one group or
command each; plan_report.py is what `clusterforge plan` prints from the file a planning deploy writes.
"""

from __future__ import annotations

import click

from ..errors import ClusterforgeError
from .check import check
from .fabric import fabric
from .inventory import hosts, render, show, validate
from .plan import plan
from .secrets import secrets

USER_MISTAKE = 2


class _UserMistake(click.ClickException):
    exit_code = USER_MISTAKE


class _Commands(click.Group):
    """Catches the one domain error type once, for every command, and prints it without a traceback."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except ClusterforgeError as error:
            raise _UserMistake(str(error)) from None


@click.group(cls=_Commands)
@click.version_option(package_name="clusterforge")
def cli() -> None:
    """Describe a Slurm cluster once, in a typed Python inventory; render and deploy it."""


for _command in (validate, render, show, hosts, secrets, fabric, check, plan):
    cli.add_command(_command)


def main() -> None:
    cli(prog_name="clusterforge")
