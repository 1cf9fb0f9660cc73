"""slurmd: spool directory, on GPU nodes a start that waits for the device files, the service, and the restart the
changed files ask for (clusterforge.restarts decides)."""

from __future__ import annotations

import shlex
from io import StringIO

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.operations import files, server, systemd
from pyinfra.operations.util import any_changed

from ..model import Node, ValidCluster
from ..render.slurmd_dropin import gpu_wait
from .packages import install
from .slurm_files import host_plan
from .waits import until

DROPIN = "/etc/systemd/system/slurmd.service.d/clusterforge-gpus.conf"


def responding(name: str) -> str:
    """Whether slurmctld hears this node: sinfo marks a node it does not hear with '*', or shows it down/unknown."""
    quoted = shlex.quote(name)
    return (f"sh -c 's=$(sinfo --noheader --node={quoted} --format=%T); "
            "case $s in \"\"|*\"*\"|down*|unknown*) exit 1;; esac'")


@deploy("slurmd packages")
def slurmd_packages() -> None:
    install("slurmd", ["slurmd", "slurm-client"])


@deploy("slurmd restart while slurmctld is stopped")
def slurmd_restart_for_nodes() -> None:
    plan = host_plan()
    if plan.stop_slurmctld_first and plan.restart_slurmd:
        systemd.service(name="restart slurmd: " + "; ".join(plan.reasons), service="slurmd", restarted=True)


@deploy("slurmd")
def slurmd() -> None:
    valid: ValidCluster = host.data.clusterforge
    node: Node = host.data.clusterforge_node
    plan = host_plan()
    spool = valid.slurm_conf["SlurmdSpoolDir"]
    files.directory(name=f"{spool} (SlurmdSpoolDir)", path=spool, mode="0755")
    files.directory(name="/var/log/slurm exists", path="/var/log/slurm", user="slurm", group="slurm", mode="0755")
    device_files = list(host.data.clusterforge_machine.device_files)
    if device_files:
        files.directory(name="slurmd drop-in directory", path="/etc/systemd/system/slurmd.service.d", mode="0755")
        dropin = files.put(name="slurmd waits for the GPU device files", src=StringIO(gpu_wait(valid, device_files)),
                           dest=DROPIN, mode="0644")
    else:
        dropin = files.file(name="no GPU wait for slurmd", path=DROPIN, present=False)
    systemd.daemon_reload(name="systemd reads the slurmd drop-in", _if=dropin.did_change)
    started = systemd.service(name="slurmd is running and enabled", service="slurmd", running=True, enabled=True)
    changed = [started]
    if plan.restart_slurmd and not plan.stop_slurmctld_first:
        changed.append(systemd.service(name="restart slurmd: " + "; ".join(plan.reasons), service="slurmd",
                                       restarted=True))
    wait = until(responding(node.name), f"node {node.name} responds")
    if plan.stop_slurmctld_first:
        # restarted earlier, while slurmctld was stopped: wait until it is heard again
        server.shell(name="wait until slurmctld hears slurmd", commands=[wait])
    else:
        server.shell(name="wait until slurmctld hears slurmd", commands=[wait], _if=any_changed(*changed))
