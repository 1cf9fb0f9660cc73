"""Hosts on the compute fabric that are no compute node: a UFM or management server, a machine rdma-ndd described
before it was named, a host with one HCA where the DGX have eight. They are kept out of the Fabric's leaves and
listed apart, each with its reason.

With an inventory its nodes decide: any other host is not one of them. Without one this is a guess from the name
and the cabling, and the reasons say which.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .. import hostlists

DEFAULT_NAME = "a default host name: rdma-ndd described it before the host was named"
NOT_IN_INVENTORY = "not a node of the inventory"
MIN_RAILS = 4  # the HCAs the compute nodes must have for a host with half as many or fewer to look like no node
# A word of the host's name (`ufm01` -> ufm, `mgmt-02` -> mgmt) and what it says the host is.
_ROLES = {"ufm": "a UFM server", "mgmt": "a management host", "mgt": "a management host",
          "management": "a management host", "admin": "a management host", "headnode": "a head node",
          "head": "a head node", "bcm": "a Base Command Manager head node", "login": "a login node",
          "opensm": "a subnet manager host"}


@dataclass(frozen=True)
class Apart:
    host: str  # or the default name its HCAs carry (`ubuntu`), which may be several machines'
    reason: str
    where: tuple[str, ...]  # each HCA's leaf and port


def by_name(host: str) -> str | None:
    """What a host's name says it is, if it says it is no compute node."""
    role = next((_ROLES[w] for w in re.split(r"[^a-z]+", host.lower()) if w in _ROLES), None)
    return f"its name says {role}" if role else None


def guess(hcas_of: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Without an inventory: host -> why it looks like no compute node, for the hosts with HCAs on the compute
    fabric (``hcas_of``: each host's HCA ids there)."""
    named = {host: reason for host in hcas_of if (reason := by_name(host)) is not None}
    usual = _usual([len(hcas) for host, hcas in hcas_of.items() if host not in named])
    out = {}
    for host, hcas in hcas_of.items():
        reasons = [named[host]] if host in named else []
        # One HCA where the nodes have eight is a server on one leaf; seven is a node with a rail down (reported
        # as cabled unlike its peers), so only half or fewer count. Where nodes have two, one is as likely a node
        # with a link down: no guess below four.
        if usual >= MIN_RAILS and len(hcas) * 2 <= usual:
            reasons.append(f"{len(hcas)} HCA{'s' if len(hcas) != 1 else ''} on the compute fabric where the compute "
                           f"nodes have {usual}")
        if reasons:
            out[host] = "; ".join(reasons)
    return out


def strangers(hcas_of: Mapping[str, Sequence[str]], compute: set[str]) -> dict[str, str]:
    """With an inventory: host -> why, for the hosts on the compute fabric that are none of its nodes."""
    return {host: "; ".join([NOT_IN_INVENTORY] + [r for r in (by_name(host),) if r])
            for host in hcas_of if host not in compute}


def _usual(counts: list[int]) -> int:
    """The HCA count most hosts have; on a tie the larger (one DGX and one UFM server: eight)."""
    tally = Counter(counts)
    return max(tally, key=lambda n: (tally[n], n)) if tally else 0


def listed(apart: list[Apart]) -> list[Apart]:
    return sorted(apart, key=lambda a: hostlists.natural_key(a.host))
