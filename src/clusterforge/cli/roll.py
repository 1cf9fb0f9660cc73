"""`clusterforge roll`: the compute nodes through maintenance in batches (a reboot through Slurm, the deploy, or
both), the service hosts around them in Slurm's order with --services. Thin: printing and running the deploy; the
options are in roll_options.py, the roll is in roll/. Imports testinfra (and the inventory's pyinfra groups) only
when it runs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import ClusterforgeError
from ..json_documents import document
from ..words import counted
from .exits import exit_statuses
from .limits import limited
from .phases import announce, stamped
from .pyinfra_run import (
    DEPLOY,
    host_arguments,
    pyinfra_command,
    pyinfra_failure,
    refuse_plain_http_vault,
    run_pyinfra,
)
from .roll_options import roll_options

if TYPE_CHECKING:
    from ..roll.batches import RollPlan
    from ..roll.run import Roll
    from ..roll.services import ServiceOrder


@exit_statuses({0: "every node rolled and back in service (or, with --dry-run, the plan printed)",
                1: "the roll stopped: jobs still ran when --wait ran out, the deploy failed, or a node did not come "
                   "back or came back sick; named, and left drained",
                130: "interrupted: the nodes the roll drained stay drained, and the next roll continues with them"})
@click.command()
@roll_options
def roll(inventory: str, reboot: bool, apply_: bool, deploy_file: str | None, budget: int, limit: str | None,
         count_out: bool, job_wait: int, services: bool, dump_wait: int, dry_run: bool, as_json: bool) -> None:
    """Take the compute nodes through maintenance in batches.

    Drain each batch (clusterforge's reason), wait for the jobs, apply the deploy to them (--apply) and/or reboot
    them through Slurm (--reboot), wait until they are back, healthy and resumed; then the next batch. Each line
    of a roll starts with the time it was said. Nodes an admin, Slurm or the health check took out of service
    are left alone, named. With --services, the deploy goes to the service hosts first (the accounting database
    dumped before slurmdbd's host) and to the login hosts last."""
    from ..reach.controller import Controller, ControllerRefused
    from ..reach.hosts import load
    from ..reach.ssh import Connections, Unreachable
    from ..roll.batches import plan_roll
    from ..roll.run import Roll, Stopped
    from ..roll.services import service_order

    if as_json and not dry_run:
        raise ClusterforgeError("--json goes with --dry-run: a roll itself prints its progress as it goes")
    if not (reboot or apply_):
        raise ClusterforgeError("say what the roll does: --reboot, --apply, or both")
    if services and not apply_:
        raise ClusterforgeError("--services deploys to the service hosts: it goes with --apply (Slurm does not "
                                "reboot its controller or the database host)")
    deploy = Path(deploy_file) if deploy_file else DEPLOY
    if apply_ and not deploy.is_file():
        raise ClusterforgeError(f"{deploy}: no such deploy file (give it with --deploy)")
    valid, targets = load(inventory)
    if apply_:
        refuse_plain_http_vault(valid)  # before any drain: the deploy would refuse it only with nodes out
        from ..reach import known_hosts
        known_hosts.ensure()  # ~/.ssh and its known_hosts, where the deploy's pyinfra records each new host's key
    compute = [n.name for n in valid.nodes]
    nodes = compute
    nodes = limited(limit, valid, inventory, among=compute, kind="compute nodes") or compute
    if reboot and "RebootProgram" not in valid.slurm_conf:
        raise ClusterforgeError(f"{inventory}: this cluster has no RebootProgram (Health(enabled=False)), so Slurm "
                                "cannot reboot its nodes: enable Health, deploy, then roll")
    order = service_order(valid) if services else None
    dumped_on = {s.host for s in order.before if s.dump is not None} if order else set()
    pyinfra = {t.name: t.pyinfra_name for t in targets}
    with Connections([t for t in targets if t.machine.node is not None
                      or t.name == valid.controller.name or t.name in dumped_on]) as connections:

        def deploy_to(hosts: list[str]) -> str | None:
            named = [pyinfra[h] for h in hosts]
            done = run_pyinfra(pyinfra_command("-y", *host_arguments(named, len(named)), inventory, str(deploy)),
                               dict(os.environ, PYINFRA_PROGRESS="off"))
            if done.interrupted:
                raise KeyboardInterrupt
            if done.returncode == 0:
                return None
            return f"exit {done.returncode}: " + "\n  ".join(pyinfra_failure(done))

        the_roll = Roll(valid, Controller.over(connections, valid.controller.name), connections.runner, stamped,
                        job_wait=job_wait, back_wait=int(valid.slurm_conf.get("ResumeTimeout", 1200)) + 60,
                        reboot=reboot, apply=deploy_to if apply_ else None, services=order, dump_wait=dump_wait)
        # Reaching the controller may take OpenSSH's whole connect timeout: said first, on stderr (a dry run's
        # --json stays alone on stdout), with its time in a roll, whose every line has one.
        announce("roll", valid.controller.name, targets, timed=not dry_run)
        # A controller that refuses, or cannot be reached, before the roll drains anything: exit 2, named (a
        # ClusterforgeError).
        plan = plan_roll(nodes, the_roll.states(), budget, count_out, compute)
        if as_json:
            click.echo(document("roll", _dry_run(the_roll, plan, order, count_out)))
            return
        say = click.echo if dry_run else stamped  # a dry run is a plan, printed at once: no times
        for node in plan.out:
            said = "skipped" if node in plan.skipped else "outside --limit"
            say(f"already out of service: {node.name} ({node.state}"
                f"{', ' + repr(node.reason) if node.reason else ''}): {said}"
                f"{', counted against --batch' if count_out else ''}")
        if plan.continued:
            say(f"continuing an earlier roll: {the_roll.names(plan.continued)} (drained for it)")
        total = sum(len(b) for b in plan.batches)
        count = len(plan.batches)
        say(f"{counted(total, 'node')} in {counted(count, 'batch', 'batches')} of at most {plan.width}")
        if dry_run:
            for step in order.before if order else ():
                click.echo(f"first {step.head}: " + (f"dump {step.dump}, then " if step.dump else "") + "deploy")
            for index, batch in enumerate(plan.batches, 1):
                jobs = the_roll.jobs(batch)
                click.echo(f"batch {index}/{len(plan.batches)} {the_roll.names(batch)}: "
                           + (f"would wait for {'; '.join(jobs)}" if jobs else "no job runs there now"))
            for step in order.after if order else ():
                click.echo(f"last {step.head}: deploy")
            return
        try:
            rolled = the_roll.run(plan)
        except Unreachable as error:  # the controller's connection too (ControllerUnreachable)
            stamped(f"Stopped: the connection to {error.host} was lost ({error.cause}). The nodes this roll drained "
                    "stay drained (cf:roll); run `clusterforge roll` again to continue with them", err=True)
            sys.exit(1)
        except (Stopped, ControllerRefused) as error:
            stamped(f"Stopped: {error}", err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            stamped("Interrupted: the nodes this roll drained stay drained (cf:roll); run `clusterforge roll` "
                    "again to continue with them", err=True)
            sys.exit(130)
        stamped(f"rolled {counted(rolled, 'node')}")



def _dry_run(the_roll: Roll, plan: RollPlan, order: ServiceOrder | None, count_out: bool) -> dict[str, object]:
    """What --dry-run prints, as one JSON-ready document; its shape is in docs/operations/roll.md."""
    return {
        "nodes": sum(len(b) for b in plan.batches), "width": plan.width,
        "left_alone": [{"node": n.name, "state": n.state, "reason": n.reason or None,
                        "why": "skipped" if n in plan.skipped else "outside --limit", "counted": count_out}
                       for n in plan.out],
        "continued": list(plan.continued),
        "first": [{"host": s.host, "roles": list(s.roles), "dump": s.dump} for s in (order.before if order else ())],
        "batches": [{"index": i, "nodes": list(batch), "hostlist": the_roll.names(batch), "jobs": the_roll.jobs(batch)}
                    for i, batch in enumerate(plan.batches, 1)],
        "last": [{"host": s.host, "roles": list(s.roles)} for s in (order.after if order else ())],
    }
