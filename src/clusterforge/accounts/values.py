"""Association and QOS values brought to one form, whether the inventory wrote them or sacctmgr printed them, so a
database that matches the inventory compares equal however each side spells it ("mem=2000G" and "mem=2048000",
"1-00:00:00" and "24:00:00", "" and no limit)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from ..model.rules.times import slurm_time_seconds

Tres = tuple[tuple[str, int], ...]  # sorted (name, count); no entry: no limit
_COUNT = re.compile(r"^(?P<number>\d+(?:\.\d+)?)(?P<unit>[KMGTP]?)$", re.IGNORECASE)
_UNITS = "KMGTP"
# sacctmgr prints these without the spelling the inventory may use; the spelling sacctmgr is given back.
QOS_FLAG_NAMES = {name.lower(): name for name in (
    "DenyOnLimit", "EnforceUsageThreshold", "NoDecay", "NoReserve", "OverPartQOS", "PartitionMaxNodes",
    "PartitionMinNodes", "PartitionTimeLimit", "RequiresReservation", "UsageFactorSafe", "Relative")}
NO_PREEMPT_MODE = "cluster"  # how sacctmgr prints a QOS without its own PreemptMode


def _tres_count(name: str, text: str) -> int | None:
    """A TRES count in Slurm's own units: MB for memory and burst buffers (whose suffixes count from M, and a K is
    ignored, as slurmdb_format_tres_str does), plain units for the others (K = 1024)."""
    match = _COUNT.match(text.strip())
    if not match:
        return None  # "NONE" (no limit) or "-1" (clear it)
    unit = match["unit"].upper()
    megabytes = name == "mem" or name.startswith("bb/")
    power = max(_UNITS.index(unit) - 1, 0) if megabytes and unit else (_UNITS.index(unit) + 1 if unit else 0)
    return round(float(match["number"]) * 1024 ** power)


def tres(text: str | None) -> Tres:
    found: dict[str, int] = {}
    for part in (text or "").split(","):
        name, _, value = part.strip().partition("=")
        count = _tres_count(name.strip().lower(), value) if name.strip() else None
        if count is not None:
            found[name.strip().lower()] = count
    return tuple(sorted(found.items()))


def tres_text(wanted: Tres, have: Tres = ()) -> str:
    """The value to set: each count that differs, and -1 for each TRES the database limits but the inventory does
    not (sacctmgr changes the TRES named and keeps the others)."""
    want, there = dict(wanted), dict(have)
    items = {n: c for n, c in want.items() if there.get(n) != c} | {n: -1 for n in there if n not in want}
    return ",".join(f"{name}={count}" for name, count in sorted(items.items()))


def minutes(text: str | None) -> int | None:
    """A Slurm time as the whole minutes slurmdbd keeps (rounded up, as Slurm does); None: no limit."""
    seconds = slurm_time_seconds(text) if text else None
    return None if seconds is None or seconds == float("inf") else math.ceil(seconds / 60)


def time_text(value: int | None) -> str:
    if value is None:
        return "-1"
    days, rest = divmod(value, 1440)
    return f"{days}-{rest // 60:02d}:{rest % 60:02d}:00" if days else f"{rest // 60:02d}:{rest % 60:02d}:00"


def count(text: str | int | None) -> int | None:
    if isinstance(text, int):
        return text
    text = (text or "").strip()
    return int(text) if text.isdigit() else None


def names(values: str | Iterable[str] | None) -> frozenset[str]:
    parts = values.split(",") if isinstance(values, str) else (values or ())
    return frozenset(p.strip().lower() for p in parts if p.strip())


def name(text: str | None) -> str:
    return (text or "").strip().lower()


def shares(value: str | int | None) -> str:
    """Fairshare as sacctmgr prints it: a number or "parent"; an association made without one has 1."""
    text = str(value).strip().lower() if value is not None else ""
    return text or "1"


def preempt_mode(text: str | None) -> str:
    """"requeue", "suspend,gang", ...; "cluster" for none, which is what OFF also means for a QOS."""
    parts = [p.strip().lower() for p in (text or "").split(",") if p.strip()]
    modes = sorted(p for p in parts if p not in ("gang", "off", "cluster"))
    return ",".join(modes + ["gang"] * ("gang" in parts)) or NO_PREEMPT_MODE


def flags(values: str | Iterable[str] | None) -> frozenset[str]:
    return names(values)


def flags_text(wanted: frozenset[str]) -> str:
    return ",".join(QOS_FLAG_NAMES.get(f, f) for f in sorted(wanted)) or "-1"


def admin_level(text: str | None) -> str:
    """sacctmgr prints Administrator, Operator, None (or "Not Set")."""
    text = name(text)
    return {"administrator": "admin", "not set": "none", "": "none"}.get(text, text)
