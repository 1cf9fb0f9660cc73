"""sacctmgr arguments for what slurm.conf refers to but lives in the accounting database: the QOS.

Two phases, because of two facts of Slurm (seen with 22.05 and 24.11): a partition naming a QOS the database lacks
stops slurmctld at start ("Partition ... has an invalid qos"), and a QOS limit on a TRES such as gres/gpu is refused
until slurmctld has registered that TRES ("no TRES known by type gres/gpu"). So the QOS are created before
slurmctld starts and their TRES limits are set once it runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Qos, ValidCluster


@dataclass(frozen=True)
class QosPlan:
    create: list[list[str]]  # before slurmctld starts
    limits: list[list[str]]  # once slurmctld has registered its TRES


def _create_args(qos: Qos) -> list[str]:
    args = ["add", "qos", qos.name, f"Priority={qos.priority}"]
    if qos.preempt:
        args.append(f"Preempt={','.join(qos.preempt)}")
    if qos.max_wall:
        args.append(f"MaxWall={qos.max_wall}")
    return args


def _limit_args(qos: Qos) -> list[str] | None:
    limits = [f"{key}={value}" for key, value in (("MaxTRESPerUser", qos.max_tres_per_user),
                                                  ("GrpTRES", qos.grp_tres)) if value]
    return ["modify", "qos", "where", f"name={qos.name}", "set", *limits] if limits else None


def qos_plan(valid: ValidCluster) -> QosPlan:
    """``sacctmgr -i`` argument lists; a QOS is created after the QOS it preempts."""
    ordered: list[Qos] = []
    pending = list(valid.accounting.qos)
    while pending:
        known = {q.name for q in ordered} | {"normal"}
        ready = [q for q in pending if all(t in known for t in q.preempt)]
        ordered.extend(ready or pending)  # a preempt cycle cannot be ordered; sacctmgr reports it
        pending = [q for q in pending if q not in ordered]
    limits = [args for args in map(_limit_args, ordered) if args]
    return QosPlan([_create_args(q) for q in ordered], limits)
