"""Xid events from /dev/kmsg records: the driver's line as several driver generations print it, only records the
kernel wrote itself, each counted once behind a cursor, the GPU named by its bus, and the class table."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.health.parse import nvidia_smi_query
from clusterforge.health.xid import (
    REBOOT,
    RECORD,
    RESET,
    UNKNOWN,
    XIDS,
    Cursor,
    advance,
    bus_id,
    classify,
    gpu_named,
    kernel_records,
    xid_events,
)

FIXTURES = Path(__file__).parents[1] / "check" / "fixtures"

# The driver's lines as published (../shared/reference/gpu-ops.md 2.1 names each source): 375.26 without a pid,
# a 5xx driver with pid '<unknown>', one with a numeric pid, a 6xx driver; the MIG form is the driver's format
# string (kernel_rc.c) filled in, as no published line was found.
LINES = {
    "375.26": ("NVRM: Xid (PCI:0000:03:00): 79, GPU has fallen off the bus.", 79, "0000:03:00"),
    "5xx unknown pid": ("NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp "
                        "Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address", 13, "0000:cb:00"),
    "5xx pid": ("NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu "
                "to activate.", 63, "0000:10:1c"),
    "6xx": ("NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.", 79, "0000:2b:00"),
    "MIG": ("NVRM: Xid (PCI:0000:9a:00 GPU-I:02): 94, pid=4242, name=python3, Contained: SM (0x1). RST: No, "
            "D-RST: No", 94, "0000:9a:00"),
    "no PCI prefix": ("NVRM: Xid (0000:01:00): 31, Ch 00000010, intr 10000000", 31, "0000:01:00"),
}


def kmsg(seq: int, message: str, prefix: int = 4) -> str:
    return f"{prefix},{seq},{seq * 1000},-;{message}"


@pytest.mark.parametrize("driver", LINES)
def test_the_driver_line_of_each_generation_is_read(driver):
    line, xid, pci = LINES[driver]
    [event] = xid_events([kmsg(7, line)])
    assert (event.seq, event.xid, event.pci) == (7, xid, pci)


def test_only_records_the_kernel_wrote_count():
    forged = "NVRM: Xid (PCI:0000:9a:00): 79, GPU has fallen off the bus."
    lines = [kmsg(1, forged, prefix=12),    # `logger`/echo > /dev/kmsg as root: user facility, warning
             kmsg(2, forged, prefix=14),    # user.info
             kmsg(3, forged, prefix=0x8c),  # local1
             " SUBSYSTEM=pci",              # a continuation line
             "not a record at all " + forged,
             kmsg(4, "nvidia-nvlink: Nvlink Core is being initialized", prefix=6),
             kmsg(5, forged, prefix=3)]
    assert [seq for seq, _ in kernel_records(lines)] == [4, 5]
    assert [e.seq for e in xid_events(lines)] == [5]


def test_a_kernel_record_that_quotes_a_users_text_is_no_xid():
    # The kernel's once-per-boot warning names the program a user ran, whatever its name: seen on a kernel 6.x with an
    # unprivileged user's program named like an Xid line (facility 0, level 4: the kernel's own record).
    forged = ("process '/home/mallory/NVRM: Xid (PCI:0000:9a:00): 79, GPU has fallen off the bus.' started with "
              "executable stack")
    lines = [kmsg(378, forged), kmsg(379, "x NVRM: Xid (PCI:0000:9a:00): 79, GPU has fallen off the bus.")]
    assert [seq for seq, _ in kernel_records(lines)] == [378, 379]
    assert xid_events(lines) == []


def test_an_event_is_counted_once_behind_the_cursor_and_a_new_boot_starts_again():
    lines = [kmsg(10, LINES["6xx"][0]), kmsg(11, "usb 1-1: new device"), kmsg(12, LINES["5xx pid"][0])]
    first = xid_events(lines)
    cursor = advance(None, "boot-a", first, last_seq=12)
    assert cursor == Cursor("boot-a", 12) and Cursor.parse(str(cursor)) == cursor
    assert xid_events(lines, after=cursor.after("boot-a")) == []
    lines.append(kmsg(13, LINES["375.26"][0]))
    assert [e.seq for e in xid_events(lines, after=cursor.after("boot-a"))] == [13]
    assert len(xid_events(lines, after=cursor.after("boot-b"))) == 3  # rebooted: sequence numbers start over
    assert advance(cursor, "boot-a", [], last_seq=11) == cursor         # never backwards
    assert Cursor.parse("garbage") is None and Cursor.parse("") is None


def test_the_event_names_the_gpu_on_its_bus():
    gpus = nvidia_smi_query((FIXTURES / "h100-sxm-x8.nvidia-smi-q.txt").read_text())  # a real DGX H100
    [event] = xid_events([kmsg(1, "NVRM: Xid (PCI:0000:9a:00): 79, GPU has fallen off the bus.")])
    gpu = gpu_named(event, gpus)
    assert gpu is not None and (gpu.index, gpu.bus_id) == (4, "00000000:9A:00.0")
    [elsewhere] = xid_events([kmsg(1, "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.")])
    assert gpu_named(elsewhere, gpus) is None
    assert bus_id("00000000:9A:00.0") == bus_id("0000:9a:00") == "0000:9a:00"


def test_hardware_xids_drain_and_the_applications_are_only_recorded():
    for xid in (48, 64, 74, 95, 119, 140):
        assert classify(xid).action == RESET, xid
    assert classify(79).action == REBOOT
    for xid in (13, 31, 43, 45, 63, 68, 69, 92, 94):
        assert classify(xid).action == RECORD, xid
    assert classify(9999) is UNKNOWN and UNKNOWN.action == REBOOT
    assert classify(13, {13: "reset"}).action == RESET and "the inventory says reset" in classify(13, {13: RESET}).why
    assert classify(13, {13: "drain"}).action == REBOOT  # before the three actions: until a reboot
    assert classify(9999, {9999: "record"}).action == RECORD  # any Xid the inventory names
    assert all(kind.why for kind in XIDS.values())


XID154 = "GPU recovery action changed from 0x{0:x} ({1}) to 0x{2:x} ({3})"


@pytest.mark.parametrize("to, action", [((0, "None"), RECORD), ((1, "GPU Reset Required"), RESET),
                                        ((2, "Node Reboot Required"), REBOOT), ((3, "Drain P2P"), RESET),
                                        ((4, "Drain and Reset"), RESET), ((9, "Something New"), REBOOT)])
def test_xid_154_is_read_by_the_recovery_action_it_names(to, action):
    line = f"NVRM: Xid (PCI:0000:9a:00): 154, pid=0, {XID154.format(2, 'Node Reboot Required', *to)}"
    [event] = xid_events([kmsg(1, line)])
    assert event.kind.action == action and to[1] in event.kind.why
    assert classify(154, message="GPU recovery action changed, unreadable").action == REBOOT


def test_xid_154_is_read_by_its_code_whatever_a_newer_driver_calls_it():
    for code, label, action in ((1, "PF FLR", RESET), (2, "OS Reboot", REBOOT), (0, "None", RECORD),
                                (0x1f, "Something Else", REBOOT)):
        kind = classify(154, message=f"GPU recovery action changed from 0x0 (None) to 0x{code:x} ({label})")
        assert (kind.action, kind.why) == (action, f"recovery action: {label}")


def test_the_table_follows_nvidias_catalog_for_h100():
    for xid in (8, 11, 25, 32, 39, 40, 41, 60, 70, 71, 72, 75, 76, 77, 82, 83, 96, 105, 37, 38, 106, 137, 141):
        assert classify(xid).action == RECORD, xid   # RESTART_APP or IGNORE: the application's, or nothing
    for xid in (46, 62, 64, 95, 109, 110, 119, 120, 136, 140, 143, 156, 158):
        assert classify(xid).action == RESET, xid    # RESET_GPU
    for xid in (79, 54, 167, 168, 169, 171, 172):
        assert classify(xid).action == REBOOT, xid


def test_a_real_kernel_log_is_read_whole_and_its_forged_xid_is_none():
    lines = (FIXTURES.parent.parent / "health" / "fixtures" / "kmsg-linux-6.18.txt").read_text().splitlines()
    records = list(kernel_records(lines))
    assert len(records) == len(lines) - sum(1 for line in lines if int(line.split(",", 1)[0]) >= 8)
    forged = [message for _, message in records if "started with executable stack" in message]
    assert forged and "NVRM: Xid (PCI:0000:9a:00): 79" in forged[0]  # the kernel's own record, a user's text in it
    assert xid_events(lines) == []
