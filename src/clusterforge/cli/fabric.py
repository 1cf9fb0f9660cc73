"""`clusterforge fabric import`: the inventory's Fabric from `ibnetdiscover` output, and a check of the inventory
against the cabling. Thin: reading files and printing; the work is in fabric_import/, imported when it runs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..errors import ClusterforgeError
from .exits import exit_statuses

DIFFERENT = 1  # the fabric differs from the inventory, HCAs could not be named, or cabling is wrong: a check


@click.group()
def fabric() -> None:
    """Import the InfiniBand fabric from what `ibnetdiscover` prints.

    `fabric import` prints the inventory's Fabric(...), or writes it as a module with --out; given --inventory, it
    also compares the cabling with the inventory and exits 1 where they differ."""


@exit_statuses({0: "the fabric was read and every HCA named; with --inventory, the inventory matches it",
                DIFFERENT: "the fabric differs from --inventory, HCAs could not be named, or the cabling is wrong "
                           "(an HCA on another rail's leaf or another unit's, a scalable unit short of a leaf): "
                           "each cable end is listed on stderr",
                2: "the dump cannot be read, or a mistake in the arguments or the inventory"})
@fabric.command("import")
@click.argument("dump", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--inventory", type=click.Path(dir_okay=False),
              help="compare with this inventory and take its nodes (exit 1 where they differ)")
@click.option("--guids", type=click.Path(dir_okay=False),
              help="host and GUID a line (`pdsh -w HOSTS ibstat -p`), for HCAs without a host in their description")
@click.option("--out", type=click.Path(dir_okay=False),
              help="write a Python module defining `fabric` for the inventory to import, instead of printing it")
@click.option("--verbose", "-v", is_flag=True,
              help="list each unnamed HCA, node cabled unlike its peers and GUID conflict")
def import_(dump: str, inventory: str | None, guids: str | None, out: str | None, verbose: bool) -> None:
    """Print the inventory's Fabric(...) from an ibnetdiscover dump.

    DUMP is the text `ibnetdiscover` prints; - reads it from stdin. stdout holds only the Fabric(...), so `> file`
    keeps it. On stderr a summary comes first (the fabric, its rails, what was left out, one line per kind of
    problem), then the hosts that are no compute node, the cabling to fix (each HCA on another rail's leaf or on
    another unit's, each scalable unit short of a leaf, with the cable ends) and the differences from --inventory,
    and with --verbose every HCA it cannot name and node cabled unlike its peers."""
    from ..fabric_import import fabric_expression, fabric_module, import_fabric, read_guid_file
    from ..fabric_import.report import details, head
    from ..fabric_import.write import nccl_proposal
    from ..loader import load

    text = _read(dump)
    cluster = load(inventory).cluster if inventory else None
    found = import_fabric(text, "stdin" if dump == "-" else dump, read_guid_file(guids) if guids else None, cluster)
    for line in head(found):
        click.echo(line, err=True)
    if found.fabric is not None:
        if out is None:
            click.echo(fabric_expression(found.fabric))
            if (proposal := nccl_proposal(found.fabric)) is not None:
                click.echo(proposal)
        elif found.unnamed_on_compute:
            # Those HCAs' nodes would be missing or short of rails: never write a partial fabric for the inventory.
            click.echo(f"{out}: not written: {found.unnamed_on_compute} HCA(s) of the compute fabric are unnamed",
                       err=True)
        else:
            command = " ".join(["clusterforge fabric import", dump, *(["--guids", guids] if guids else [])])
            Path(out).write_text(fabric_module(found.fabric, command), encoding="utf-8")
            click.echo(f"wrote {out}", err=True)
    for line in details(found, verbose):
        click.echo(line, err=True)
    if found.differences:
        click.echo(f"{inventory} differs from the fabric in {len(found.differences)} place"
                   f"{'s' if len(found.differences) != 1 else ''}:", err=True)
        for line in found.differences:
            click.echo(f"  {line}", err=True)
    elif cluster is not None and found.fabric is not None and not found.apart:
        click.echo(f"# {inventory}: the fabric is as the inventory says", err=True)
    if not found.clean:
        sys.exit(DIFFERENT)


def _read(dump: str) -> str:
    if dump == "-":
        return sys.stdin.read()
    try:
        return Path(dump).read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise ClusterforgeError(f"{dump}: cannot read the dump: {error.strerror}") from None
