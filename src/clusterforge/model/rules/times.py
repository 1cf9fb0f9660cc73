"""Slurm time strings (MaxTime, DefaultTime, MaxWall, PriorityDecayHalfLife), parsed as Slurm parses them."""

from __future__ import annotations

import re

SLURM_TIME = re.compile(
    r"^(?:(?P<unlimited>UNLIMITED|INFINITE)"
    r"|(?P<days>\d+)-(?P<dh>\d{1,2})(?::(?P<dm>\d{1,2})(?::(?P<ds>\d{1,2}))?)?"
    r"|(?P<a>\d+)(?::(?P<b>\d{1,2})(?::(?P<c>\d{1,2}))?)?)$",
    re.IGNORECASE,
)


def slurm_time_seconds(text: str) -> float | None:
    """Seconds in a Slurm time string, inf for UNLIMITED, None if Slurm would not parse it."""
    match = SLURM_TIME.match(text.strip())
    if not match:
        return None
    g = match.groupdict()
    if g["unlimited"]:
        return float("inf")
    if g["days"] is not None:
        return int(g["days"]) * 86400 + int(g["dh"]) * 3600 + int(g["dm"] or 0) * 60 + int(g["ds"] or 0)
    if g["c"] is not None:  # hours:minutes:seconds
        return int(g["a"]) * 3600 + int(g["b"]) * 60 + int(g["c"])
    return int(g["a"]) * 60 + int(g["b"] or 0)  # minutes[:seconds]
