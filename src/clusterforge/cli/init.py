"""`clusterforge init DIR`: the starter inventory, written for a site to edit (the example of docs/own-machines.md,
shipped inside the package so that an installed wheel has it too)."""

from __future__ import annotations

from pathlib import Path

import click

from .exits import exit_statuses

STARTER = Path(__file__).resolve().parents[1] / "starter" / "site.py.example"


@exit_statuses({0: "site.py was written", 2: "DIR/site.py exists already: nothing was written"})
@click.command()
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
def init(directory: Path) -> None:
    """Write a starter inventory to fill in: DIR/site.py."""
    from ..errors import ClusterforgeError, InventoryError
    from ..loader import load

    site = directory / "site.py"
    if site.exists():
        raise ClusterforgeError(f"{site} exists already: nothing was written (move it away, or give another DIR)")
    directory.mkdir(parents=True, exist_ok=True)
    site.write_text(STARTER.read_text())
    click.echo(f"wrote {site}: 32 DGX H100 nodes under 4 leaves, for you to edit (docs/own-machines.md).")
    try:
        load(site)
    except InventoryError as error:  # the starter's only problems are its placeholders (tests/cli/test_init.py)
        click.echo(f"Edit its hosts, addresses, profiles and partitions, and fill its {len(error.problems)} "
                   "placeholders:")
        for problem in error.problems:
            click.echo(f"  {problem}")
    click.echo(f"`clusterforge validate {site}` lists what is left to fill.")
