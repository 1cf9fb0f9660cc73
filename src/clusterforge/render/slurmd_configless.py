"""The systemd drop-in that starts a compute node's slurmd configless (Cluster.configless): it fetches the Slurm
files from slurmctld and keeps them in its spool directory's conf-cache, with /run/slurm/conf linked to it for the
Slurm commands run on the node.

Every controller is named, so a slurmd started while the primary is down fetches from the backup. The packaged unit
passes $SLURMD_OPTIONS to slurmd and reads /etc/default/slurmd, whose setting, where a site makes one, wins over
this drop-in's; Debian's file sets none. Debian 12's unit starts slurmd only where /etc/slurm/slurm.conf exists: the
empty ConditionPathExists= clears that condition (Debian 13's unit has it commented out already).
"""

from __future__ import annotations

from ..model import ValidCluster
from ..model.settings import SLURMCTLD_PORT
from .text import fill, header

FLAT_NAME = "slurmd.service.d-clusterforge-configless.conf"  # its name in `clusterforge render`'s one directory


def conf_servers(valid: ValidCluster) -> str:
    """slurmd's --conf-server: every controller, by address where the inventory gives one, with slurmctld's port."""
    port = valid.slurm_conf.get("SlurmctldPort", str(SLURMCTLD_PORT))
    hosts = [h for h in (valid.controller, valid.backup_controller) if h is not None]
    return ",".join(f"{h.address or h.name}:{port}" for h in hosts)


def render(valid: ValidCluster) -> str | None:
    """The drop-in, the same on every compute node; None where the cluster is not configless."""
    if not valid.configless:
        return None
    return fill("slurmd-configless.conf.j2", header=header(valid, "slurmd fetches the Slurm files from slurmctld"),
                servers=conf_servers(valid))
