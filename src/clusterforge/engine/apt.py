"""apt's command for installing packages on a host, bounded and kept from starting daemons.

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

from .waits import bounded

POLICY = "/usr/sbin/policy-rc.d"
LISTS = "/var/lib/apt/lists"

NET_TIMEOUT_S = 30  # apt: a connection silent this long fails (and is retried, Acquire::Retries)
UPDATE_TIMEOUT_S = 300  # apt-get update, the whole of it
DOWNLOAD_TIMEOUT_S = 900  # apt-get install --download-only, the whole of it
INSTALL_TIMEOUT_S = 900  # unpacking and configuring (no network, no daemon starts), and dpkg --configure -a
APT_NETWORK = (f"-o Acquire::http::Timeout={NET_TIMEOUT_S} -o Acquire::https::Timeout={NET_TIMEOUT_S} "
               "-o Acquire::Retries=3")


def install_command(packages: Sequence[str], refresh: bool = False, pinned: bool = False) -> str:
    """Install ``packages`` (``name`` or ``name=version``). ``refresh``: fetch the package lists first whatever
    their age (a repository new in this run). ``pinned``: exact versions that may be older than what is installed,
    of packages clusterforge holds."""
    names = " ".join(shlex.quote(p) for p in packages)
    said = " ".join(packages)
    moves = " --allow-downgrades --allow-change-held-packages" if pinned else ""
    update = bounded(f"apt-get update -qq {APT_NETWORK}", UPDATE_TIMEOUT_S, "apt-get update")
    download = bounded(f"apt-get install -y -q --no-install-recommends{moves} --download-only {APT_NETWORK} {names}",
                       DOWNLOAD_TIMEOUT_S, f"apt-get install --download-only {said}")
    configure = bounded("dpkg --configure -a", INSTALL_TIMEOUT_S, "dpkg --configure -a")
    install = bounded(f"apt-get install -y -q --no-install-recommends{moves} -o Dpkg::Options::=--force-confdef "
                      f"-o Dpkg::Options::=--force-confold {names}",
                      INSTALL_TIMEOUT_S, f"apt-get install {said}")
    # The first install of a run refreshes the package lists; later ones within ten minutes reuse them.
    fresh = (f"if [ -z \"$(find {LISTS} -maxdepth 1 -name '*Packages*' -mmin -10 2>/dev/null | head -1)\" ]; "
             f"then {update}; fi" if not refresh else update)
    apt = f"export DEBIAN_FRONTEND=noninteractive; {fresh}; {download}; {configure}; {install}"
    return (f"if [ ! -e {POLICY} ]; then "
            f"trap 'rm -f {POLICY}' EXIT; printf '#!/bin/sh\\nexit 101\\n' > {POLICY}; chmod 755 {POLICY}; fi; {apt}")
