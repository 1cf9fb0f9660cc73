"""Installing Debian packages without touching apt when they are all there already, and without letting their
maintainer scripts start daemons.

apt.packages(update=True) refreshes the package lists on every run, which a re-run would report as a change; here
the lists are refreshed only when something is missing, so a converged host runs no apt command at all.

Debian's maintainer scripts start a daemon as soon as it is installed, before its configuration exists: trixie's
slurmd then hangs looking for a configless controller, munged starts with a random key. A policy-rc.d that says
"no" (exit 101) for the length of the install keeps them stopped; the roles start each daemon once its files are
in place. An admin's own policy-rc.d is left alone.

Every apt step that waits on the network is bounded: apt gives up on a connection that is silent for
``NET_TIMEOUT_S`` seconds (and retries a failed download), and each step as a whole is killed after its own limit,
failing the operation with "<command> timed out after N s" (pyinfra names the host). Packages are downloaded
before any is unpacked, so a download that times out leaves dpkg untouched; should an unpack or configure ever be
killed, the next run finishes it first (``dpkg --configure -a``).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from pyinfra import host
from pyinfra.facts.deb import DebPackages
from pyinfra.operations import server

POLICY = "/usr/sbin/policy-rc.d"
LISTS = "/var/lib/apt/lists"

NET_TIMEOUT_S = 30  # apt: a connection silent this long fails (and is retried, Acquire::Retries)
UPDATE_TIMEOUT_S = 300  # apt-get update, the whole of it
DOWNLOAD_TIMEOUT_S = 900  # apt-get install --download-only, the whole of it
INSTALL_TIMEOUT_S = 900  # unpacking and configuring (no network, no daemon starts), and dpkg --configure -a
APT_NETWORK = (f"-o Acquire::http::Timeout={NET_TIMEOUT_S} -o Acquire::https::Timeout={NET_TIMEOUT_S} "
               "-o Acquire::Retries=3")


def missing(packages: Sequence[str]) -> list[str]:
    installed = host.get_fact(DebPackages) or {}
    return [p for p in packages if p not in installed]


def bounded(command: str, timeout_s: int, name: str) -> str:
    """``command`` killed after ``timeout_s`` seconds; then the shell exits non-zero saying ``name`` timed out."""
    message = shlex.quote(f"{name} timed out after {timeout_s} s")
    return (f"timeout -k 10 {timeout_s} {command}; rc=$?; "
            f"if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo {message} >&2; fi; [ $rc -eq 0 ] || exit $rc")


def install_command(packages: Sequence[str]) -> str:
    names = " ".join(shlex.quote(p) for p in packages)
    update = bounded(f"apt-get update -qq {APT_NETWORK}", UPDATE_TIMEOUT_S, "apt-get update")
    download = bounded(f"apt-get install -y -q --no-install-recommends --download-only {APT_NETWORK} {names}",
                       DOWNLOAD_TIMEOUT_S, f"apt-get install --download-only {' '.join(packages)}")
    configure = bounded("dpkg --configure -a", INSTALL_TIMEOUT_S, "dpkg --configure -a")
    install = bounded("apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-confdef "
                      f"-o Dpkg::Options::=--force-confold {names}",
                      INSTALL_TIMEOUT_S, f"apt-get install {' '.join(packages)}")
    apt = ("export DEBIAN_FRONTEND=noninteractive; "
           # The first install of a run refreshes the package lists; later ones within ten minutes reuse them.
           f"if [ -z \"$(find {LISTS} -maxdepth 1 -name '*Packages*' -mmin -10 2>/dev/null | head -1)\" ]; "
           f"then {update}; fi; {download}; {configure}; {install}")
    return (f"if [ ! -e {POLICY} ]; then "
            f"trap 'rm -f {POLICY}' EXIT; printf '#!/bin/sh\\nexit 101\\n' > {POLICY}; chmod 755 {POLICY}; fi; {apt}")


def install(what: str, packages: Sequence[str]) -> None:
    """Install the packages that are missing, daemons left stopped; ``what`` names the operation."""
    needed = missing(packages)
    if needed:
        server.shell(name=f"{what}: install {' '.join(needed)}", commands=[install_command(needed)])
