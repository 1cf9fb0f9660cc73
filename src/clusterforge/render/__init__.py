"""Pure renderers: a resolved cluster in, the text of each file out. No I/O, no pyinfra.

Rendering is cached per resolved cluster (it hashes by identity): every host of a deploy run renders nothing
twice, and slurm.conf for 10,000 nodes is rendered once rather than once per host.
"""

from __future__ import annotations

from functools import lru_cache

from ..model import ValidCluster
from ..model.resolve import PYXIS_CONF, TOPOLOGY_YAML_FILE
from . import (
    access,
    admission,
    repair,
    cgroup_conf,
    containers,
    dashboards,
    gres_conf,
    mariadb_cnf,
    monitoring,
    slurm_conf,
    slurmd_configless,
    slurmdbd_conf,
    slurmrestd,
    sssd,
    stack,
    topology_conf,
    topology_yaml,
)

MARIADB_CNF = "mariadb-slurmdbd.cnf"
_RENDERERS = {
    "slurm.conf": slurm_conf.render,
    "gres.conf": gres_conf.render,
    "cgroup.conf": cgroup_conf.render,
    "topology.conf": topology_conf.render,
    PYXIS_CONF: containers.pyxis_conf,
    TOPOLOGY_YAML_FILE: topology_yaml.render,
}


@lru_cache(maxsize=4)
def slurm_files(valid: ValidCluster) -> dict[str, str | None]:
    """Every file of /etc/slurm the release has, by name, in order; None for one this cluster lacks (it is
    removed from the hosts, never left stale or written empty)."""
    return {f.name: _RENDERERS[f.name](valid) if f.present else None for f in valid.slurm_files}


def render_all(valid: ValidCluster) -> dict[str, str]:
    """Every file clusterforge generates, by file name, in a fixed order."""
    # One flat directory: plugstack.conf.d/pyxis.conf is written as pyxis.conf.
    files = {name.rsplit("/", 1)[-1]: text for name, text in slurm_files(valid).items() if text is not None}
    files["slurmdbd.conf"] = slurmdbd_conf.render(valid)
    files[MARIADB_CNF] = mariadb_cnf.render(valid)
    files.update(stack.files(valid))
    files.update((monitoring.flat_name(path), text) for path, text in monitoring.files(valid).items())
    # For a site's own Grafana to import: no host of the cluster gets it (Grafana is not in Debian).
    if (dashboard := dashboards.render(valid)) is not None:
        files[dashboards.FILE] = dashboard
    if (dropin := slurmrestd.dropin(valid)) is not None:
        files[slurmrestd.FLAT_NAME] = dropin
    if (configless := slurmd_configless.render(valid)) is not None:
        files[slurmd_configless.FLAT_NAME] = configless
    if (plan := admission.render(valid)) is not None:
        files[admission.FILE] = plan
    if (plan := repair.render(valid)) is not None:
        files[repair.FILE] = plan
    files.update((access.flat_name(path), text) for path, text in access.files(valid).items())
    files.update(sssd.files(valid))
    return files
