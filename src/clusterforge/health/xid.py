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

# NVIDIA's Xid catalog ("Analyzing Xid Errors with the Xid Catalog"): every Xid it says applies to H100, with its
# mnemonic and the class its immediate action gives: RESTART_APP and IGNORE are recorded (so is WORKFLOW_XID_45, a
# cleanup whose companion Xid decides, and UPDATE_SWFW, a vGPU's); RESET_GPU, WORKFLOW_XID_48 (a double-bit ECC error:
# reset or reboot) and WORKFLOW_NVLINK_ERR drain until the GPU is reset; RESTART_BM, CHECK_MECHANICALS, RESTART_VM and
# the Xids with no action listed drain until a reboot; Xid 154 is read by the recovery action it names. The catalog
# has no H200 column: H200 nodes are held to the H100 one. An Xid missing here drains until a reboot.
XIDS: dict[int, XidClass] = {
    8: XidClass("ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", RECORD, "GPU stopped processing, the application's fault"),
    11: XidClass("ROBUST_CHANNEL_GR_ERROR_MISSING_HW", RECORD,
                  "invalid or corrupted push buffer stream, the application's fault"),
    13: XidClass("ROBUST_CHANNEL_GR_EXCEPTION", RECORD, "graphics engine exception, the application's fault"),
    14: XidClass("ROBUST_CHANNEL_FAKE_ERROR", RECORD, "an injected test error"),
    25: XidClass("ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", RECORD,
                  "invalid or illegal push buffer stream, the application's fault"),
    31: XidClass("ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", RECORD, "GPU memory page fault, the application's"),
    32: XidClass("ROBUST_CHANNEL_PBDMA_ERROR", RECORD,
                  "invalid or corrupted push buffer stream, the application's fault"),
    37: XidClass("ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD", RECORD, "driver firmware error: nothing to act on"),
    38: XidClass("ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", RECORD, "driver firmware error: nothing to act on"),
    39: XidClass("ROBUST_CHANNEL_CE0_ERROR", RECORD, "copy engine exception, the application's fault"),
    40: XidClass("ROBUST_CHANNEL_CE1_ERROR", RECORD, "copy engine exception, the application's fault"),
    41: XidClass("ROBUST_CHANNEL_CE2_ERROR", RECORD, "copy engine exception, the application's fault"),
    43: XidClass("ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", RECORD, "the application stopped; the GPU stays healthy"),
    44: XidClass("ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", RECORD,
                  "graphics engine fault during context switch: nothing to act on"),
    45: XidClass("ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", RECORD, "preemptive cleanup after a kill or another Xid"),
    46: XidClass("ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", RESET, "GPU stopped processing: reset the GPU"),
    48: XidClass("ROBUST_CHANNEL_GPU_ECC_DBE", RESET, "double-bit ECC error: reset the GPU or reboot"),
    54: XidClass("SILENT_RUNNING_PWR_REDUCED_CLOCKING", REBOOT,
                  "auxiliary power is not connected to the GPU board: check the board's power cabling, then reboot"),
    60: XidClass("ROBUST_CHANNEL_SEC2_ERROR", RECORD, "video processor exception, the application's fault"),
    62: XidClass("PMU_HALT_ERROR", RESET, "internal micro-controller halt: reset the GPU"),
    63: XidClass("INFOROM_DRAM_RETIREMENT_EVENT", RECORD, "a row marked for remapping (pending rows are checked)"),
    64: XidClass("INFOROM_DRAM_RETIREMENT_FAILURE", RESET, "row remapping failed: reset the GPU, RMA if repeated"),
    66: XidClass("ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", RECORD, "illegal access by driver: nothing to act on"),
    67: XidClass("ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", RECORD, "illegal access by driver: nothing to act on"),
    68: XidClass("ROBUST_CHANNEL_NVDEC0_ERROR", RECORD, "video decoder exception, the application's"),
    69: XidClass("ROBUST_CHANNEL_GR_CLASS_ERROR", RECORD, "graphics engine class error, the application's"),
    70: XidClass("ROBUST_CHANNEL_CE3_ERROR", RECORD, "CE3: Unknown Error, the application's fault"),
    71: XidClass("ROBUST_CHANNEL_CE4_ERROR", RECORD, "CE4: Unknown Error, the application's fault"),
    72: XidClass("ROBUST_CHANNEL_CE5_ERROR", RECORD, "CE5: Unknown Error, the application's fault"),
    74: XidClass("NVLINK_ERROR", RESET, "NVLink error: reset the GPU or reboot"),
    75: XidClass("ROBUST_CHANNEL_CE6_ERROR", RECORD, "CE6: Unknown Error, the application's fault"),
    76: XidClass("ROBUST_CHANNEL_CE7_ERROR", RECORD, "CE7: Unknown Error, the application's fault"),
    77: XidClass("ROBUST_CHANNEL_CE8_ERROR", RECORD, "CE8: Unknown Error, the application's fault"),
    78: XidClass("VGPU_START_ERROR", RECORD, "vGPU start error: a vGPU's, not bare metal"),
    79: XidClass("ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", REBOOT, "the GPU fell off the bus: reboot"),
    80: XidClass("PBDMA_PUSHBUFFER_CRC_MISMATCH", RECORD, "corrupted data sent to GPU, the application's fault"),
    82: XidClass("ROBUST_CHANNEL_NVJPG0_ERROR", RECORD, "NVJPG0 Error, the application's fault"),
    83: XidClass("ROBUST_CHANNEL_NVDEC1_ERROR", RECORD, "NVDEC1 Error, the application's fault"),
    84: XidClass("ROBUST_CHANNEL_NVDEC2_ERROR", RECORD, "NVDEC2 Error, the application's fault"),
    85: XidClass("ROBUST_CHANNEL_CE9_ERROR", RECORD, "CE9: Unknown Error, the application's fault"),
    86: XidClass("ROBUST_CHANNEL_OFA0_ERROR", RECORD, "OFA Exception, the application's fault"),
    88: XidClass("ROBUST_CHANNEL_NVDEC3_ERROR", RECORD, "NVDEC3 Error, the application's fault"),
    89: XidClass("ROBUST_CHANNEL_NVDEC4_ERROR", RECORD, "NVDEC4 Error, the application's fault"),
    92: XidClass("EXCESSIVE_SBE_INTERRUPTS", RECORD, "a high single-bit ECC error rate"),
    94: XidClass("ROBUST_CHANNEL_CONTAINED_ERROR", RECORD, "contained memory error, one application affected"),
    95: XidClass("ROBUST_CHANNEL_UNCONTAINED_ERROR", RESET, "uncontained memory error: reset the GPU"),
    96: XidClass("ROBUST_CHANNEL_NVDEC5_ERROR", RECORD, "NVDEC5 Error, the application's fault"),
    97: XidClass("ROBUST_CHANNEL_NVDEC6_ERROR", RECORD, "NVDEC6 Error, the application's fault"),
    98: XidClass("ROBUST_CHANNEL_NVDEC7_ERROR", RECORD, "NVDEC7 Error, the application's fault"),
    99: XidClass("ROBUST_CHANNEL_NVJPG1_ERROR", RECORD, "NVJPG1 Error, the application's fault"),
    100: XidClass("ROBUST_CHANNEL_NVJPG2_ERROR", RECORD, "NVJPG2 Error, the application's fault"),
    101: XidClass("ROBUST_CHANNEL_NVJPG3_ERROR", RECORD, "NVJPG3 Error, the application's fault"),
    102: XidClass("ROBUST_CHANNEL_NVJPG4_ERROR", RECORD, "NVJPG4 Error, the application's fault"),
    103: XidClass("ROBUST_CHANNEL_NVJPG5_ERROR", RECORD, "NVJPG5 Error, the application's fault"),
    104: XidClass("ROBUST_CHANNEL_NVJPG6_ERROR", RECORD, "NVJPG6 Error, the application's fault"),
    105: XidClass("ROBUST_CHANNEL_NVJPG7_ERROR", RECORD, "NVJPG7 Error, the application's fault"),
    106: XidClass("SMBPBI_TEST_MESSAGE", RECORD, "SMBPBI Test Message: nothing to act on"),
    107: XidClass("SMBPBI_TEST_MESSAGE_SILENT", RECORD, "SMBPBI Test Message Silent: nothing to act on"),
    108: XidClass("NVLINK_REMOTE_TRANSLATION_ERROR", RECORD, "unused: nothing to act on"),
    109: XidClass("ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", RESET, "context switch timeout: reset the GPU"),
    110: XidClass("SEC_FAULT_ERROR", RESET, "security fault: reset the GPU"),
    119: XidClass("GSP_RPC_TIMEOUT", RESET, "GSP RPC timeout: reset the GPU or power-cycle"),
    120: XidClass("GSP_ERROR", RESET, "GSP error: reset the GPU or reboot"),
    136: XidClass("ALI_TRAINING_FAIL", RESET, "link training failed: reset the GPU"),
    137: XidClass("NVLINK_PRIV_ERR", RECORD, "NVLink Privilege Error: nothing to act on"),
    140: XidClass("UNRECOVERABLE_ECC_ERROR_ESCAPE", RESET, "an ECC error that could not be remapped: reset"),
    141: XidClass("ROBUST_CHANNEL_FAST_PATH_ERROR", RECORD, "CUDA Fast Path Error: nothing to act on"),
    143: XidClass("GPU_INIT_ERROR", RESET, "GPU initialisation error: reset the GPU or reboot"),
    151: XidClass("ROBUST_CHANNEL_KEY_ROTATION_ERROR", REBOOT, "key rotation error (confidential computing): reboot"),
    154: XidClass("GPU_RECOVERY_ACTION_CHANGED", REBOOT, "the driver asks for a recovery action"),
    156: XidClass("RESOURCE_RETIREMENT_EVENT", RESET, "resource retirement: reset the GPU"),
    157: XidClass("RESOURCE_RETIREMENT_FAILURE", RECORD, "resource retirement failure: nothing to act on"),
    158: XidClass("GPU_FATAL_TIMEOUT", RESET, "GPU fatal timeout: reset the GPU"),
    167: XidClass("PCIE_FATAL_TIMEOUT", REBOOT, "PCIe fatal timeout: no action in the catalog: reboot"),
    168: XidClass("REDUCED_GPU_MEMORY_CAPACITY", REBOOT, "errors found in WPR: no action in the catalog: reboot"),
    169: XidClass("SEC2_HALT_ERROR", REBOOT, "internal micro-controller halt: no action in the catalog: reboot"),
    171: XidClass("UNCORRECTABLE_DRAM_ERROR", REBOOT,
                  "uncorrectable DRAM error (beside Xid 48): no action in the catalog: reboot"),
    172: XidClass("UNCORRECTABLE_SRAM_ERROR", REBOOT,
                  "uncorrectable SRAM error (beside Xid 48): no action in the catalog: reboot"),
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
# summary of what the other Xids of this event need, NVIDIA's catalog says: the action it names is the authority. Read
# by its code (NVML's nvmlDeviceGpuRecoveryAction_t), since newer drivers label the same codes otherwise ("0x2 (OS
# Reboot)"); a code not known here drains until a reboot.
_RECOVERY = re.compile(r"recovery action changed from 0x[0-9a-fA-F]+ \([^)]*\) to 0x(?P<code>[0-9a-fA-F]+)"
                       r"(?: \((?P<to>[^)]*)\))?")
RECOVERY_ACTIONS: dict[int, Action] = {
    0x0: RECORD,   # None
    0x1: RESET,    # GPU Reset Required
    0x2: REBOOT,   # Node Reboot Required
    0x3: RESET,    # Drain P2P
    0x4: RESET,    # Drain and Reset
    0x6: RESET,    # Bus Reset
    0x7: REBOOT,   # System Reboot
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
        code = int(named["code"], 16) if named else None
        to = (named["to"] or f"0x{code:x}").strip() if named else "not read"
        return XidClass(found.mnemonic, RECOVERY_ACTIONS.get(code, REBOOT), f"recovery action: {to}")
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
