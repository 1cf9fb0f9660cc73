"""`clusterforge apply`: the deploy, as `pyinfra INVENTORY deploy/cluster.py` runs it from a clone, with the deploy
file the package ships. Thin: the inventory is checked first (its mistakes named, exit 2, before any connection),
then pyinfra takes over this process, so its progress, its confirmation prompt, Ctrl-C and its exit status are the
deploy's own. The inventory's model is imported when the command runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ..errors import ClusterforgeError
from .exits import exit_statuses
from .limits import limit_option, limited
from .pyinfra_run import DEPLOY, PYINFRA, limit_arguments


@exit_statuses({0: "the deploy ran to its end: every host is as the inventory says; with --dry, or with the changes "
                   "not confirmed at pyinfra's prompt, nothing was changed",
                1: "the deploy stopped or failed on a host, named in pyinfra's output",
                130: "interrupted: the next deploy makes the restarts and reconfigures this one owed"})
@click.command()
@click.argument("inventory", type=click.Path(dir_okay=False))
@limit_option("deploy to")
@click.option("--dry", is_flag=True, help="show the operations the deploy would run, change nothing")
@click.option("-y", "--yes", is_flag=True, help="run without asking to confirm the changes pyinfra detected")
@click.option("-v", "verbosity", count=True, help="pyinfra's verbosity: -v what it decided, -vv its commands, "
                                                  "-vvv their output")
@click.option("--drain-wait", type=click.IntRange(min=0), default=None, metavar="SECONDS",
              help="how long the drains before the changes (removed nodes, driver moves) wait for the jobs there to "
                   "end; by default the deploy stops, naming them (pyinfra's --data drain_wait=SECONDS)")
@click.option("--deploy", "deploy_file", type=click.Path(dir_okay=False), default=str(DEPLOY),
              show_default="deploy/cluster.py of this clusterforge", help="the deploy file to run")
def apply(inventory: str, limit: str | None, dry: bool, yes: bool, verbosity: int, drain_wait: int | None,
          deploy_file: str) -> None:
    """Deploy INVENTORY to its hosts, with pyinfra's progress.

    Every host (or those of --limit) is converged to the inventory. Without -y, pyinfra shows what it detected and
    asks before changing anything. `clusterforge plan` says the same first, per file and daemon, without asking."""
    from ..loader import every_problem

    # The inventory's mistakes, and the limit's, named before any connection.
    hosts = limited(limit, every_problem(inventory), inventory)
    if not Path(deploy_file).is_file():
        raise ClusterforgeError(f"{deploy_file}: no such deploy file (give it with --deploy)")
    arguments = [*(["-y"] if yes else []), *(["--dry"] if dry else []), *(["-" + "v" * verbosity] if verbosity else []),
                 *limit_arguments(hosts),
                 *(["--data", f"drain_wait={drain_wait}"] if drain_wait is not None else []), inventory, deploy_file]
    sys.stdout.flush()
    sys.stderr.flush()
    # pyinfra in this process's place: the terminal's Ctrl-C reaches it alone, and its exit status is apply's.
    os.execv(sys.executable, [sys.executable, "-c", PYINFRA, *arguments])
