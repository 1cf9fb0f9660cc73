"""slurmctld's scheduler statistics from ``sdiag``'s text, which 22.05 and 24.11 print alike for what is read here
(22.05 has no ``sdiag --json``; 24.11 adds sections, which are passed over). Pure.

The text is ``Key: value`` lines, at the top or tab-indented under a section title ("Main schedule statistics
(microseconds):", "Backfilling stats"); the same key ("Last cycle") appears in several sections. Cycle times are in
microseconds. The counters (cycles, jobs started) restart at midnight UTC, so none is read as a counter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAIN = "Main schedule statistics (microseconds)"
BACKFILL = "Backfilling stats"
MICROSECONDS = 1e6  # in a second
_VALUE = re.compile(r"\s*(-?\d+(?:\.\d+)?)\b")


@dataclass(frozen=True, slots=True)
class Figure:
    metric: str
    section: str   # "" for the top lines
    key: str
    per: float     # the printed value per base unit: MICROSECONDS for sdiag's cycle times
    help: str


FIGURES = (
    Figure("slurm_scheduler_threads", "", "Server thread count", 1, "slurmctld's server threads in use"),
    Figure("slurm_scheduler_agent_queue_size", "", "Agent queue size", 1,
           "RPCs slurmctld has queued to send (to slurmd, ...)"),
    Figure("slurm_scheduler_dbd_agent_queue_size", "", "DBD Agent queue size", 1,
           "Messages slurmctld holds for slurmdbd; grows while slurmdbd does not take them"),
    Figure("slurm_scheduler_last_cycle_seconds", MAIN, "Last cycle", MICROSECONDS, "The main scheduler's last cycle"),
    Figure("slurm_scheduler_max_cycle_seconds", MAIN, "Max cycle", MICROSECONDS,
           "The main scheduler's longest cycle since midnight UTC"),
    Figure("slurm_scheduler_mean_cycle_seconds", MAIN, "Mean cycle", MICROSECONDS,
           "The main scheduler's mean cycle since midnight UTC"),
    Figure("slurm_scheduler_backfill_last_cycle_seconds", BACKFILL, "Last cycle", MICROSECONDS,
           "The backfill scheduler's last cycle"),
    Figure("slurm_scheduler_backfill_max_cycle_seconds", BACKFILL, "Max cycle", MICROSECONDS,
           "The backfill scheduler's longest cycle since midnight UTC"),
    Figure("slurm_scheduler_backfill_mean_cycle_seconds", BACKFILL, "Mean cycle", MICROSECONDS,
           "The backfill scheduler's mean cycle since midnight UTC"),
    Figure("slurm_scheduler_backfill_depth_mean", BACKFILL, "Depth Mean", 1,
           "Jobs the backfill scheduler considered per cycle, on average since midnight UTC"),
)


def parse_sdiag(text: str) -> dict[tuple[str, str], str]:
    """(section, key) -> the value as printed; section "" for the top lines."""
    values: dict[tuple[str, str], str] = {}
    section = ""
    for line in text.splitlines():
        if not line.strip() or line.startswith("*"):
            continue
        key, colon, value = line.strip().partition(":")
        indented = line[0] in " \t"
        if not indented and not value.strip():
            section = key.strip()  # a title: "Backfilling stats", "Main schedule statistics (microseconds):"
        elif colon:
            values[section if indented else "", key.strip()] = value.strip()
    return values


def figures(text: str) -> dict[Figure, float]:
    """FIGURES that sdiag printed (a backfill mean appears only once a backfill cycle ran), in base units."""
    values = parse_sdiag(text)
    found = {}
    for figure in FIGURES:
        match = _VALUE.match(values.get((figure.section, figure.key), ""))
        if match:
            found[figure] = float(match[1]) / figure.per
    return found
