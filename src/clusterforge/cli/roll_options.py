"""The argument and options of `clusterforge roll`, declared once: `roll` reads them from its command line, and
`clusterforge plan --roll` invokes `roll` with the few it sets, click filling in the others' defaults declared here."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from .limits import limit_option

Command = TypeVar("Command", bound=Callable[..., object])

# In the order `clusterforge roll --help` lists them.
_PARAMETERS = (
    click.argument("inventory", type=click.Path(dir_okay=False)),
    click.option("--reboot", is_flag=True, help="reboot the nodes through Slurm (scontrol reboot ASAP "
                                                "nextstate=resume; the inventory's RebootProgram)"),
    click.option("--apply", "apply_", is_flag=True, help="run the deploy limited to each batch's nodes while they are "
                                                         "drained and idle (a package or configuration change); with "
                                                         "--reboot, before the reboot (a new GPU driver)"),
    click.option("--deploy", "deploy_file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
                 help="the deploy --apply runs  [default: deploy/cluster.py of this clusterforge]"),
    click.option("--batch", "budget", type=click.IntRange(min=1), default=1, show_default=True,
                 help="at most this many nodes out of service by the roll at once"),
    limit_option("roll"),
    click.option("--count-out", is_flag=True, help="count the compute nodes already down or drained for other "
                                                   "reasons against --batch, as a disruption budget does"),
    click.option("--wait", "job_wait", type=click.IntRange(min=0), default=3600, show_default=True,
                 metavar="SECONDS", help="how long a batch waits for its jobs to end; then the roll stops, no job "
                                         "killed"),
    click.option("--services", is_flag=True, help="with --apply, the service hosts too, in Slurm's order: the "
                                                  "database host after a dump of the accounting database, the "
                                                  "controller, then the compute batches, then the login hosts (a "
                                                  "Slurm update)"),
    click.option("--dump-wait", type=click.IntRange(min=1), default=3600, show_default=True, metavar="SECONDS",
                 help="how long the accounting database's dump may take (--services); then the roll stops"),
    click.option("--dry-run", is_flag=True, help="print the batches, the nodes left alone and the jobs each batch "
                                                 "would wait for now; change nothing"),
    click.option("--json", "as_json", is_flag=True, help="with --dry-run: the same as one JSON document, for scripts"),
)


def roll_options(command: Command) -> Command:
    """The roll's argument and options, on a command function."""
    for parameter in reversed(_PARAMETERS):  # click lists a command's parameters from the last decorator applied
        command = parameter(command)
    return command
