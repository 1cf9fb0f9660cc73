"""`clusterforge check`: is the running cluster what the inventory says? Thin: options and printing; the checks
are in check/. Imports testinfra (and the inventory's pyinfra groups) only when it runs."""

from __future__ import annotations

import sys

import click

from ..errors import ClusterforgeError
from .exits import exit_statuses
from .limits import limit_option, limited


@exit_statuses({0: "all is as the inventory says", 1: "findings, each named with its host",
                2: "a host, Slurm or the fabric could not be checked (the rest is checked and reported), or a "
                   "mistake in the arguments or the inventory"})
@click.command()
@click.argument("inventory", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="one JSON document, for monitoring")
@click.option("--smoke", is_flag=True, help="also run jobs: srun on every node of the default partition and a "
                                             "GPU job that must see exactly its GPUs")
@limit_option("check", "; the controller still reports Slurm's view of them")
@click.option("--memory-tolerance", type=click.FloatRange(0, 100),
              help="percent of a node's memory RealMemory may leave unused before it is a finding [default: the "
                   "inventory's acceptance=Acceptance(memory_tolerance=...), 10]")
@click.option("--fabric", is_flag=True, help="also run ibnetdiscover on a compute node and compare the fabric "
                                              "with the inventory, as `fabric import --inventory` does")
@click.option("--fabric-from", metavar="HOST", help="run ibnetdiscover on this host of the inventory (implies "
                                                     "--fabric) [default: the first compute node that has it]")
def check(inventory: str, as_json: bool, smoke: bool, limit: str | None, memory_tolerance: float | None,
          fabric: bool, fabric_from: str | None) -> None:
    """Check the running cluster against the inventory, read-only.

    It connects with the inventory's SSH settings and checks each node's hardware (slurmd -C), GPUs and InfiniBand,
    Slurm's view (nodes, GRES, partitions, QOS, topology), credentials across hosts and slurmdbd; where nodes are
    repaired automatically, each one's last repairs, and any quarantine or open breaker as a finding. Each host's
    deploy stamp says which clusterforge deployed it from which inventory: a host not deployed since the inventory
    changed is a finding. With --fabric, the live fabric too: a node on another leaf, a leaf missing, crossed
    cables."""
    from ..check import report
    from ..check.fabric import FabricSource
    from ..check.findings import exit_status
    from ..check.run import check_cluster
    from ..reach.hosts import load_with_entries

    loaded, targets = load_with_entries(inventory)
    valid = loaded.valid
    chosen = limited(limit, valid, inventory)
    names = frozenset(chosen) if chosen is not None else None
    if fabric_from is not None and fabric_from not in {t.name for t in targets}:
        raise ClusterforgeError(f"--fabric-from {fabric_from}: not a host of {inventory}")
    source = FabricSource(loaded.cluster, fabric_from) if fabric or fabric_from is not None else None
    outcomes = check_cluster(valid, targets, smoke=smoke, limit=names, fabric=source,
                             memory_tolerance=memory_tolerance / 100 if memory_tolerance is not None else None,
                             say=lambda line: click.echo(f"check: {line}", err=True))
    click.echo(report.as_json(valid.name, outcomes) if as_json else report.table(outcomes))
    sys.exit(exit_status(outcomes))
