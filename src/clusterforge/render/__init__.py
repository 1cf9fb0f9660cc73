"""Pure renderers: a validated cluster in, the text of each Slurm file out. No I/O, no pyinfra."""

from __future__ import annotations

from ..model import ValidCluster
from . import cgroup_conf, gres_conf, mariadb_cnf, slurm_conf, slurmdbd_conf, topology_conf

MARIADB_CNF = "mariadb-slurmdbd.cnf"


def render_all(valid: ValidCluster) -> dict[str, str]:
    """Every file clusterforge generates, by file name, in a fixed order."""
    files = {
        "slurm.conf": slurm_conf.render(valid),
        "gres.conf": gres_conf.render(valid),
        "cgroup.conf": cgroup_conf.render(valid),
    }
    topology = topology_conf.render(valid)
    if topology is not None:
        files["topology.conf"] = topology
    files["slurmdbd.conf"] = slurmdbd_conf.render(valid)
    files[MARIADB_CNF] = mariadb_cnf.render(valid)
    return files
