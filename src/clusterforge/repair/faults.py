"""What a node's drain says the loop may repair: the health check's drain for a hardware fault, read into its class
(reset: a GPU reset cures it, NVIDIA says; reboot: only a reboot does) and the GPU it names. Any other drain is not
the loop's to touch: an admin's, Slurm's own, clusterforge's other causes (a cable, a mount, a daemon, the hardware
the inventory says, a site's probe, the gate's failed test) wait for a person (docs/operations/repair.md).

The class of an Xid is the health check's own (health/xid.py, with the inventory's overrides), so both sides read a
fault the same way. Xid 154 names its recovery action in its message, which the drain's reason keeps only in words:
read as a reboot, which cures what a reset cures.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..health import xid
from ..slurm.drains import parse_reason
from .plan import REBOOT, RESET

# The health check's drains of the GPU that are not Xids, and what cures them (NVIDIA's GPU debug guidelines): a GPU
# missing from nvidia-smi has fallen off the bus, or too few are listed (a reboot); a row remap pending waits for a
# GPU reset; an NVSwitch fabric not completed after the fabric manager started (a reboot). A failed remap is an RMA,
# another model a wrong inventory: neither is repaired.
GPU_CODES = {"missing": REBOOT, "count": REBOOT, "remap-pending": RESET, "fabric": REBOOT}
HEALTH_GPU = "gpu"


@dataclass(frozen=True, slots=True)
class Fault:
    reason: str        # the drain's reason, whole
    code: str          # xid79, missing, remap-pending
    klass: str         # RESET or REBOOT
    gpu: str = ""      # gpu3, where the reason names it
    bus: str = ""      # 0000:5d:00, where the reason names it

    @property
    def resettable(self) -> bool:
        """A reset can be asked for: the class says a reset cures it, and the reason names the GPU and its bus."""
        return self.klass == RESET and bool(self.gpu) and bool(self.bus)


def _gpu_and_bus(detail: str) -> tuple[str, str]:
    words = detail.split()
    gpu = words[0] if words and words[0].startswith("gpu") and words[0][3:].isdigit() else ""
    rest = words[1:] if gpu else words
    bus = rest[0] if rest and rest[0].count(":") == 2 else ""
    return gpu, bus


def fault_of(reason: str, overrides: dict[int, str] | None = None) -> Fault | None:
    """The fault a drain's reason says, where the loop may repair it; None for any other reason."""
    drain = parse_reason(reason)
    if drain is None or drain.cause != HEALTH_GPU:
        return None
    gpu, bus = _gpu_and_bus(drain.detail)
    if drain.code.startswith("xid") and drain.code[3:].isdigit():
        number = int(drain.code[3:])
        kind = xid.classify(number, overrides)
        if not kind.drains:
            return None
        klass = REBOOT if number == xid.RECOVERY_XID and not (overrides and number in overrides) else kind.action
        return Fault(reason, drain.code, klass, gpu, bus)
    klass = GPU_CODES.get(drain.code)
    return Fault(reason, drain.code, klass, gpu, bus) if klass else None
