"""`clusterforge validate`, `render`, `show` and `hosts`: the commands that read an inventory and print what it
describes, without touching a machine. Thin: they load and resolve the inventory and call the core, which each
imports when it runs (validate needs the model, not the renderers)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..json_documents import document
from .exits import exit_statuses

if TYPE_CHECKING:
    from ..model import ValidCluster


def _valid(inventory: str, slurm_version: str | None = None) -> ValidCluster:
    from ..loader import every_problem
    from ..versions import SlurmVersion

    return every_problem(inventory, SlurmVersion.parse(slurm_version) if slurm_version else None)


INVENTORY = click.argument("inventory", type=click.Path(dir_okay=False))


@exit_statuses({0: "the inventory is valid", 2: "it is not: every problem is listed with its file and line"})
@click.command()
@INVENTORY
@click.option("--json", "as_json", is_flag=True, help="one JSON object on stdout, the problems as a list, for scripts")
@click.pass_context
def validate(ctx: click.Context, inventory: str, as_json: bool) -> None:
    """Check an inventory; list every problem or confirm it is valid."""
    from ..errors import ClusterforgeError, InventoryError, Problem
    from ..loader import every_problem

    try:
        valid = every_problem(inventory)
    except ClusterforgeError as error:
        if not as_json:
            raise
        problems = error.problems if isinstance(error, InventoryError) else (Problem(inventory, str(error)),)
        click.echo(document("validate", {"inventory": inventory, "valid": False,
                                         "problems": [p.to_json() for p in problems]}))
        ctx.exit(2)
    gpus = sum(n.profile.gpu_count for n in valid.nodes)
    if as_json:
        click.echo(document("validate", {"inventory": inventory, "valid": True, "cluster": valid.name,
                                         "slurm_version": str(valid.version), "nodes": len(valid.nodes),
                                         "gpus": gpus, "partitions": len(valid.partitions), "problems": []}))
        return
    from ..words import counted

    click.echo(f"{inventory}: cluster {valid.name} is valid for Slurm {valid.version} "
               f"({counted(len(valid.nodes), 'node')}, {counted(gpus, 'GPU')}, "
               f"{counted(len(valid.partitions), 'partition')})")


@exit_statuses({0: "every file was written"})
@click.command()
@INVENTORY
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), help="directory to write the files to")
@click.option("--slurm-version", help="render for this Slurm release instead of the inventory's (major.minor)")
def render(inventory: str, out: str, slurm_version: str | None) -> None:
    """Write every generated file into a directory.

    slurm.conf, gres.conf, topology.conf and the others the inventory calls for."""
    from ..render import render_all

    files = render_all(_valid(inventory, slurm_version))
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
        click.echo(str(directory / name))


@exit_statuses({0: "the summary was printed"})
@click.command()
@INVENTORY
@click.option("--json", "as_json", is_flag=True, help="one JSON document, for scripts")
def show(inventory: str, as_json: bool) -> None:
    """Summarise a cluster: its hosts, nodes, partitions and accounts.

    Nodes per profile, GPUs, partitions, leaves and their nodes, QOS, accounts as a tree with their users, and
    limits."""
    from .. import summary

    valid = _valid(inventory)
    click.echo(document("show", summary.as_json(valid)) if as_json else summary.summary(valid))


@exit_statuses({0: "the hosts were listed"})
@click.command()
@INVENTORY
@click.option("--json", "as_json", is_flag=True, help="one JSON document, for scripts (the Vagrantfile reads it)")
def hosts(inventory: str, as_json: bool) -> None:
    """List every host once: its name, address and groups.

    With --json, a compute node's GPU device files too."""
    valid = _valid(inventory)
    found = valid.machines
    if as_json:
        click.echo(document("hosts", {"cluster": valid.name, "hosts": [m.to_json() for m in found]}))
        return
    width = max(len(m.name) for m in found) if found else 0
    for m in found:
        click.echo(f"{m.name:<{width}}  {m.address or '-':<15}  {','.join(m.groups)}")
