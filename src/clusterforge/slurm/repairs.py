"""The repair loop's drains (repair/, on the controller), written and read in one place, since two programs read them:
the loop itself, and the node's health check, which performs the one action the loop cannot take from the
controller, a GPU reset (health/program.py).

Every one is ``cf:repair:<code> <detail>`` (drains.py's format), and so a drain of clusterforge's own that no other
cause lifts:

- ``cf:repair:reset gpu3 0000:5d:00 xid48 (attempt 1 of 2)``: the loop asks the node's health check to reset that
  GPU (its bus after the GPU's name), once Slurm says no job holds it. The check does it at its next run, then lifts
  this drain where the node is healthy, or sets ``reset-failed``.
- ``cf:repair:reset-failed gpu3 0000:5d:00 <why>``: the check could not reset it (nvidia-smi refused, a process holds
  the GPU); the loop counts the attempt and takes the next step.
- ``cf:repair:reboot xid79 (attempt 1 of 2)``: the reason of a reboot the loop asked for (``scontrol reboot``,
  no ASAP, no next state), " : reboot issued" added by Slurm at its issue, which Slurm keeps when the node registers
  again: the node's health check owns it at its first check once the node has registered (health/program.py's
  gate), and lifts it where the node is healthy, or drains over it with its own reason. An admin's reason set over
  it meanwhile is theirs, and stays.
- ``cf:repair:quarantined <fault> <attempts>``: the node's attempts ran out (or an action failed past its bound);
  nothing automatic touches it until an admin lifts the drain.

Pure and the standard library only (shipped in the health program and the repair loop).
"""

from __future__ import annotations

from dataclasses import dataclass

from .drains import Drain, parse_reason

REPAIR = "repair"
RESET = "reset"
RESET_FAILED = "reset-failed"
REBOOT = "reboot"
QUARANTINED = "quarantined"


@dataclass(frozen=True, slots=True)
class ResetAsked:
    """A reset the loop asked of the node's health check: the GPU by its name and bus."""

    gpu: str      # gpu3: the inventory's index, as the health check names GPUs
    bus: str      # 0000:5d:00, as the health check's reasons print it
    detail: str   # the rest of the reason: the fault and the attempt


def attempt(number: int, of: int) -> str:
    return f"(attempt {number} of {of})"


def reset_drain(gpu: str, bus: str, fault: str, number: int, of: int) -> Drain:
    return Drain(REPAIR, RESET, f"{gpu} {bus} {fault} {attempt(number, of)}")


def reset_failed_drain(gpu: str, bus: str, why: str) -> Drain:
    return Drain(REPAIR, RESET_FAILED, f"{gpu} {bus} {' '.join(why.split())}")


def reboot_drain(fault: str, number: int, of: int) -> Drain:
    return Drain(REPAIR, REBOOT, f"{fault} {attempt(number, of)}")


def quarantine_drain(fault: str, attempts: int) -> Drain:
    return Drain(REPAIR, QUARANTINED, f"{fault} {attempts}")


def reboot_asked(reason: str) -> bool:
    """Whether a reason is the loop's reboot's (reboot_drain)."""
    drain = parse_reason(reason)
    return drain is not None and drain.cause == REPAIR and drain.code == REBOOT


def reset_asked(reason: str) -> ResetAsked | None:
    """The reset a node's reason asks for, or None where it asks for none (any other reason, a reset-failed one)."""
    drain = parse_reason(reason)
    if drain is None or drain.cause != REPAIR or drain.code != RESET:
        return None
    gpu, _, rest = drain.detail.partition(" ")
    bus, _, detail = rest.partition(" ")
    if not gpu.startswith("gpu") or not gpu[3:].isdigit() or not bus:
        return None
    return ResetAsked(gpu, bus, detail)
