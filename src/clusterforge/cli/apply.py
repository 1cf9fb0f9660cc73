"""`clusterforge apply`: the deploy, as `pyinfra INVENTORY deploy/cluster.py` runs it from a clone, with the deploy
file the package ships. Thin: the inventory is checked first (its mistakes named, exit 2, before any connection),
then pyinfra runs the deploy as a child of this process, which says how each host fares from the events it sends
(apply_progress.py) and keeps pyinfra's own text in a log. Without -y, the plan is shown and confirmed first (as
`clusterforge plan` prints it), and planned again before pyinfra starts; --dry shows that plan and stops. A saved plan
(saved_plan.py) is planned again before pyinfra starts. The inventory's model is imported when the command runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import ClusterforgeError
from . import apply_progress
from .exits import exit_statuses
from .limits import limit_option, limited
from .pyinfra_run import DEPLOY, host_arguments, pyinfra_command, pyinfra_names, refuse_plain_http_vault

if TYPE_CHECKING:
    from ..loader import Loaded
    from .pyinfra_run import PyinfraRun
    from .saved_plan import SavedPlan


@exit_statuses({0: "the deploy ran to its end: every host is as the inventory says; with --dry, with nothing to do, or "
                   "with the changes not confirmed, nothing was changed",
                1: "a host failed or could not be reached, or the deploy stopped, each named with why (with --dry, a "
                   "host could not be planned)",
                2: "a mistake in the arguments or the inventory, or a service that could not be used, named on stderr; "
                   "or a saved plan that no longer holds (the hosts named; nothing was changed)",
                130: "interrupted: the next deploy makes the restarts and reconfigures this one owed"})
@click.command()
@click.argument("inventory", metavar="INVENTORY|PLAN", type=click.Path(dir_okay=False))
@limit_option("deploy to")
@click.option("--dry", is_flag=True, help="show the plan, as `clusterforge plan` does, and change nothing")
@click.option("-y", "--yes", is_flag=True, help="run without showing the plan and asking to confirm it")
@click.option("-v", "verbosity", count=True, help="also show pyinfra's own output, at its verbosity: -v what it "
                                                  "decided, -vv its commands, -vvv their output")
@click.option("--drain-wait", type=click.IntRange(min=0), default=None, metavar="SECONDS",
              help="how long the drains before the changes (removed nodes, driver moves) wait for the jobs there to "
                   "end; by default the deploy stops, naming them (pyinfra's --data drain_wait=SECONDS)")
@click.option("--deploy", "deploy_file", type=click.Path(dir_okay=False), default=None,
              show_default="deploy/cluster.py of this clusterforge", help="the deploy file to run")
def apply(inventory: str, limit: str | None, dry: bool, yes: bool, verbosity: int, drain_wait: int | None,
          deploy_file: str | None) -> None:
    """Deploy INVENTORY to its hosts.

    Every host (or those of --limit) is converged to the inventory. Without -y, it first shows the plan, as
    `clusterforge plan` does, and asks; the hosts are planned again once you confirm, and any whose plan changed
    meanwhile is named and nothing is changed. It says when each phase starts, and each host's end: its changes,
    or where it failed and why. pyinfra's own output goes to a log, named when something failed.

    Given a PLAN saved by `clusterforge plan --out PLAN`, it makes those changes only, on the hosts planned, without
    asking: the hosts are planned again first, and if any host's plan has changed since, it names them and changes
    nothing."""
    from ..loader import load
    from ..reach import known_hosts
    from . import saved_plan

    if (saved := saved_plan.read(inventory)) is not None:
        if limit or deploy_file:
            raise ClusterforgeError(f"{inventory}: a saved plan keeps the hosts and the deploy file it was made for: "
                                    "give no --limit or --deploy")
        saved_plan.refuse_stale(saved)
        inventory, hosts, deploy_file, yes = saved.inventory, saved.hosts, saved.deploy, True
        loaded = load(inventory)
    else:
        # The inventory's mistakes, and the limit's, named before any connection.
        loaded = load(inventory)
        hosts = pyinfra_names(loaded.hosts, limited(limit, loaded.valid, inventory))
        deploy_file = deploy_file or str(DEPLOY)
    if not Path(deploy_file).is_file():
        raise ClusterforgeError(f"{deploy_file}: no such deploy file (give it with --deploy)")
    refuse_plain_http_vault(loaded.valid)
    known_hosts.ensure()  # ~/.ssh and its known_hosts, where pyinfra records each new host's key
    if dry:
        sys.exit(_dry(loaded, hosts, deploy_file, saved))
    if saved is not None:
        _holds(saved.body, loaded, hosts, deploy_file, saved.path)
    elif not yes and not _confirmed(loaded, hosts, deploy_file):
        # The plan the admin reads is clusterforge's, not pyinfra's table of operations; what they confirm is made.
        return
    arguments = ["-y", *(["-" + "v" * verbosity] if verbosity else []), *host_arguments(hosts, len(loaded.hosts)),
                 *(["--data", f"drain_wait={drain_wait}"] if drain_wait is not None else []), inventory, deploy_file]
    sys.exit(apply_progress.deploy(pyinfra_command(*arguments), deploy_file,
                                   hosts=len(hosts) if hosts is not None else len(loaded.hosts), shown=verbosity > 0))


def _dry(loaded: Loaded, hosts: list[str] | None, deploy_file: str, saved: SavedPlan | None) -> int:
    """--dry: the plan, as `clusterforge plan` shows it: what the deploy would change. A saved plan is planned again,
    and refused where it no longer holds. 1 when a host could not be planned, as `plan` exits."""
    from .plan import shown
    from .plan_progress import make_plan
    from .plan_report import parse

    text, run = (_holds(saved.body, loaded, hosts, deploy_file, saved.path) if saved is not None
                 else make_plan(loaded.path, hosts, deploy_file, loaded.hosts))
    report = parse(text)
    click.echo(shown(report, loaded.valid, run.reasons))
    return 1 if report.unreachable else 0


def _confirmed(loaded: Loaded, hosts: list[str] | None, deploy_file: str) -> bool:
    """The plan shown as `clusterforge plan` shows it, and the admin's yes; then planned again, as a saved plan is,
    so that what changed while they read it is named instead of made."""
    from .plan import shown
    from .plan_progress import make_plan
    from .plan_report import parse

    text, run = make_plan(loaded.path, hosts, deploy_file, loaded.hosts)
    report = parse(text)
    click.echo(shown(report, loaded.valid, run.reasons))
    if not report.changes:
        return False
    if not click.confirm("\nMake these changes?", default=False):
        click.echo("Nothing was changed.")
        return False
    _holds(json.loads(text), loaded, hosts, deploy_file, "the plan above")
    return True


def _holds(body: dict[str, Any], loaded: Loaded, hosts: list[str] | None, deploy_file: str,
           what: str) -> tuple[str, PyinfraRun]:
    """The plan made again now, and its run; refuses, naming them, the hosts whose plan is no longer ``body``'s."""
    from .plan_progress import make_plan
    from .saved_plan import drifted

    text, run = make_plan(loaded.path, hosts, deploy_file, loaded.hosts)
    if moved := drifted(body, json.loads(text)):
        raise ClusterforgeError(f"{what}: the plan no longer holds for {', '.join(moved)}: the state there or the "
                                "inventory changed since it was made. Nothing was changed; plan again")
    return text, run
