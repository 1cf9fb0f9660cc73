"""The InfiniBand fabric: leaf switches with their nodes, the spines above them, and how Slurm schedules on it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Entry, Named


class Leaf(Named):
    nodes: str | None = Field(default=None, description="hostlist of the nodes cabled to this leaf")


class Spine(Named):
    switches: str = Field(description="hostlist of the switches (leaves or lower spines) below this spine")


class Fabric(Entry):
    """A leaf/spine tree. ``rail_optimized``: every node hangs off one leaf per rail, so it sits under several
    leaves; leaves with the same nodes are one scheduling unit.

    ``plugin="block"`` (Slurm 23.11+) schedules on topology/block instead of topology/tree: each scheduling unit
    is a block, and Slurm pairs neighbouring blocks, in the order the leaves are written, into larger ones."""

    leaves: tuple[Leaf, ...] = ()
    spines: tuple[Spine, ...] = ()
    rail_optimized: bool = False
    disconnected: bool = Field(
        default=False,
        description="no switch is above every node, on purpose (e.g. to keep jobs off an oversubscribed spine)",
    )
    plugin: Literal["tree", "block"] = Field(
        default="tree", description="Slurm's topology plugin: topology/tree, or topology/block (Slurm 23.11+)")
    block_sizes: tuple[int, ...] = Field(
        default=(),
        description="plugin='block' only, in nodes: the base block size (at most the smallest block's node count), "
                    "then each larger size a job is kept within, a power-of-two multiple of the base; "
                    "empty: the smallest block's size and up to 16 blocks, as Slurm's own default",
    )
