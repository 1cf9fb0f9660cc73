"""The jobs as squeue lists them, counted: by partition, account and state, and the pending ones by reason. Pure.

No job id, user or node is kept: a count per bounded set of labels is all that leaves this module.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

# Each job's state, partitions, account and why it waits (slurm/jobs.py's listing: hidden partitions too, one line
# per array task); %r is the reason's code alone (Resources, Priority, ...), where %R would add the nodes it waits for.
FORMAT = "%T|%P|%a|%r"
FIELDS = 4
NO_ACCOUNT = "(null)"  # 22.05, for a job whose association is not known (no accounting, or submitted before it)


@dataclass(frozen=True)
class Jobs:
    by_state: Counter[tuple[str, str, str]] = field(default_factory=Counter)  # (partition, account, state)
    pending: Counter[tuple[str, str]] = field(default_factory=Counter)       # (partition, reason)


def parse_squeue(text: str) -> Jobs:
    """The listing of FORMAT counted. The state lowercased (pending, running, completing, ...); a job submitted to
    several partitions keeps them as squeue prints them ("gpu,all"); no account is the empty label. A line with
    fewer fields is not squeue's and is skipped."""
    jobs = Jobs()
    for line in text.splitlines():
        parts = line.split("|", FIELDS - 1)
        if len(parts) != FIELDS or not parts[0]:
            continue
        state, partition, account, reason = parts
        state = state.lower()
        jobs.by_state[partition, "" if account == NO_ACCOUNT else account, state] += 1
        if state == "pending":
            jobs.pending[partition, reason] += 1
    return jobs
