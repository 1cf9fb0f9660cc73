"""The InfiniBand fabric: leaf switches with their nodes, the spines above them, and how Slurm schedules on it; and
the block topologies a cluster may have besides it (Slurm 25.05+, topology.yaml)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from pydantic import Field, field_validator

from .base import Entry, Named, slurm_key


class Leaf(Named):
    nodes: str | None = Field(default=None, description="hostlist of the nodes cabled to this leaf",
                              json_schema_extra=slurm_key("topology.conf", "Nodes", line="SwitchName"))


class Spine(Named):
    switches: str = Field(description="hostlist of the switches (leaves or lower spines) below this spine",
                          json_schema_extra=slurm_key("topology.conf", "Switches", line="SwitchName"))


class Rail(Named):
    """One rail of a rail-optimized fabric: the leaves (one per scalable unit) that the same HCA of every node is
    cabled to. Not rendered into any Slurm file: what NCCL is told and what a cabling check expects come from it."""

    hca: str | None = Field(
        default=None,
        description="the RDMA device of each node on this rail (`mlx5_0`, as `ibstat` names it), where known")
    leaves: str = Field(description="hostlist of the leaf switches of this rail, one per scalable unit")


class Fabric(Entry):
    """A leaf/spine tree. ``rail_optimized``: every node hangs off one leaf per rail, so it sits under several
    leaves; leaves with the same nodes are one scheduling unit. ``rails`` (optional) names which leaves each rail
    is: given, they require ``rail_optimized=True``.

    ``plugin="block"`` (Slurm 23.11+) schedules on topology/block instead of topology/tree: each scheduling unit
    is a block, and Slurm pairs neighbouring blocks, in the order the leaves are written, into larger ones."""

    leaves: tuple[Leaf, ...] = Field(default=(), description="the leaf switches and their nodes: SwitchName lines "
                                                             "of topology.conf with topology/tree, blocks with "
                                                             "topology/block")
    spines: tuple[Spine, ...] = Field(default=(), description="the spine switches above the leaves: SwitchName lines "
                                                              "with Switches= in topology.conf (topology/tree)")
    rails: tuple[Rail, ...] = Field(
        default=(),
        description="rail_optimized only: each rail's leaves and HCA; `clusterforge fabric import` infers them",
    )
    port_label: str | None = Field(
        default=None,
        description="a regular expression the site's HCA port labels match, as node descriptions name them after "
                    "the host (`dgx-001 ib4`: `ib[0-9]+`); `HCA-N` and `mlx5_N` need none. `clusterforge fabric "
                    "import` keys each rail by its label")
    rail_optimized: bool = Field(default=False, description="every node hangs off one leaf per rail, so it sits "
                                                            "under several leaves; leaves with the same nodes are one "
                                                            "scheduling unit")
    disconnected: bool = Field(
        default=False,
        description="no switch is above every node, on purpose (e.g. to keep jobs off an oversubscribed spine)",
    )
    topology: str = Field(
        default="default",
        description="the fabric's topology name in topology.yaml (Slurm 25.05+), which Partition(topology=) gives; "
                    "the cluster's default topology. Slurm itself names topology.conf's topology `default`")
    plugin: Literal["tree", "block"] = Field(
        default="tree", description="Slurm's topology plugin: topology/tree, or topology/block (Slurm 23.11+)",
        json_schema_extra=slurm_key("slurm.conf", "TopologyPlugin"))
    block_sizes: tuple[int, ...] = Field(
        default=(),
        description="plugin='block' only, in nodes: the base block size (at most the smallest block's node count), "
                    "then each larger size a job is kept within, a power-of-two multiple of the base; "
                    "empty: the smallest block's size and up to 16 blocks, as Slurm's own default",
        json_schema_extra=slurm_key("topology.conf", "BlockSizes")
    )

    @field_validator("port_label")
    @classmethod
    def _port_label(cls, pattern: str | None) -> str | None:
        if pattern is None:
            return None
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"{pattern!r} is no regular expression: {error}") from None
        if not pattern or re.fullmatch(pattern, ""):
            raise ValueError(f"{pattern!r} matches an empty label: it would take any description as a label")
        return pattern


class Block(Named):
    """One block of a BlockTopology: nodes Slurm keeps a job within, such as one NVLink domain."""

    nodes: str = Field(description="hostlist of the nodes of this block, such as one NVLink domain")


class BlockTopology(Named):
    """A topology/block topology besides the fabric (Slurm 25.05+): named blocks of nodes, such as the NVLink
    domains of GB200 racks. Slurm pairs neighbouring blocks, in the order written, into larger ones. A partition
    schedules on it with ``Partition(topology=<its name>)``."""

    blocks: tuple[Block, ...] = Field(description="the blocks, in the order Slurm aggregates them; at least one")
    block_sizes: tuple[int, ...] = Field(
        default=(),
        description="in nodes: the base block size, then each larger size a job is kept within, a power-of-two "
                    "multiple of the base; empty: the smallest block's size and up to 16 blocks, as Slurm's own "
                    "default")


def leaves_by_node(nodes: Iterable[tuple[str, str | None]],
                   listed: Iterable[tuple[str, Iterable[str]]]) -> dict[str, list[str]]:
    """Which leaves each node hangs off, in the order written: the one its ``Nodes(leaf=...)`` names, then each
    ``Leaf(nodes=...)`` listing it. ``nodes``: each node's name with its entry's leaf (or None); ``listed``: each
    leaf's name with the names its ``nodes=`` expands to.

    Names come in, not entries: resolve reports a hostlist it cannot expand where it is written and keeps only names
    that are nodes, while ``fabric import`` compares even an inventory resolve refuses (when it is needed most)."""
    out: dict[str, list[str]] = {}
    for name, leaf in nodes:
        found = out.setdefault(name, [])
        if leaf is not None and leaf not in found:
            found.append(leaf)
    for leaf, names in listed:
        for name in names:
            found = out.setdefault(name, [])
            if leaf not in found:
                found.append(leaf)
    return out
