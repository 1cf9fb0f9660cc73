"""NVIDIA Xid events from the kernel's own log, and what each means for the node: drain it, or only record it.

Read from /dev/kmsg records (``<prefix>,<seq>,<usec>,<flags>;<message>``), never from text a user can write: the
kernel refuses facility 0 (LOG_KERN) to anything written from user space, so only records whose prefix is below 8
count (Linux, Documentation/ABI/testing/dev-kmsg), and of those only the ones whose message starts with the
driver's ``NVRM: Xid (`` (a kernel record may quote a user's text further on). The sequence number is the cursor:
a record at or before the cursor was counted by an earlier check, and a new boot (another boot id) starts the count
again.

The classes follow NVIDIA's Xid catalog ("Analyzing Xid Errors with the Xid Catalog", its H100 column and the
immediate action of each Xid): a reset, a bare-metal restart or a reboot is a hardware fault, and the node drains;
an application's fault (RESTART_APP) or an event NVIDIA says to ignore is recorded and never drains. Xids absent
from the table drain: an unknown error on a GPU is not one to schedule a week-long job on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from .parse import Gpu

Action = Literal["record", "reset", "reboot"]
# What the inventory may say of an Xid: an action, or "drain" (before the three actions: until a reboot).
Override = Literal["record", "reset", "reboot", "drain"]


@dataclass(frozen=True, slots=True)
class XidClass:
    mnemonic: str  # nverror.h's name, "" where the catalog alone lists the Xid
    action: Action
    why: str

    @property
    def drains(self) -> bool:
        return self.action != RECORD


RECORD: Action = "record"   # the application's fault, or nothing to act on: recorded, never drains
RESET: Action = "reset"     # drains until the GPU is reset (or the node reboots)
REBOOT: Action = "reboot"   # drains until the node reboots

# NVIDIA's Xid catalog, the Xids it lists for H100, with the mnemonics of nverror.h (open-gpu-kernel-modules)
# where that file names the Xid ("" where only the catalog does).
XIDS: dict[int, XidClass] = {
    13: XidClass("ROBUST_CHANNEL_GR_EXCEPTION", RECORD, "graphics engine exception, the application's fault"),
    14: XidClass("ROBUST_CHANNEL_FAKE_ERROR", RECORD, "an injected test error"),
    31: XidClass("ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", RECORD, "GPU memory page fault, the application's"),
    43: XidClass("ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", RECORD, "the application stopped; the GPU stays healthy"),
    45: XidClass("ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", RECORD, "preemptive cleanup after a kill or another Xid"),
    46: XidClass("", RESET, "GPU stopped processing: reset the GPU"),
    48: XidClass("ROBUST_CHANNEL_GPU_ECC_DBE", RESET, "double-bit ECC error: reset the GPU or reboot"),
    61: XidClass("PMU_BREAKPOINT", REBOOT, "internal micro-controller breakpoint: contact support"),
    62: XidClass("PMU_HALT_ERROR", RESET, "internal micro-controller halt: reset the GPU"),
    63: XidClass("INFOROM_DRAM_RETIREMENT_EVENT", RECORD, "a row marked for remapping (pending rows are checked)"),
    64: XidClass("INFOROM_DRAM_RETIREMENT_FAILURE", RESET, "row remapping failed: reset the GPU, RMA if repeated"),
    68: XidClass("ROBUST_CHANNEL_NVDEC0_ERROR", RECORD, "video decoder exception, the application's"),
    69: XidClass("ROBUST_CHANNEL_GR_CLASS_ERROR", RECORD, "graphics engine class error, the application's"),
    74: XidClass("NVLINK_ERROR", RESET, "NVLink error: reset the GPU or reboot"),
    79: XidClass("ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", REBOOT, "the GPU fell off the bus: reboot"),
    92: XidClass("EXCESSIVE_SBE_INTERRUPTS", RECORD, "a high single-bit ECC error rate"),
    94: XidClass("ROBUST_CHANNEL_CONTAINED_ERROR", RECORD, "contained memory error, one application affected"),
    95: XidClass("ROBUST_CHANNEL_UNCONTAINED_ERROR", RESET, "uncontained memory error: reset the GPU"),
    109: XidClass("ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", RESET, "context switch timeout: reset the GPU"),
    110: XidClass("SEC_FAULT_ERROR", RESET, "security fault: reset the GPU"),
    119: XidClass("GSP_RPC_TIMEOUT", RESET, "GSP RPC timeout: reset the GPU or power-cycle"),
    120: XidClass("GSP_ERROR", RESET, "GSP error: reset the GPU or reboot"),
    136: XidClass("", RESET, "link training failed: reset the GPU"),
    140: XidClass("UNRECOVERABLE_ECC_ERROR_ESCAPE", RESET, "an ECC error that could not be remapped: reset"),
    143: XidClass("GPU_INIT_ERROR", RESET, "GPU initialisation error: reset the GPU or reboot"),
    154: XidClass("GPU_RECOVERY_ACTION_CHANGED", REBOOT, "the driver asks for a recovery action"),
    156: XidClass("", RESET, "resource retirement: reset the GPU"),
    158: XidClass("", RESET, "GPU fatal timeout: reset the GPU"),
}
RECOVERY_XID = 154
MAX_XID = 65535  # the driver's Xid numbers are small; any the catalog adds later may be named in the inventory
UNKNOWN = XidClass("UNKNOWN", REBOOT, "not in the Xid table: treated as a hardware fault")

# The driver's line, any release: "NVRM: Xid (PCI:0000:9b:00): 79, pid=..., GPU has fallen off the bus." (older
# drivers have no "PCI:" and no pid; MIG instances add " GPU-I:nn" inside the parentheses).
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})[^)]*\): "
                  r"(?P<xid>\d+),\s*(?P<rest>.*)")
_KMSG = re.compile(r"^(?P<prefix>\d+),(?P<seq>\d+),\d+,[^;]*;(?P<message>.*)$")
KERNEL_FACILITY_LIMIT = 8  # prefix = facility << 3 | level: below 8 is facility 0, the kernel's own


# Xid 154's message: "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)". The driver's
# summary of what the other Xids of this event need, NVIDIA's catalog says: the action it names is the authority.
_RECOVERY = re.compile(r"recovery action changed from 0x[0-9a-fA-F]+ \([^)]*\) to 0x[0-9a-fA-F]+ \((?P<to>[^)]*)\)")
RECOVERY_ACTIONS: dict[str, Action] = {
    "none": RECORD,
    "gpu reset required": RESET,
    "drain p2p": RESET,
    "drain and reset": RESET,
    "node reboot required": REBOOT,
}


def classify(xid: int, overrides: dict[int, str] | None = None, message: str = "") -> XidClass:
    """The class of an Xid: the inventory's where it says one, else NVIDIA's table; Xid 154 by the recovery action
    its ``message`` names (an action the table does not know, or none read, drains until a reboot)."""
    found = XIDS.get(xid, UNKNOWN)
    if overrides and xid in overrides:
        action: Action = REBOOT if overrides[xid] == "drain" else overrides[xid]  # type: ignore[assignment]
        return XidClass(found.mnemonic, action, f"{found.why} (the inventory says {overrides[xid]})")
    if xid == RECOVERY_XID:
        named = _RECOVERY.search(message)
        to = named["to"].strip() if named else ""
        action = RECOVERY_ACTIONS.get(to.lower(), REBOOT)
        return XidClass(found.mnemonic, action, f"recovery action: {to or 'not read'}")
    return found


def bus_id(text: str) -> str:
    """A PCI address as domain:bus:device, lower case, 4-digit domain, no function: what the Xid line carries
    (nvidia-smi's 00000000:9B:00.0 becomes 0000:9b:00)."""
    domain, bus, device = text.strip().lower().split(".")[0].split(":")
    return f"{int(domain, 16):04x}:{bus}:{device}"


@dataclass(frozen=True, slots=True)
class XidEvent:
    seq: int
    xid: int
    pci: str      # bus_id() form
    message: str  # the driver's text after the Xid number

    @property
    def kind(self) -> XidClass:
        return classify(self.xid, message=self.message)


def kernel_records(lines: Iterable[str]) -> Iterable[tuple[int, str]]:
    """(seq, message) of each /dev/kmsg record the kernel wrote itself; continuation lines and records written from
    user space (any other facility) are skipped."""
    for line in lines:
        match = _KMSG.match(line.rstrip("\n"))
        if match and int(match["prefix"]) < KERNEL_FACILITY_LIMIT:
            yield int(match["seq"]), match["message"]


def xid_events(lines: Iterable[str], after: int = -1) -> list[XidEvent]:
    """The Xid events among /dev/kmsg ``lines`` whose sequence number is past the cursor ``after``: records whose
    message is the driver's own, starting with its prefix. Never the pattern anywhere else in a kernel record: some
    of the kernel's own records quote text a user chose (its once-per-boot warning ``process '<path>' started with
    executable stack`` names a program any user can name like an Xid line)."""
    events = []
    for seq, message in kernel_records(lines):
        match = _XID.match(message)
        if seq > after and match:
            events.append(XidEvent(seq, int(match["xid"]), bus_id(match["pci"]), match["rest"].strip()))
    return events


@dataclass(frozen=True, slots=True)
class Cursor:
    """How far a check has read the kernel log: the boot it read and the last sequence number it counted."""

    boot_id: str
    seq: int

    @classmethod
    def parse(cls, text: str) -> Cursor | None:
        boot_id, _, seq = text.strip().partition(" ")
        return cls(boot_id, int(seq)) if boot_id and seq.isdigit() else None

    def __str__(self) -> str:
        return f"{self.boot_id} {self.seq}"

    def after(self, boot_id: str) -> int:
        """The sequence number to count from in the boot ``boot_id``: every record of a new boot is new."""
        return self.seq if boot_id == self.boot_id else -1


def advance(cursor: Cursor | None, boot_id: str, events: Iterable[XidEvent], last_seq: int) -> Cursor:
    """The cursor after reading up to ``last_seq`` (the last record read, an Xid or not) in boot ``boot_id``."""
    seqs = [e.seq for e in events]
    start = cursor.after(boot_id) if cursor is not None else -1
    return Cursor(boot_id, max([start, last_seq, *seqs]))


def gpu_named(event: XidEvent, gpus: Iterable[Gpu]) -> Gpu | None:
    """The GPU (as `nvidia-smi -q` lists it) whose bus the event names; None for a bus no listed GPU is on."""
    return next((gpu for gpu in gpus if bus_id(gpu.bus_id) == event.pci), None)
