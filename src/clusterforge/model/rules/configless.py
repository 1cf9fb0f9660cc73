"""Rules for configless Slurm (Cluster.configless): what slurmctld cannot serve to the compute nodes' slurmd.

slurmctld serves only the files named in slurmd's fetch list, read from slurm.conf's own directory on the controller.
A file slurm.conf names by another path is read on the node itself, where a configless node has no Slurm files; an
Include is refused for every cluster (key_tables.SLURM_CONF_OWNED), so only the keys naming such a file are left.
"""

from __future__ import annotations

from ...key_tables import slurm_conf_keys
from ..settings import CONFIGLESS
from .check import Check

# slurm.conf keys that name a file by its path, which configless does not serve: the node would read its own.
UNSERVED = {
    "PlugStackConfig": "the SPANK plugin stack is served only as plugstack.conf beside slurm.conf",
}


def configless(check: Check) -> None:
    c = check.cluster
    if not c.configless:
        return
    table = slurm_conf_keys(check.version)
    for key, value in c.slurm_conf_extra.items():
        canonical = table.lookup(key)
        where = f"slurm_conf_extra[{key}]"
        if canonical == "SlurmctldParameters" and value is None:
            check.add(where, f"configless needs SlurmctldParameters={CONFIGLESS}, which clusterforge adds to the "
                             "site's own; remove this entry", c, "slurm_conf_extra", key)
        elif canonical in UNSERVED:
            check.add(where, f"configless cannot serve it: {UNSERVED[canonical]}, and a compute node keeps no Slurm "
                             "files of its own (configless=True)", c, "slurm_conf_extra", key)
