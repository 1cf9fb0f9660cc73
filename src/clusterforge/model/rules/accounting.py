"""Rules for accounting: priority weights, enforcement, QOS and the TRES their limits name."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..accounting import Qos
from .check import Check
from .times import slurm_time_seconds

ENFORCE_VALUES = {"associations", "limits", "qos", "safe", "wckeys", "nojobs", "nosteps"}
# TRES every cluster has (slurmctld registers them whatever AccountingStorageTRES says).
BASE_TRES = ("billing", "cpu", "energy", "fs/disk", "mem", "node", "pages", "vmem")
_LIMIT = re.compile(r"^(?P<name>[^=,\s]+)=(?P<value>-1|\d+[KMGTP]?)$")


def cluster_tres(gpu_types: Iterable[str]) -> tuple[str, ...]:
    """Every TRES the cluster's slurmctld will know: the base ones, and gres/gpu with each GPU type where there are
    GPUs (AccountingStorageTRES names them)."""
    types = list(dict.fromkeys(gpu_types))
    return (*BASE_TRES, *(["gres/gpu", *(f"gres/gpu:{t}" for t in types)] if types else []))


def accounting(check: Check, gpu_types: Iterable[str]) -> None:
    acct = check.cluster.accounting
    for field, value in acct.weights.model_dump().items():
        if value < 0:
            check.add(f"accounting.weights.{field}", f"must not be negative, not {value}", acct.weights)
    if slurm_time_seconds(acct.decay_half_life) is None:
        check.add("accounting.decay_half_life", f"{acct.decay_half_life!r} is not a Slurm time", acct)
    for value in acct.enforce:
        if value not in ENFORCE_VALUES:
            check.add("accounting.enforce", f"{value!r} is not one of {', '.join(sorted(ENFORCE_VALUES))}", acct)
    names = {q.name for q in acct.qos}
    check.duplicates(((q.name, q, f"accounting.qos[{q.name}]") for q in acct.qos), "defined more than once")
    known = cluster_tres(gpu_types)
    for qos in acct.qos:
        where = f"accounting.qos[{qos.name}]"
        check.name(where, qos.name, qos, "QOS")
        for target in qos.preempt:
            if target not in names and target != "normal":
                check.add(f"{where}.preempt", f"{target!r} is not a QOS of accounting.qos", qos)
        if qos.max_wall is not None and slurm_time_seconds(qos.max_wall) is None:
            check.add(f"{where}.max_wall", f"{qos.max_wall!r} is not a Slurm time", qos)
        for field in ("max_tres_per_user", "grp_tres"):
            tres_limits(check, f"{where}.{field}", getattr(qos, field), qos, known)


def tres_limits(check: Check, where: str, text: str | None, entry: Qos, known: tuple[str, ...]) -> None:
    """``name=count[,name=count]`` where every name is a TRES of this cluster (sacctmgr refuses the others, but
    only once slurmctld runs)."""
    if text is None:
        return
    for part in text.split(","):
        match = _LIMIT.match(part.strip())
        if not match:
            check.add(where, f"{part.strip()!r} is not a TRES limit: write name=count, e.g. gres/gpu=64", entry)
            continue
        name = match["name"].lower()
        if name not in known:
            hint = f"; did you mean gres/{name}?" if f"gres/{name}" in known else ""
            check.add(where, f"{match['name']!r} is not a TRES of this cluster (its TRES: {', '.join(known)}){hint}",
                      entry)
