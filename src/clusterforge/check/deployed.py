"""`clusterforge check`'s view of the deploys' stamps (render/stamp.py), pure: each host's against the inventory check
was given (``host``), and across the hosts read, which clusterforge and which inventory deployed which (``across``).

A host without a stamp, or stamped from another inventory, is a finding: the deploy makes it right, and until it has
run there the host is not known to be as this inventory says (an admin who deployed a new node with --limit learns
so of the others). Hosts deployed by different clusterforge versions are one finding across them. A version other
than the one running check is not: a monitoring machine may run another.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from .. import hostlists
from ..model import ValidCluster
from ..render.stamp import PATH, Stamp, read
from ..words import counted
from .findings import Finding, Outcome

Result = tuple[str, list[Finding]]
SHORT = 12  # hex digits of a digest shown: enough to tell inventories apart by eye


def read_command() -> str:
    """The stamp's text; nothing where there is none."""
    where = shlex.quote(PATH)
    return f"test -e {where} || exit 0; cat {where}"


def stamp_of(text: str) -> Stamp | None:
    """The stamp a host holds (None: none); render.stamp.NotAStamp where the file is not one."""
    return read(text) if text.strip() else None


def _inventory(digest: str, valid: ValidCluster) -> str:
    this = " (this one)" if digest == valid.inventory_digest else ""
    return f"inventory {digest[:SHORT]}{this}"


def host(valid: ValidCluster, stamp: Stamp | None) -> Result:
    if stamp is None:
        return "no stamp", [Finding(f"no {PATH}: never deployed, or not since clusterforge stamps its deploys: "
                                    "run apply")]
    detail = (f"clusterforge {stamp.clusterforge}, {_inventory(stamp.inventory, valid)}, {stamp.deployed_at} by "
              f"{stamp.deployed_by}@{stamp.deployed_from}")
    if stamp.inventory == valid.inventory_digest:
        return detail, []
    cluster = f" of cluster {stamp.cluster}" if stamp.cluster != valid.name else ""
    return detail, [Finding(f"deployed from another inventory{cluster} ({stamp.inventory[:SHORT]}) than this one "
                            f"({valid.inventory_digest[:SHORT]}): not deployed since the inventory changed: run apply")]


def across(valid: ValidCluster, stamps: Mapping[str, Stamp | None]) -> Result:
    """Which clusterforge and inventory deployed which of the hosts read (None: the host has no stamp), as
    hostlists; a finding where they were deployed by several clusterforge versions."""
    order = {m.name: i for i, m in enumerate(valid.machines)}
    names = sorted(stamps, key=lambda name: (order.get(name, len(order)), name))
    groups: dict[tuple[str, str] | None, list[str]] = {}
    for name in names:
        found = stamps[name]
        groups.setdefault((found.clusterforge, found.inventory) if found is not None else None, []).append(name)

    def said(key: tuple[str, str] | None) -> str:
        if key is None:
            return "no stamp"
        version, inventory = key
        return f"clusterforge {version}, {_inventory(inventory, valid)}"

    if len(groups) == 1:
        [(key, hosts)] = groups.items()
        detail = f"{counted(len(hosts), 'host')}: {said(key)}"
    else:
        detail = "; ".join(f"{said(key)}: {hostlists.compress(hosts, valid.version)}" for key, hosts in groups.items())
    versions: dict[str, list[str]] = {}
    for name in names:
        if (found := stamps[name]) is not None:
            versions.setdefault(found.clusterforge, []).append(name)
    if len(versions) < 2:
        return detail, []
    each = "; ".join(f"{version} on {hostlists.compress(hosts, valid.version)}" for version, hosts in versions.items())
    return detail, [Finding(f"deployed by {len(versions)} clusterforge versions: {each}: run apply to them all with "
                            "one")]


def outcome(valid: ValidCluster, stamps: Mapping[str, Stamp | None]) -> Outcome:
    """``across`` as check's row, on the controller's name: it reports the cluster's views."""
    return Outcome(valid.controller.name, "deploys", *across(valid, stamps))
