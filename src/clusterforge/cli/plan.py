"""`clusterforge plan`: what the next deploy would change, per host, without changing anything.

It runs the deploy itself (pyinfra, with the inventory's SSH settings, as `--dry`) in planning mode
(engine/planning.py): every host's state is read and the deploy's steps decide as they would for real, but no
operation is created. Thin: running pyinfra (plan_progress.py, which says how far each host is) and printing;
the decisions are the deploy's own. The inventory's model is imported when the command runs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import ClusterforgeError
from ..json_documents import document
from . import saved_plan as saved
from .exits import exit_statuses
from .limits import limit_option, limited
from .plan_progress import make_plan
from .plan_report import INCOMPLETE, NOTHING, PENDING, PlanReport, parse, render
from .pyinfra_run import DEPLOY, pyinfra_names, refuse_plain_http_vault
from .roll import roll

if TYPE_CHECKING:
    from ..model import ValidCluster


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
@click.option("--out", type=click.Path(dir_okay=False), metavar="FILE",
              help="also save the plan: `clusterforge apply FILE` then makes these changes only, and refuses the "
                   "hosts whose plan has changed since")
@click.option("--detailed-exitcode", "detailed", is_flag=True,
              help="exit as `terraform plan -detailed-exitcode`: 0 nothing to do, 1 an error, 2 changes pending")
@click.option("--roll", "roll_batch", type=click.IntRange(min=1), default=None, metavar="N",
              help="then how `clusterforge roll --apply --services --batch N` would take the cluster through the "
                   "changes: the service hosts in Slurm's order, the batches, the jobs each would wait for now")
@click.pass_context
def plan(ctx: click.Context, inventory: str, limit: str | None, deploy_file: str, as_json: bool, out: str | None,
         detailed: bool, roll_batch: int | None) -> None:
    """Show what the next deploy would change on each host.

    It changes nothing. It shows file diffs (a file with a secret only as changed), daemon starts, restarts and
    reconfigures with their reasons, packages, accounting changes, nodes to drain. A line per host on stderr says
    how far it is. The exit statuses are terraform plan's, with --detailed-exitcode too."""
    try:
        code = _plan(ctx, inventory, limit, deploy_file, as_json, detailed, roll_batch, out)
    except ClusterforgeError as error:
        raise _Failed(str(error)) from None
    sys.exit(code)


def _plan(ctx: click.Context, inventory: str, limit: str | None, deploy_file: str, as_json: bool, detailed: bool,
          roll_batch: int | None, out: str | None = None) -> int:
    from ..loader import load

    loaded = load(inventory)  # an inventory's mistakes, and the limit's, named before any connection
    valid = loaded.valid
    hosts = pyinfra_names(loaded.hosts, limited(limit, valid, inventory))
    if not Path(deploy_file).is_file():
        raise ClusterforgeError(f"{deploy_file}: no such deploy file (give it with --deploy)")
    refuse_plain_http_vault(valid)
    from ..reach import known_hosts
    known_hosts.ensure()  # ~/.ssh and its known_hosts, where pyinfra records each new host's key
    text, run = make_plan(inventory, hosts, deploy_file, loaded.hosts)
    report = parse(text)
    if out is not None:
        if report.unreachable:
            raise ClusterforgeError(f"{out}: not written: the plan leaves out {', '.join(report.unreachable)}, which "
                                    "could not be reached")
        saved.write(out, inventory, hosts, deploy_file, text)
    if as_json:
        reasons = {name: run.reasons[name] for name in report.unreachable if name in run.reasons}
        body = {**json.loads(text), "unreachable_reasons": dict(sorted(reasons.items()))}
        click.echo(document("plan", dict(sorted(body.items()))))
        return report.exit_code(detailed)
    click.echo(shown(report, valid, run.reasons))
    if out is not None:
        click.echo(f"\nSaved to {out}: `clusterforge apply {out}` makes these changes, and only these.")
    if roll_batch is not None:
        click.echo(f"\nWith `clusterforge roll --apply --services --batch {roll_batch}`, without stopping a job:")
        # The options the printed command gives, and --dry-run; click gives the others roll's declared defaults.
        ctx.invoke(roll, inventory=inventory, apply_=True, services=True, budget=roll_batch, deploy_file=deploy_file,
                   dry_run=True, limit=None)  # None as --limit's callback gives it, which invoke does not call
    return report.exit_code(detailed)


def shown(report: PlanReport, valid: ValidCluster, reasons: Mapping[str, str]) -> str:
    """The plan as `clusterforge plan` prints it: the hosts in the inventory's order, named as Slurm hostlists."""
    from .. import hostlists

    order = {m.name: i for i, m in enumerate(valid.machines)}
    report = replace(report, planned=tuple(sorted(report.planned, key=lambda n: (order.get(n, len(order)), n))))
    return render(report, hosts=lambda names: hostlists.compress(names, valid.version), reasons=reasons)


class _Failed(click.ClickException):
    exit_code = INCOMPLETE
