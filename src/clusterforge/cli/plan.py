"""`clusterforge plan`: what the next deploy would change, per host, without changing anything.

It runs the deploy itself (pyinfra, with the inventory's SSH settings, as `--dry`) in planning mode
(engine/planning.py): every host's state is read and the deploy's steps decide as they would for real, but no
operation is created. Thin: running pyinfra and printing; the decisions are the deploy's own. The inventory's
model is imported when the command runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import click

from ..errors import ClusterforgeError
from .exits import exit_statuses
from .plan_report import INCOMPLETE, NOTHING, PENDING, parse, render
from .pyinfra_run import DEPLOY, PYINFRA, pyinfra_failure
from .roll import roll


@exit_statuses({NOTHING: "nothing to do", PENDING: "changes pending",
                INCOMPLETE: "a host could not be reached or planned (the rest are planned), or a mistake in the "
                            "arguments or the inventory"})
@click.command()
@click.argument("inventory", type=click.Path(dir_okay=False))
@click.option("--limit", help="plan only these hosts or groups (pyinfra's --limit)")
@click.option("--deploy", "deploy_file", type=click.Path(dir_okay=False), default=str(DEPLOY),
              show_default="deploy/cluster.py of this clusterforge",
              help="the deploy file the plan is for")
@click.option("--json", "as_json", is_flag=True, help="the plan as JSON, for scripts")
@click.option("--roll", "roll_batch", type=click.IntRange(min=1), default=None, metavar="N",
              help="then how `clusterforge roll --apply --services --batch N` would take the cluster through the "
                   "changes: the service hosts in Slurm's order, the batches, the jobs each would wait for now")
@click.pass_context
def plan(ctx: click.Context, inventory: str, limit: str | None, deploy_file: str, as_json: bool,
         roll_batch: int | None) -> None:
    """What the next deploy would change, per host: file diffs (a file with a secret only as changed), daemon starts,
    restarts and reconfigures with their reasons, packages, accounting changes, nodes to drain. Changes nothing.
    The statuses are those of `terraform plan -detailed-exitcode`."""
    from .. import hostlists
    from ..loader import load_cluster
    from ..model import resolve

    valid = resolve(load_cluster(inventory))  # an inventory's mistakes, named, before any connection
    if not Path(deploy_file).is_file():
        raise ClusterforgeError(f"{deploy_file}: no such deploy file (give it with --deploy)")
    with tempfile.TemporaryDirectory(prefix="clusterforge-plan-") as scratch:
        written = Path(scratch) / "plan.json"
        env = dict(os.environ, CLUSTERFORGE_PLAN=str(written), PYINFRA_PROGRESS="off")
        command = [sys.executable, "-c", PYINFRA, "-y", "--dry", *(["--limit", limit] if limit else []),
                   inventory, deploy_file]
        run = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if not written.exists():  # the run stopped before the plan: an error, named in pyinfra's output
            raise _Failed(pyinfra_failure(run.stdout + run.stderr))
        text = written.read_text(encoding="utf-8")
    report = parse(text)
    if as_json:
        click.echo(text)
        sys.exit(report.exit_code())
    order = {m.name: i for i, m in enumerate(valid.machines)}
    report = replace(report, planned=tuple(sorted(report.planned, key=lambda n: (order.get(n, len(order)), n))))
    click.echo(render(report, hosts=lambda names: hostlists.compress(names, valid.version)))
    if roll_batch is not None:
        click.echo(f"\nWith `clusterforge roll --apply --services --batch {roll_batch}`, without stopping a job:")
        # The options the printed command gives, and --dry-run; click gives the others roll's declared defaults.
        ctx.invoke(roll, inventory=inventory, apply_=True, services=True, budget=roll_batch, deploy_file=deploy_file,
                   dry_run=True)
    sys.exit(report.exit_code())


class _Failed(click.ClickException):
    exit_code = INCOMPLETE
