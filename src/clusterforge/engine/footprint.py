"""What a step manages on a host, declared beside the step (``@step(..., footprint=...)``, engine/run.py).

The host-state read before the run (engine/state.py) covers the union of the deploy's footprints, and nothing
else: a step decides only from what its footprint names, so a new role declares its paths, units and packages in
its own module and nothing central changes. `clusterforge plan` shows the diffs of the texts the footprints name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..model import ValidCluster


@dataclass(frozen=True, slots=True)
class Footprint:
    """``paths``: every file and directory the step may write or remove, on any host (one may have to go where it
    no longer belongs). ``texts``: files whose text its decisions read. ``shown``: text files whose diff a plan
    shows (read only for a plan). ``units``: the units it runs on this host. ``packages``: the Debian packages this
    host gets from it, in the order it wants them. ``known``: every package whose installed version it reads, on
    any host. ``accounts``: the users and groups (names or ids) it reads. ``slurm``: the exact version Slurm's
    packages are pinned at, where this host runs Slurm (the host then asks slurmctld its release if it runs
    another). ``owned``: paths in a person's control (a home's ``.ssh`` and what it holds), read without following a
    link, never through one: a person can make any of them a link to a file of root's, and root must see the link,
    not the file. ``listed``: directories whose entries the step writes, one for each of many (a node's record, say),
    each read whatever its name, as a path without its digest: a host's read names the directory, not what is in it,
    so that its command does not grow with the cluster (sshd hands the command to the shell as one argument, which
    Linux takes up to 128 KiB)."""

    paths: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()
    shown: tuple[str, ...] = ()
    units: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    known: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    slurm: str = ""
    owned: tuple[str, ...] = ()
    listed: tuple[str, ...] = ()


# A step's footprint on a host in these groups (a host's groups, not its state: the footprint says what to read).
FootprintOf = Callable[[ValidCluster, tuple[str, ...]], Footprint]


def _once(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))


def union(footprints: Iterable[Footprint]) -> Footprint:
    """The footprints together, each list in the order given, each entry once."""
    found = list(footprints)
    return Footprint(
        paths=_once(p for f in found for p in f.paths), texts=_once(t for f in found for t in f.texts),
        shown=_once(t for f in found for t in f.shown), units=_once(u for f in found for u in f.units),
        packages=_once(p for f in found for p in f.packages), known=_once(p for f in found for p in f.known),
        accounts=_once(a for f in found for a in f.accounts), slurm=next((f.slurm for f in found if f.slurm), ""),
        owned=_once(p for f in found for p in f.owned), listed=_once(d for f in found for d in f.listed))
