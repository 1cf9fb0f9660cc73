"""Rules for Rest: slurmrestd's host, port and address, and its user's ids.

auth/jwt and AuthAltTypes/AuthAltParameters exist in every release clusterforge renders for (auth/jwt came with
Slurm 20.02, AuthAltParameters with 20.11; the key tables of 21.08 and later all have both), so no release is
refused; tests/model/test_rest.py holds the key tables to that.
"""

from __future__ import annotations

import ipaddress

from ..settings import (
    ALERTMANAGER_PORT,
    NODE_EXPORTER_PORT,
    PROMETHEUS_PORT,
    SLURM_EXPORTER_PORT,
    SLURMCTLD_PORT,
    SLURMD_PORT,
    SLURMDBD_PORT,
)
from .check import Check

# The inventory's keys that move Slurm's ports, with their defaults.
_SLURM_PORTS = {"SlurmctldPort": SLURMCTLD_PORT, "SlurmdPort": SLURMD_PORT, "AccountingStoragePort": SLURMDBD_PORT}
_MONITORING_PORTS = {"node exporter": NODE_EXPORTER_PORT, "the Slurm exporter": SLURM_EXPORTER_PORT,
                     "Prometheus": PROMETHEUS_PORT, "Alertmanager": ALERTMANAGER_PORT}


def slurm_hosts(check: Check) -> dict[str, str]:
    """The hosts named outside ``nodes`` that have slurm.conf and Slurm's commands, by name: what each is."""
    c = check.cluster
    found: dict[str, str] = {}
    for what, host in (("the controller", c.controller), ("the backup controller", c.backup_controller),
                       ("the database host", c.database)):
        if host is not None:
            found.setdefault(host.name, what)
    for host in c.login:
        found.setdefault(host.name, "a login host")
    return found


def rest(check: Check) -> None:
    c = check.cluster
    found = c.rest
    if found is None:
        return
    host = found.host
    if host is not None:
        known = slurm_hosts(check)
        if host.name not in known:
            check.add("rest.host", f"{host.name} is not a host of this cluster that has slurm.conf: slurmrestd runs "
                                   "on the controller (leave host out), the backup controller, the database host or "
                                   f"a login host ({', '.join(known) or 'none named'})", found, "host")
        else:
            address = next((h.address for h in (c.controller, c.backup_controller, c.database, *c.login)
                            if h is not None and h.name == host.name and h.address is not None), None)
            if host.address is not None and address is not None and host.address != address:
                check.add("rest.host.address", f"{host.name} is {address} where the cluster names it, not "
                                               f"{host.address}", found, "host")
    if not 1 <= found.port <= 65535:
        check.add("rest.port", f"{found.port} is not a TCP port (1 to 65535)", found, "port")
    else:
        slurm = {key: int(value) for key, default in _SLURM_PORTS.items()
                 if str(value := c.slurm_conf_extra.get(key, default)).isdigit()}
        taken = {**{f"Slurm's {key}": port for key, port in slurm.items()},
                 **(_MONITORING_PORTS if c.monitoring is not None else {})}
        for what, port in taken.items():
            if port == found.port:
                check.add("rest.port", f"{found.port} is already {what}", found, "port")
    try:
        ipaddress.ip_address(found.listen)
    except ValueError:
        check.add("rest.listen", f"{found.listen!r} is not an IP address (0.0.0.0: every IPv4 address of the host)",
                  found, "listen")
    setup = c.setup
    user = setup.slurmrestd_user
    for other, ids in (("munge", setup.munge_user), ("slurm", setup.slurm_user)):
        if user.uid == ids.uid:
            check.add("setup.slurmrestd_user", f"uid {user.uid} is also the {other} user's", user)
        if user.gid == ids.gid:
            check.add("setup.slurmrestd_user", f"gid {user.gid} is also the {other} group's", user)
