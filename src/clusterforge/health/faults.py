"""The hardware faults a node keeps, whoever holds the node meanwhile: each until the node boots again, or, where
NVIDIA says a GPU reset is enough (xid.py's "reset" class), until that GPU is reset through the program
(``clusterforge-health reset``) or the node boots again.

Kept in the state directory as ``held-faults.json``: the boot they were seen in, and per fault its drain reason,
what ends it and the GPU's bus. Another boot holds none of them. Before this file, an earlier release kept only the
boot in which it drained for a hardware Xid (``xid-drain-boot``): such a drain is still held in its boot.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from . import statedir
from ..slurm.drains import parse_reason
from ..slurm.nodes import Node
from .probes import Finding, reason_of
from .xid import REBOOT, RESET

HELD = "held-faults.json"
LEGACY_HELD = "xid-drain-boot"


def _fault(entry: object) -> Finding | None:
    if not isinstance(entry, dict):
        return None
    drain = parse_reason(str(entry.get("reason", "")))
    until = entry.get("until") if entry.get("until") in (RESET, REBOOT) else REBOOT
    return Finding(drain, sticky=True, until=str(until), bus=str(entry.get("bus", ""))) if drain else None


def held(state_dir: str, boot: str) -> list[Finding] | None:
    """The faults held in the boot ``boot``; None where this file was never written (see legacy)."""
    text = statedir.load(state_dir, HELD)
    if text is None:
        return None
    try:
        kept = json.loads(text)
        if kept.get("boot") != boot:
            return []
        return [f for f in map(_fault, kept["faults"]) if f is not None]
    except (ValueError, KeyError, TypeError, AttributeError):
        return []


def earlier(state_dir: str, boot: str) -> list[Finding]:
    """The faults held in a boot before ``boot``, not forgotten yet: what the reboot since ended, which the admission
    gate makes the node prove repaired (repaired.py)."""
    text = statedir.load(state_dir, HELD)
    try:
        kept = json.loads(text) if text is not None else None
        if not isinstance(kept, dict) or kept.get("boot") in (None, boot):
            return []
        return [f for f in map(_fault, kept["faults"]) if f is not None]
    except (ValueError, KeyError, TypeError):
        return []


def forget(state_dir: str, boot: str) -> None:
    """An earlier boot's faults are done with: this boot holds none so far."""
    save(state_dir, boot, [])


def legacy(state_dir: str, state: Node, boot: str) -> list[Finding]:
    """A node an earlier release drained for a hardware Xid, in this boot or in one it did not record: still held,
    until a reboot."""
    drain = parse_reason(state.reason) if state.drained else None
    drained_in = statedir.load(state_dir, LEGACY_HELD)
    if drain is not None and drain.cause == "gpu" and drain.code.startswith("xid") and drained_in in (None, boot):
        return [Finding(drain, sticky=True, until=REBOOT)]
    return []


def save(state_dir: str, boot: str, faults: Sequence[Finding]) -> None:
    entries = [{"reason": reason_of([f]), "until": f.until or REBOOT, "bus": f.bus} for f in faults]
    statedir.save(state_dir, HELD, json.dumps({"boot": boot, "faults": entries}, sort_keys=True) + "\n")


def hold(state_dir: str, boot: str, kept: Sequence[Finding], findings: Sequence[Finding]) -> list[Finding]:
    """``kept`` and the hardware faults among ``findings``, recorded for this boot where that adds one."""
    faults = list(kept)
    seen = {reason_of([f]) for f in faults}
    for finding in findings:
        if finding.sticky and finding.action == "drain" and reason_of([finding]) not in seen:
            faults.append(finding)
            seen.add(reason_of([finding]))
    if len(faults) != len(kept) or statedir.load(state_dir, HELD) is None:
        save(state_dir, boot, faults)
    return faults


def not_among(faults: Sequence[Finding], findings: Sequence[Finding]) -> list[Finding]:
    """The held faults that ``findings`` (this run's) do not name again: each still drains."""
    seen = {reason_of([f]) for f in findings}
    return [f for f in faults if reason_of([f]) not in seen]


def released_by_reset(faults: Sequence[Finding], bus: str) -> tuple[list[Finding], list[Finding]]:
    """(kept, released): a reset of the GPU on ``bus`` ends its faults of the reset class, and no other."""
    released = [f for f in faults if f.until == RESET and f.bus == bus]
    return [f for f in faults if f not in released], released


def until(faults: Sequence[Finding]) -> str:
    """What ends every one of ``faults``, in words."""
    return "its GPU is reset or the node reboots" if all(f.until == RESET for f in faults) else "the node reboots"
