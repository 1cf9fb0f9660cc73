"""The cluster's lines of /etc/hosts, for sites without DNS for the cluster network."""

from __future__ import annotations

from ..model import ValidCluster


def lines(valid: ValidCluster) -> list[str]:
    """``address name`` for every host with an address, service hosts first, then nodes in name order."""
    found = [m for m in valid.machines if m.address]
    width = max((len(m.address or "") for m in found), default=0)
    return [f"{m.address:<{width}} {m.name}" for m in found]
