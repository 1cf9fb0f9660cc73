"""The Slurm files every Slurm host gets, and the restart plan their change asks for on this host.

The plan is computed from the installed and the rendered text before any operation runs (clusterforge.restarts
decides); the daemons' roles act on it, so a host whose files do not change restarts nothing.
"""

from __future__ import annotations

from io import StringIO

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.facts.files import FileContents
from pyinfra.operations import files

from ..model import ValidCluster
from ..render import slurm_files as rendered
from ..restarts import Plan, plan
from ..versions import v

SLURM_DIR = "/etc/slurm"
# Distributions with Slurm 23.11 or newer (Debian 13, Ubuntu 24.04) ship libpmix.so.2 as libpmix2t64.
PMIX_T64 = v("23.11")


def pmix_library(valid: ValidCluster) -> list[str]:
    """With MpiDefault=pmix, srun and slurmd dlopen libpmix, which Debian 12's Slurm packages do not depend on; every
    Slurm host needs it. Debian 12's plugin (22.05) opens the unversioned pmix2/lib/libpmix.so, which only
    libpmix-dev ships; Debian 13's (24.11) opens libpmix.so.2 from libpmix2t64."""
    if not valid.slurm_conf.get("MpiDefault", "").startswith("pmix"):
        return []
    return ["libpmix2t64" if valid.version >= PMIX_T64 else "libpmix-dev"]


def installed(name: str) -> str | None:
    lines = host.get_fact(FileContents, path=f"{SLURM_DIR}/{name}")
    return None if lines is None else "".join(f"{line}\n" for line in lines)


def host_plan() -> Plan:
    valid: ValidCluster = host.data.clusterforge
    return plan(valid.version, {name: (installed(name), text) for name, text in rendered(valid).items()})


@deploy("Slurm files")
def slurm_files() -> None:
    """slurm.conf, gres.conf, cgroup.conf and topology.conf in /etc/slurm, readable by every user (no secrets)."""
    valid: ValidCluster = host.data.clusterforge
    files.directory(name=f"{SLURM_DIR} exists", path=SLURM_DIR, mode="0755")
    for name, text in rendered(valid).items():
        if text is None:
            files.file(name=f"{SLURM_DIR}/{name} is absent", path=f"{SLURM_DIR}/{name}", present=False)
        else:
            files.put(name=f"{SLURM_DIR}/{name}", src=StringIO(text), dest=f"{SLURM_DIR}/{name}", mode="0644")
