"""The accounting entries slurm.conf refers to: the cluster and its QOS, created before slurmctld starts (it refuses
a partition QOS it cannot find), and the QOS' TRES limits, set once slurmctld has registered the TRES."""

from __future__ import annotations

import shlex

from pyinfra import host

from ..model import ValidCluster
from ..render.sacctmgr import qos_plan
from . import ops
from .facts import accounting_state
from .rehearsal import step


@step("accounting entries")
def accounting_entries() -> None:
    """On the database host, which has slurm.conf: sacctmgr finds slurmdbd through it."""
    valid: ValidCluster = host.data.clusterforge
    found = accounting_state()
    known = set(found.qos)
    commands = [] if valid.name in found.clusters else [f"sacctmgr --immediate add cluster {shlex.quote(valid.name)}"]
    commands += [shlex.join(["sacctmgr", "--immediate", *args]) for args in qos_plan(valid).create
                 if args[2] not in known]
    ops.commands(name=f"cluster {valid.name} and its QOS in the accounting database", commands=commands,
                 otherwise="the cluster and its QOS are registered")


@step("QOS limits")
def qos_limits() -> None:
    """On the controller, once slurmctld runs: TRES limits (gres/gpu=...) are accepted only once it has registered
    the TRES."""
    valid: ValidCluster = host.data.clusterforge
    current = accounting_state().qos
    commands = []
    for args in qos_plan(valid).limits:
        name = args[3].split("=", 1)[1]
        wanted = dict(a.split("=", 1) for a in args[5:])
        have = dict(zip(("MaxTRESPerUser", "GrpTRES"), current.get(name, ["", ""]), strict=False))
        if any(have.get(key) != value for key, value in wanted.items()):
            commands.append(shlex.join(["sacctmgr", "--immediate", *args]))
    ops.commands(name="QOS limits", commands=commands, otherwise="the QOS limits are set")
