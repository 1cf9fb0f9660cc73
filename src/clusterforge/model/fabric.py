"""The InfiniBand fabric: leaf switches with their nodes, and the spines above them."""

from __future__ import annotations

from pydantic import Field

from .base import Entry, Named


class Leaf(Named):
    nodes: str | None = Field(default=None, description="hostlist of the nodes cabled to this leaf")


class Spine(Named):
    switches: str = Field(description="hostlist of the switches (leaves or lower spines) below this spine")


class Fabric(Entry):
    """A leaf/spine tree. ``rail_optimized``: every node hangs off one leaf per rail, so it sits under several
    leaves; leaves with the same nodes are one scheduling unit."""

    leaves: tuple[Leaf, ...] = ()
    spines: tuple[Spine, ...] = ()
    rail_optimized: bool = False
    disconnected: bool = Field(
        default=False,
        description="no switch is above every node, on purpose (e.g. to keep jobs off an oversubscribed spine)",
    )
