"""The nodes as sinfo lists them: state, whether they can take jobs, drain reason, GPUs. Pure.

``sinfo -O`` with ``Field:|`` (no width, a ``|`` after each field) neither pads nor truncates, on 22.05 and 24.11
alike (the JSON of the two releases differs). One line per node and partition; a node in no partition is not listed.
The reason is last, as it may itself hold a ``|``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..slurm.drains import parse_reason

FIELDS = ("NodeList", "Partition", "StateLong", "StateComplete", "Gres", "GresUsed", "Reason")
# -h no header, -a hidden partitions too (as squeue -a lists their jobs), -N a line per node, -O the fields.
SINFO_ARGV = ("sinfo", "-h", "-a", "-N", "-O", ",".join(f"{f}:|" for f in FIELDS))

# StateComplete is the base state and every flag, lower case, as node_state_string_complete() spells them
# (slurm_protocol_defs.c, 22.05 and 24.11 alike): e.g. "allocated+drain", "down+drain+reboot_issued",
# "idle+maintenance+reserved", "unknown+not_responding". A node takes new jobs in these base states and with none of
# these flags (a reboot requested or issued takes it out of scheduling until it registers again; a maintenance
# reservation, until it ends).
USABLE_BASES = frozenset({"idle", "mixed", "allocated"})
UNUSABLE_FLAGS = frozenset({"drain", "fail", "not_responding", "reboot_requested", "reboot_issued", "maintenance",
                            "power_down", "powered_down", "powering_down", "powering_up", "invalid_reg"})

# One GRES of a node's Gres or GresUsed: name[:type]:count, then an optional "(S:0-1)" or "(IDX:0,2-3)" (which may
# hold commas, so the list is not split on them).
_GRES = re.compile(r"([^,():]+)(?::([^,():]+))?:(\d+)(?:\([^)]*\))?")


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    partitions: tuple[str, ...]
    state: str            # StateLong: idle, mixed, drained, draining, down*, idle~, reboot^, ...
    complete: str         # StateComplete: base+flag+flag
    gpus: int             # configured
    gpus_alloc: int
    reason: str           # "" where sinfo says none

    @property
    def flags(self) -> frozenset[str]:
        return frozenset(self.complete.split("+")[1:])

    @property
    def usable(self) -> bool:
        return self.complete.split("+")[0] in USABLE_BASES and not self.flags & UNUSABLE_FLAGS

    @property
    def drained(self) -> bool:
        """Drained or draining: the drain flag, whatever else the node is."""
        return "drain" in self.flags

    @property
    def drain_owner(self) -> str:
        """"clusterforge" for a reason clusterforge sets (slurm/drains.py, the one rule), else "other"."""
        return "clusterforge" if parse_reason(self.reason) is not None else "other"


def gpu_count(gres: str) -> int:
    """The GPUs of a Gres or GresUsed field, all types together: ``gpu:h100:8(S:0-1)`` 8,
    ``gpu:a100:1(IDX:0),gpu:h100:0(IDX:N/A)`` 1, ``gpu:0`` and ``(null)`` 0; other GRES are not GPUs."""
    return sum(int(m[3]) for m in _GRES.finditer(gres) if m[1].strip() == "gpu")


def parse_sinfo(text: str) -> list[Node]:
    """SINFO_ARGV's output as one Node per node (with all its partitions), sorted by name. A line with fewer
    fields is not sinfo's and is skipped."""
    fields: dict[str, list[str]] = {}
    partitions: dict[str, list[str]] = {}
    for line in text.splitlines():
        # Each field ends with the "|" of its "Field:|": the last one too.
        parts = line.removesuffix("|").split("|", len(FIELDS) - 1)
        if len(parts) != len(FIELDS) or not parts[0]:
            continue
        name, partition = parts[0], parts[1].rstrip("*")  # "*" marks the default partition
        fields.setdefault(name, parts)
        partitions.setdefault(name, [])
        if partition not in partitions[name]:
            partitions[name].append(partition)
    nodes = []
    for name in sorted(fields):
        _, _, state, complete, gres, used, reason = fields[name]
        nodes.append(Node(name, tuple(sorted(partitions[name])), state.lower(), complete.lower(), gpu_count(gres),
                          gpu_count(used), "" if reason == "none" else reason))
    return nodes
