"""`clusterforge plan`: what the next deploy would change, per host, without changing anything.

It runs the deploy itself (pyinfra, with the inventory's SSH settings, as `--dry`) in planning mode
(engine/planning.py): every host's state is read and the deploy's steps decide as they would for real, but no
operation is created. Thin: running pyinfra (plan_progress.py, which says how far each host is) and printing;
the decisions are the deploy's own. The inventory's model is imported when the command runs.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import click

from ..errors import ClusterforgeError
from .exits import exit_statuses
from .limits import limit_option, limited
from .plan_progress import run_planning
from .plan_report import INCOMPLETE, NOTHING, PENDING, parse, render
from .pyinfra_run import DEPLOY, PYINFRA, limit_arguments, pyinfra_failure
from .roll import roll


class _PlanCommand(click.Command):
    """plan exits 1 for every error, a mistake in its arguments too, as terraform plan does: 2 means changes
    pending under --detailed-exitcode, so a pipeline written for terraform must never read a mistake as one."""

    def make_context(self, *args, **kwargs) -> click.Context:  # type: ignore[no-untyped-def]
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as error:
            error.exit_code = INCOMPLETE
            raise


@exit_statuses({NOTHING: "the plan was made, whether or not it has changes (as terraform plan); with "
                         "--detailed-exitcode: nothing to do",
                INCOMPLETE: "an error: a host could not be reached or planned (the rest are planned and shown), or a "
                            "mistake in the arguments or the inventory, named on stderr",
                PENDING: "only with --detailed-exitcode: the plan was made and has changes"})
@click.command(cls=_PlanCommand)
@click.argument("inventory", type=click.Path(dir_okay=False))
@limit_option("plan")
@click.option("--deploy", "deploy_file", type=click.Path(dir_okay=False), default=str(DEPLOY),
              show_default="deploy/cluster.py of this clusterforge",
              help="the deploy file the plan is for")
@click.option("--json", "as_json", is_flag=True, help="the plan as JSON, for scripts")
@click.option("--detailed-exitcode", "detailed", is_flag=True,
              help="exit as `terraform plan -detailed-exitcode`: 0 nothing to do, 1 an error, 2 changes pending")
@click.option("--roll", "roll_batch", type=click.IntRange(min=1), default=None, metavar="N",
              help="then how `clusterforge roll --apply --services --batch N` would take the cluster through the "
                   "changes: the service hosts in Slurm's order, the batches, the jobs each would wait for now")
@click.pass_context
def plan(ctx: click.Context, inventory: str, limit: str | None, deploy_file: str, as_json: bool, detailed: bool,
         roll_batch: int | None) -> None:
    """Show what the next deploy would change on each host.

    It changes nothing. It shows file diffs (a file with a secret only as changed), daemon starts, restarts and
    reconfigures with their reasons, packages, accounting changes, nodes to drain. A line per host on stderr says
    how far it is. The exit statuses are terraform plan's, with --detailed-exitcode too."""
    try:
        code = _plan(ctx, inventory, limit, deploy_file, as_json, detailed, roll_batch)
    except ClusterforgeError as error:
        raise _Failed(str(error)) from None
    sys.exit(code)


def _plan(ctx: click.Context, inventory: str, limit: str | None, deploy_file: str, as_json: bool, detailed: bool,
          roll_batch: int | None) -> int:
    from .. import hostlists
    from ..loader import every_problem

    valid = every_problem(inventory)  # an inventory's mistakes, and the limit's, named before any connection
    hosts = limited(limit, valid, inventory)
    if not Path(deploy_file).is_file():
        raise ClusterforgeError(f"{deploy_file}: no such deploy file (give it with --deploy)")
    with tempfile.TemporaryDirectory(prefix="clusterforge-plan-") as scratch:
        written = Path(scratch) / "plan.json"
        env = dict(os.environ, CLUSTERFORGE_PLAN=str(written), PYINFRA_PROGRESS="off")
        command = [sys.executable, "-c", PYINFRA, "-y", "--dry", *limit_arguments(hosts),
                   inventory, deploy_file]
        run = run_planning(command, env, say=lambda line: click.echo(f"plan: {line}", err=True))
        if not written.exists() and run.unreachable:  # pyinfra stops when no host is left: each said above
            raise ClusterforgeError("no host could be reached, nothing was planned: "
                                    + ", ".join(sorted(run.unreachable)))
        if not written.exists():  # the run stopped before the plan: an error, named in pyinfra's output
            raise ClusterforgeError(pyinfra_failure(run.output))
        text = written.read_text(encoding="utf-8")
    report = parse(text)
    if as_json:
        reasons = {name: run.unreachable[name] for name in report.unreachable if name in run.unreachable}
        click.echo(json.dumps({**json.loads(text), "unreachable_reasons": reasons}, indent=1, sort_keys=True))
        return report.exit_code(detailed)
    order = {m.name: i for i, m in enumerate(valid.machines)}
    report = replace(report, planned=tuple(sorted(report.planned, key=lambda n: (order.get(n, len(order)), n))))
    click.echo(render(report, hosts=lambda names: hostlists.compress(names, valid.version), reasons=run.unreachable))
    if roll_batch is not None:
        click.echo(f"\nWith `clusterforge roll --apply --services --batch {roll_batch}`, without stopping a job:")
        # The options the printed command gives, and --dry-run; click gives the others roll's declared defaults.
        ctx.invoke(roll, inventory=inventory, apply_=True, services=True, budget=roll_batch, deploy_file=deploy_file,
                   dry_run=True)
    return report.exit_code(detailed)


class _Failed(click.ClickException):
    exit_code = INCOMPLETE
