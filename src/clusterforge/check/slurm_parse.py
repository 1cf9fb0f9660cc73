"""Pure parsers of Slurm's view, read on the controller: `scontrol show partition -o`, `scontrol show topology`,
`sacctmgr -nP` listings. The nodes are read by slurm/nodes.py, as every caller reads them."""

from __future__ import annotations

from dataclasses import dataclass

from .. import hostlists
from ..slurm.parse import key_values

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
