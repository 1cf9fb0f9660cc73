"""`clusterforge accept`: the cluster's acceptance on demand, through the controller. Thin: options, printing, the
connections; the run is accept/run.py. Imports testinfra (and the inventory's pyinfra groups) only when it
runs."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from ..errors import ClusterforgeError
from .exits import exit_statuses
from .limits import limit_option, limited
from .phases import announce, stamped

if TYPE_CHECKING:
    from ..accept.run import Accept
    from ..model import AdmissionPlan, ValidCluster
    from ..reach.controller import Controller
    from ..reach.ssh import Run
    from ..slurm.commands import Answer


@exit_statuses({0: "every node tested passed every test (or, with --dry-run, the jobs printed)",
                1: "findings: a node below a floor or cut at its bound (named, confirmed by a second run, alone for "
                   "a single-node test, and drained), a flaky node (passed and failed: named with both numbers, not "
                   "drained), or a failing multi-node run no node could be named for",
                2: "nodes that could not be tested (drained, down, busy or held by another: named), and nothing "
                   "found on the rest; or a mistake in the arguments or the inventory, or a controller that refused "
                   "a command",
                130: "interrupted: the jobs submitted are cancelled and the cf-accept reservation deleted"})
@click.command()
@click.argument("inventory", type=click.Path(dir_okay=False))
@click.option("--reserve", is_flag=True,
              help="hold the nodes in a reservation of accept's own (cf-accept, MAINT) while it runs, deleted at the "
                   "end: nodes running users' jobs are tested once those end (--wait); without it, only idle nodes "
                   "are tested")
@click.option("--wait", "wait_s", type=click.IntRange(min=0), default=600, show_default=True, metavar="SECONDS",
              help="with --reserve: how long to wait for users' jobs on the reserved nodes to end; nodes still "
                   "busy then are not tested")
@limit_option("test")
@click.option("--dry-run", is_flag=True, help="print every job the first rounds would submit (its sbatch line and "
                                              "script) and change nothing")
@click.option("--offline", is_flag=True,
              help="with --dry-run: reach no host, the controller neither; plan every node of the inventory as if "
                   "idle, and say that which nodes are drained, down, busy or reserved is not known")
@click.option("--json", "as_json", is_flag=True, help="one JSON document at the end (the progress goes to stderr)")
def accept(inventory: str, reserve: bool, wait_s: int, limit: str | None, dry_run: bool, offline: bool,
           as_json: bool) -> None:
    """Test the nodes against their floors; bisect to the slow node.

    Through the controller, as Slurm jobs: the single-node tests of each node's profile (Profile(admission=...))
    on every idle node, each that fails run once more alone before a drain (passed then: flaky, with both numbers,
    not drained), then all_reduce across each leaf's nodes and across the spine. A multi-node run below its
    floor, or cut at its bound, is bisected to the node (halves, then pairs beside known-good nodes); the node found
    is run again beside a node that passed two runs before it is drained (one that passes then is reported flaky,
    with both numbers, and not drained), and its rails are run one HCA at a time. Each node found is drained
    (cf:accept:<test> ...) unless someone else holds it; every result is kept in the node's record under
    $XDG_STATE_HOME/clusterforge/<cluster>/records, and added to the gate's records on the controller
    (/var/lib/clusterforge/gate/records), which the Slurm exporter reads.

    --dry-run asks the controller which nodes are idle, and names the others it would leave alone. --dry-run
    --offline reaches no host: it plans every node of the inventory as if idle, and says so first. A dry run never
    falls back to --offline by itself, since that plan may count a drained node."""
    from ..accept import report
    from ..reach.controller import Controller
    from ..reach.hosts import load
    from ..reach.ssh import Connections

    if offline and not dry_run:
        raise ClusterforgeError("--offline goes with --dry-run: a run submits its jobs through the controller")
    valid, targets = load(inventory)
    plans = _plans(valid, inventory, limit)
    say = (lambda line: stamped(line, err=True)) if as_json else stamped
    if offline:
        # Nothing is asked of the controller: a Controller that would refuse any command, so none slips through.
        run = _run(valid, plans, Controller(valid.controller.name, _not_reached), _no_node, say, dry_run, reserve,
                   wait_s)
        _print_dry_run(valid.name, run, as_json, offline=True)
        return
    # Reaching the controller may take OpenSSH's whole connect timeout: said first, on stderr; a run's lines have
    # their times.
    announce("accept", valid.controller.name, targets, timed=not dry_run)
    with Connections([t for t in targets if t.name in plans or t.name == valid.controller.name]) as connections:
        run = _run(valid, plans, Controller.over(connections, valid.controller.name), connections.runner, say,
                   dry_run, reserve, wait_s)
        if dry_run:
            _print_dry_run(valid.name, run, as_json)
            return
        try:
            done = run.run()
        except KeyboardInterrupt:
            stamped("Interrupted: the jobs submitted were cancelled and the cf-accept reservation deleted; nothing "
                    "was drained", err=True)
            sys.exit(130)
        click.echo(report.as_json(valid.name, done) if as_json else "\n" + report.table(done))
        sys.exit(done.exit_status)


def _plans(valid: ValidCluster, inventory: str, limit: str | None) -> dict[str, AdmissionPlan]:
    """Each node's admission (tests and HCAs) of those --limit names, in the inventory's order."""
    plans = dict(valid.admission)
    if not plans:
        raise ClusterforgeError(f"{inventory}: no profile has admission: give the GPU profiles "
                                "admission=Admission(programs=Programs(...)) to say what accept runs")
    if (named := limited(limit, valid, inventory, among=plans, kind="nodes with admission")) is not None:
        plans = {n: p for n, p in plans.items() if n in named}
    return {n.name: plans[n.name] for n in valid.nodes if n.name in plans}


def _run(valid: ValidCluster, plans: dict[str, AdmissionPlan], controller: Controller, node: Callable[[str], Run],
         say: Callable[[str], None], dry_run: bool, reserve: bool, wait_s: int) -> Accept:
    """The run over ``controller``, the fabric's leaves and the partitions as the inventory has them."""
    from ..accept.run import Accept
    from ..admission import records, tests
    from ..model.rules.times import slurm_time_seconds

    order = list(plans)
    leaves = ([(s.name, [n for n in s.nodes if n in plans]) for s in valid.topology.leaves]
              if valid.topology is not None else [("all nodes", order)])
    # Each job names a partition its nodes are all in (one not the default would otherwise stop the whole run): the
    # inventory's, each with its MaxTime (none: no limit) and whether it is the default.
    partitions = [(p.spec.name, p.nodes, slurm_time_seconds(p.spec.max_time) or math.inf if p.spec.max_time
                   else math.inf, p.spec.default) for p in valid.partitions]
    return Accept({n: plans[n].tests for n in order}, leaves, {n: plans[n].hcas for n in order}, controller, node,
                  say, tests.job_script, tests.judge, None if dry_run else records.directory(valid.name),
                  reserve=reserve, wait_s=wait_s, controller_records=None if dry_run else records.ON_CONTROLLER,
                  partitions=partitions)


def _print_dry_run(cluster: str, run: Accept, as_json: bool, offline: bool = False) -> None:
    """The dry run's plan on stdout. A controller not reached is named as the controller (exit 2), and the way
    to plan without it said on stderr, before that error."""
    from ..accept import report
    from ..reach.controller import ControllerUnreachable

    try:
        planned = run.dry_run(offline=offline)
    except ControllerUnreachable:
        click.echo("accept: the controller could not be reached; --dry-run --offline plans from the inventory alone",
                   err=True)
        raise
    click.echo(report.dry_run_json(cluster, planned, run.report.left_alone, offline) if as_json
               else report.dry_run(planned, run.report.left_alone, offline))


def _not_reached(command: str) -> Answer:
    """--offline's controller: asked nothing, and never connected to."""
    raise ClusterforgeError(f"--offline: nothing may be asked of the controller, yet `{command[:80]}` was")


def _no_node(name: str) -> Run:
    """--offline's nodes: reached by no one; a dry run runs nothing on them."""
    return _not_reached
