"""Installing Debian packages without touching apt when they are all there already, and without letting their
maintainer scripts start daemons.

apt.packages(update=True) refreshes the package lists on every run, which a re-run would report as a change; here
the lists are refreshed only when something is missing, so a converged host runs no apt command at all.

Debian's maintainer scripts start a daemon as soon as it is installed, before its configuration exists: trixie's
slurmd then hangs looking for a configless controller, munged starts with a random key. A policy-rc.d that says
"no" (exit 101) for the length of the install keeps them stopped; the roles start each daemon once its files are
in place. An admin's own policy-rc.d is left alone.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from pyinfra import host
from pyinfra.facts.deb import DebPackages
from pyinfra.operations import server

POLICY = "/usr/sbin/policy-rc.d"


def missing(packages: Sequence[str]) -> list[str]:
    installed = host.get_fact(DebPackages) or {}
    return [p for p in packages if p not in installed]


def install_command(packages: Sequence[str]) -> str:
    names = " ".join(shlex.quote(p) for p in packages)
    apt = ("export DEBIAN_FRONTEND=noninteractive; "
           # The first install of a run refreshes the package lists; later ones within ten minutes reuse them.
           "if [ -z \"$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -10 2>/dev/null | head -1)\" ]; "
           "then apt-get update -qq; fi; "
           "apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confdef "
           f"-o Dpkg::Options::=--force-confold {names}")
    return (f"if [ -e {POLICY} ]; then {apt}; else "
            f"trap 'rm -f {POLICY}' EXIT; printf '#!/bin/sh\\nexit 101\\n' > {POLICY}; chmod 755 {POLICY}; {apt}; fi")


def install(what: str, packages: Sequence[str]) -> None:
    """Install the packages that are missing, daemons left stopped; ``what`` names the operation."""
    needed = missing(packages)
    if needed:
        server.shell(name=f"{what}: install {' '.join(needed)}", commands=[install_command(needed)])
