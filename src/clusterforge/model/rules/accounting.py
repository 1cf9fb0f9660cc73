"""Rules for accounting: priority weights, enforcement, QOS and the TRES their limits name."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...versions import v
from ..accounting import Accounting, Qos
from ..base import Entry
from .check import Check
from .times import slurm_time_seconds

ENFORCE_VALUES = {"associations", "limits", "qos", "safe", "wckeys", "nojobs", "nosteps"}
# TRES every cluster has (slurmctld registers them whatever AccountingStorageTRES says).
BASE_TRES = ("billing", "cpu", "energy", "fs/disk", "mem", "node", "pages", "vmem")
_LIMIT = re.compile(r"^(?P<name>[^=,\s]+)=(?P<value>-1|\d+[KMGTP]?)$")
# What sacctmgr accepts after Flags= (slurmdb_defs.c str_2_qos_flags), lower-cased; Relative from 23.11.
QOS_FLAGS = {"denyonlimit", "enforceusagethreshold", "nodecay", "noreserve", "overpartqos", "partitionmaxnodes",
             "partitionminnodes", "partitiontimelimit", "requiresreservation", "usagefactorsafe", "relative"}
RELATIVE_QOS = v("23.11")
PREEMPT_MODES = {"off", "cancel", "requeue", "suspend"}
TRES_FIELDS = ("max_tres_per_user", "max_tres_per_job", "grp_tres", "grp_tres_mins")


def qos_names(acct: Accounting) -> set[str]:
    """The QOS the cluster has, named as Slurm keeps them: in lower case, so 'High' and 'high' are one; 'normal'
    always among them (slurmdbd makes it)."""
    return {q.name.lower() for q in acct.qos} | {"normal"}


def known_qos(check: Check, where: str, name: str, qos: set[str], entry: Entry, field: str) -> None:
    """The one rule and message for a QOS name an entry gives: one of ``qos_names``, whatever its case."""
    if name.lower() not in qos and not check.refers_to_left_out(f"accounting.qos[{name}]"):
        check.add(where, f"{name!r} is not a QOS of accounting.qos", entry, field)


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
    names = qos_names(acct)
    # Slurm keeps QOS names in lower case: two that differ only in case are one QOS.
    check.duplicates(((q.name.lower(), q, f"accounting.qos[{q.name}]") for q in acct.qos), "defined more than once")
    known = cluster_tres(gpu_types)
    for qos in acct.qos:
        where = f"accounting.qos[{qos.name}]"
        check.name(where, qos.name, qos, "QOS")
        for target in qos.preempt:
            known_qos(check, f"{where}.preempt", target, names, qos, "preempt")
        _preempt_mode(check, where, qos)
        for flag in qos.flags:
            if flag.lower() not in QOS_FLAGS:
                check.add(f"{where}.flags", f"{flag!r} is not a QOS flag", qos, "flags")
            elif flag.lower() == "relative" and check.version < RELATIVE_QOS:
                check.add(f"{where}.flags", f"'Relative' needs Slurm {RELATIVE_QOS} or newer", qos, "flags")
        time(check, where, qos, "max_wall")
        not_negative(check, where, qos, "max_jobs_per_user")
        for field in TRES_FIELDS:
            tres_limits(check, f"{where}.{field}", getattr(qos, field), qos, known, field)


def _preempt_mode(check: Check, where: str, qos: Qos) -> None:
    mode = qos.preempt_mode
    if mode is None:
        return
    parts = [p.strip().lower() for p in mode.split(",")]
    modes = [p for p in parts if p != "gang"]
    if len(modes) > 1 or any(p not in PREEMPT_MODES for p in modes) or parts.count("gang") > 1:
        check.add(f"{where}.preempt_mode", f"{mode!r} is not a PreemptMode: one of off, cancel, requeue, suspend, "
                                           "with ',gang' after it if wanted", qos, "preempt_mode")


def time(check: Check, where: str, entry: Entry, field: str) -> None:
    value = getattr(entry, field)
    if value is not None and slurm_time_seconds(value) is None:
        check.add(f"{where}.{field}", f"{value!r} is not a Slurm time", entry, field)


def not_negative(check: Check, where: str, entry: Entry, field: str) -> None:
    value = getattr(entry, field)
    if value is not None and value < 0:
        check.add(f"{where}.{field}", f"must not be negative, not {value}", entry, field)


def tres_limits(check: Check, where: str, text: str | None, entry: Entry, known: tuple[str, ...],
                field: str | None = None) -> None:
    """``name=count[,name=count]`` where every name is a TRES of this cluster (sacctmgr refuses the others, but
    only once slurmctld runs)."""
    if text is None:
        return
    for part in text.split(","):
        match = _LIMIT.match(part.strip())
        if not match:
            check.add(where, f"{part.strip()!r} is not a TRES limit: write name=count, e.g. gres/gpu=64", entry,
                      field)
            continue
        name = match["name"].lower()
        if name not in known and not check.lacks("profiles"):  # a profile left out may have had the GPUs
            hint = f"; did you mean gres/{name}?" if f"gres/{name}" in known else ""
            check.add(where, f"{match['name']!r} is not a TRES of this cluster (its TRES: {', '.join(known)}){hint}",
                      entry, field)
