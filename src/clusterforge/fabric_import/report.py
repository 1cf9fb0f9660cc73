"""What `clusterforge fabric import` says on stderr: a short summary before the Fabric(...), the details after it.

A SuperPOD dump can hold a hundred HCAs with the vendor's description: listed one a line before the summary they
buried it. So each kind of problem is one line with its count and how to see the rest (--verbose lists each item),
and only what an admin acts on host by host or cable by cable (the hosts that are no compute node, the cabling to
fix, the inventory's differences) is listed in full, after the snippet. Informative lines start with '# ', problems
with 'problem: '.
"""

from __future__ import annotations

from collections.abc import Sequence, Sized

from ..words import counted
from .apart import Apart
from .build import Imported

VERBOSE = "--verbose lists each"
CABLING = "each is listed after the Fabric"


def head(found: Imported) -> list[str]:
    """The summary: what was found (the rails with it), what was left out, and one line per kind of problem."""
    lines = [f"# {line}" for line in found.summary]
    if found.conflicts:
        lines.append(f"# {counted(len(found.conflicts), 'HCA')} named by the GUID file unlike their description "
                     f"(the file wins); {VERBOSE}")
    if found.elsewhere:
        lines.append(f"# {counted(len(found.elsewhere), 'unnamed HCA')} on other fabrics, left out; {VERBOSE}")
    if found.apart:
        hosts = ", ".join(a.host for a in found.apart)
        nodes = "node" if len(found.apart) == 1 else "nodes"
        lines.append(f"# {counted(len(found.apart), 'host')} on the compute fabric {_be(found.apart)} no compute "
                     f"{nodes}, left out of the leaves: {hosts} (why: after the Fabric)")
    if found.unnamed:
        lines.append(f"problem: {counted(len(found.unnamed), 'HCA')} of the compute fabric {_be(found.unnamed)} "
                     "unnamed (their description is the vendor's default): name them on the hosts with rdma-ndd or "
                     f"list them with --guids; {VERBOSE}")
    if found.miscabled:
        lines.append(f"problem: {counted(len(found.miscabled), 'node')} {_be(found.miscabled)} cabled unlike the "
                     f"nodes {'they share' if len(found.miscabled) != 1 else 'it shares'} a leaf with (a rail cabled "
                     f"elsewhere or a link down); {VERBOSE}")
    if found.off_rail:
        lines.append(_hanging(found.off_rail, "another rail's leaf (crossed cables, or a node on the wrong leaf)"))
    if found.off_unit:
        whose = "their" if len(found.off_unit) != 1 else "its"
        lines.append(_hanging(found.off_unit, f"another scalable unit's leaf of {whose} rail (a cable to the wrong "
                                              "unit)"))
    if found.short_units:
        lines.append(f"problem: {counted(len(found.short_units), 'scalable unit')} "
                     f"{'has' if len(found.short_units) == 1 else 'have'} fewer leaves than another (a leaf missing "
                     f"or unplugged); {CABLING}")
    return lines


def details(found: Imported, verbose: bool) -> list[str]:
    """After the snippet: the hosts that are no compute node, then with ``verbose`` every item of every kind."""
    lines = []
    if found.apart:
        lines.append("not compute nodes, check these (left out of the Fabric's leaves):")
        lines += [f"  {apart_line(a)}" for a in found.apart]
    if found.cabling:
        lines.append("cabling to fix (node HCA port, on leaf port: where it belongs):")
        lines += [f"  {line}" for line in found.cabling]
    if verbose:
        lines += [f"# {line}" for line in found.conflicts + found.elsewhere]
        lines += [f"problem: {line}" for line in found.unnamed + found.miscabled]
    return lines


def apart_line(apart: Apart) -> str:
    """A host apart, the HCAs it hangs off (the first three) and why it is no compute node."""
    where = ", ".join(apart.where[:3]) + (f", ... ({len(apart.where)} HCAs)" if len(apart.where) > 3 else "")
    return f"{apart.host} (on {where}): {apart.reason}"


def _be(items: Sequence[object]) -> str:
    return "is" if len(items) == 1 else "are"


def _hanging(hcas: Sized, where: str) -> str:
    """The summary line of HCAs cabled where they do not belong, each listed in the cabling to fix."""
    return f"problem: {counted(len(hcas), 'HCA')} {'hang' if len(hcas) != 1 else 'hangs'} off {where}; {CABLING}"
