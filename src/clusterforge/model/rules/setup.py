"""Rules for how hosts are prepared: the apt proxy, /etc/hosts, the daemons' fixed ids."""

from __future__ import annotations

import re

from .check import Check
from .hosts import Expanded, service_hosts


def setup(check: Check, expanded: Expanded) -> None:
    if check.cluster.disruption_budget < 1:
        check.add("disruption_budget", f"{check.cluster.disruption_budget}: at least 1 (a deploy that may take no node "
                  "out could never move a driver or remove a node)", check.cluster, "disruption_budget")
    setup = check.cluster.setup
    if setup.apt_proxy is not None and not re.match(r"https?://[^/\s]+/?$", setup.apt_proxy):
        check.add("setup.apt_proxy", f"{setup.apt_proxy!r} is not an http://host:port address", setup)
    munge, slurm = setup.munge_user, setup.slurm_user
    if munge.uid == slurm.uid:
        check.add("setup.slurm_user", f"uid {slurm.uid} is also the munge user's", slurm)
    if munge.gid == slurm.gid:
        check.add("setup.slurm_user", f"gid {slurm.gid} is also the munge group's", slurm)
    if setup.etc_hosts:
        # A host named twice (the database on the controller) needs its address once.
        addressed = {h.name for _, h in service_hosts(check) if h.address is not None}
        addressed |= {name for _, name, address in expanded if address is not None}
        names = [h.name for _, h in service_hosts(check)] + [name for _, name, _ in expanded]
        unaddressed = [name for name in dict.fromkeys(names) if name not in addressed]
        if unaddressed:
            check.add("setup.etc_hosts", "needs every host's address; missing for "
                      + check.sample(dict.fromkeys(unaddressed)), setup)
