"""The nodes as the exporter counts them, from the one listing of slurm/nodes.py: whether each can take jobs, and
whose its drain is. Pure."""

from __future__ import annotations

from ..slurm.nodes import Node

# A node takes new jobs in these base states and with none of these flags (a reboot requested or issued takes it out
# of scheduling until it registers again; a maintenance reservation, until it ends), as node_state_string_complete()
# spells them on every release: e.g. "allocated+drain", "down+drain+reboot_issued", "idle+maintenance+reserved",
# "unknown+not_responding".
USABLE_BASES = frozenset({"IDLE", "MIXED", "ALLOCATED"})
UNUSABLE_FLAGS = frozenset({"DRAIN", "FAIL", "NOT_RESPONDING", "REBOOT_REQUESTED", "REBOOT_ISSUED", "MAINTENANCE",
                            "POWER_DOWN", "POWERED_DOWN", "POWERING_DOWN", "POWERING_UP", "INVALID_REG"})


def usable(node: Node) -> bool:
    return node.base in USABLE_BASES and not node.flags & UNUSABLE_FLAGS


def drain_owner(node: Node) -> str:
    """"clusterforge" for a reason clusterforge sets (slurm/drains.py, the one rule), else "other"."""
    return "clusterforge" if node.drain is not None else "other"
