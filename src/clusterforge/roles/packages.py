"""Installing Debian packages without touching apt when they are all there already.

apt.packages(update=True) refreshes the package lists on every run, which a re-run would report as a change;
here the lists are refreshed only when something is missing, so a converged host runs no apt command at all.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyinfra import host
from pyinfra.facts.deb import DebPackages
from pyinfra.operations import apt


def missing(packages: Sequence[str]) -> list[str]:
    installed = host.get_fact(DebPackages) or {}
    return [p for p in packages if p not in installed]


def install(what: str, packages: Sequence[str]) -> None:
    """Install the packages that are missing; ``what`` names the operation."""
    needed = missing(packages)
    if needed:
        # cache_time: the first install of a run refreshes the lists, the others within the run reuse them.
        apt.packages(name=f"{what}: install {' '.join(needed)}", packages=needed, update=True, cache_time=600,
                     no_recommends=True)
