"""What `clusterforge check` takes as the inventory's truth where a running cluster may rightly differ from it."""

from __future__ import annotations

from pydantic import Field

from .base import Entry


class Acceptance(Entry):
    memory_tolerance: float = Field(
        default=10, ge=0, le=100,
        description="percent of a node's memory RealMemory may leave unused before the check names it (what the OS "
                    "and the daemons keep); 100 where a node's memory is not its own (containers)")
