"""slurmctld: state directory, the service, and the restart or reconfigure the changed files ask for
(clusterforge.restarts decides; see slurm_files.host_plan)."""

from __future__ import annotations

import shlex

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.operations import files, server, systemd
from pyinfra.operations.util import any_changed

from ..model import ValidCluster
from ..render.sacctmgr import qos_plan
from .facts import SacctmgrRows
from .packages import install
from .slurm_files import host_plan
from .waits import until

ANSWERS = until("scontrol ping", "slurmctld answers scontrol ping")


@deploy("slurmctld packages")
def slurmctld_packages() -> None:
    install("slurmctld", ["slurmctld", "slurm-client"])


@deploy("slurmctld stop before nodes change")
def slurmctld_stop_for_nodes() -> None:
    """Slurm <= 24.05 adds or removes nodes with slurmctld stopped while every host gets the new files."""
    plan = host_plan()
    if plan.stop_slurmctld_first:
        systemd.service(name="stop slurmctld: " + "; ".join(plan.reasons), service="slurmctld", running=False)


@deploy("slurmctld")
def slurmctld() -> None:
    valid: ValidCluster = host.data.clusterforge
    plan = host_plan()
    state_dir = valid.slurm_conf["StateSaveLocation"]
    files.directory(name=f"{state_dir} (StateSaveLocation)", path=state_dir, user="slurm", group="slurm",
                    mode="0700")
    files.directory(name="/var/log/slurm is the slurm user's", path="/var/log/slurm", user="slurm", group="slurm",
                    mode="0755")
    started = systemd.service(name="slurmctld is running and enabled", service="slurmctld", running=True,
                              enabled=True)
    changed = [started]
    if plan.restart_slurmctld and not plan.stop_slurmctld_first:
        changed.append(systemd.service(name="restart slurmctld: " + "; ".join(plan.reasons), service="slurmctld",
                                       restarted=True))
    server.shell(name="wait until slurmctld answers", commands=[ANSWERS], _if=any_changed(*changed))
    if plan.reconfigure:
        server.shell(name="scontrol reconfigure: " + "; ".join(plan.reasons),
                     commands=["scontrol reconfigure", ANSWERS])
    _qos_limits(valid)


def _qos_limits(valid: ValidCluster) -> None:
    """TRES limits (gres/gpu=...) are accepted only once slurmctld has registered the TRES."""
    fields = "name,maxtrespu,grptres"
    current = {row[0]: row[1:] for row in host.get_fact(SacctmgrRows, entity="qos", fields=fields) or []}
    for args in qos_plan(valid).limits:
        name = args[3].split("=", 1)[1]
        wanted = dict(a.split("=", 1) for a in args[5:])
        have = dict(zip(("MaxTRESPerUser", "GrpTRES"), current.get(name, ["", ""]), strict=False))
        if any(have.get(key) != value for key, value in wanted.items()):
            server.shell(name=f"QOS {name} limits", commands=[shlex.join(["sacctmgr", "--immediate", *args])])
