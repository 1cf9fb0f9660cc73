"""Pure parsers of Slurm's view, read on the controller: `scontrol show node|partition -o`, `scontrol show
topology`, `sacctmgr -nP` listings."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import hostlists
from ..slurm.parse import key_values

# Node state flags that mean the node takes no (new) jobs; Slurm joins them with '+' (IDLE+DRAIN, DOWN+NOT_RESPONDING),
# spelled as both releases print them (node_state_string_complete: a maintenance reservation is MAINTENANCE).
BAD_STATES = ("DOWN", "DRAIN", "FAIL", "NOT_RESPONDING", "INVALID_REG", "UNKNOWN", "MAINTENANCE", "REBOOT_ISSUED",
              "POWERED_DOWN", "POWERING_DOWN")


@dataclass(frozen=True, slots=True)
class SlurmNode:
    name: str
    state: str
    reason: str
    gpus: int  # every gpu GRES of the node, all types

    @property
    def bad_flags(self) -> list[str]:
        flags = self.state.split("+")
        return [f for f in flags if f.rstrip("*") in BAD_STATES or f.startswith(("DRAIN", "DOWN", "FAIL"))]


def _gpu_count(gres: str) -> int:
    """``gpu:h100:8(S:0-1)``, ``gpu:8``, ``gpu:h100:4(S:0),gpu:h100:4(S:1)``: the sum of the gpu counts."""
    total = 0
    for item in re.split(r",(?![^()]*\))", gres):
        item = re.sub(r"\(.*\)$", "", item.strip())
        parts = item.split(":")
        if parts[0] == "gpu" and len(parts) >= 2 and parts[-1].isdigit():
            total += int(parts[-1])
    return total


def nodes(text: str) -> dict[str, SlurmNode]:
    found = {}
    for line in text.splitlines():
        if not line.startswith("NodeName="):
            continue
        values = key_values(line)
        name = values["NodeName"]
        reason = values.get("Reason", "")
        found[name] = SlurmNode(name, values.get("State", "?"), "" if reason in ("(null)", "none") else reason,
                                _gpu_count(values.get("Gres", "(null)")))
    return found


@dataclass(frozen=True, slots=True)
class SlurmPartition:
    name: str
    nodes: tuple[str, ...]
    default: bool
    qos: str | None
    allow_qos: tuple[str, ...]  # empty: ALL


def partitions(text: str) -> dict[str, SlurmPartition]:
    found = {}
    for line in text.splitlines():
        if not line.startswith("PartitionName="):
            continue
        values = key_values(line)
        members = values.get("Nodes", "(null)")
        qos = values.get("QoS", "N/A")
        allow = values.get("AllowQos", "ALL")
        found[values["PartitionName"]] = SlurmPartition(
            values["PartitionName"],
            tuple(hostlists.expand(members)) if members not in ("(null)", "") else (),
            values.get("Default") == "YES",
            None if qos in ("N/A", "(null)") else qos,
            () if allow == "ALL" else tuple(allow.split(",")))
    return found


@dataclass(frozen=True, slots=True)
class SlurmSwitch:
    name: str
    level: int
    nodes: tuple[str, ...]
    switches: tuple[str, ...]


def topology(text: str) -> dict[str, SlurmSwitch]:
    """`scontrol show topology`: one ``SwitchName=... Level=N LinkSpeed=... Nodes=... Switches=...`` line a switch
    (topology/tree), or ``BlockName=... Nodes=...`` a block (topology/block; Level 0 here)."""
    found = {}
    for line in text.splitlines():
        values = key_values(line)
        name = values.get("SwitchName") or values.get("BlockName")
        if not name:
            continue
        node_list, switch_list = values.get("Nodes", ""), values.get("Switches", "")
        found[name] = SlurmSwitch(
            name, int(values.get("Level", "0") or 0),
            tuple(hostlists.expand(node_list)) if node_list and node_list != "(null)" else (),
            tuple(hostlists.expand(switch_list)) if switch_list and switch_list != "(null)" else ())
    return found


def column(text: str) -> list[str]:
    """The first field of each line of a `sacctmgr -nP` listing."""
    return [line.split("|")[0].strip() for line in text.splitlines() if line.strip()]
