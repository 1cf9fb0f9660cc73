"""The kernel's log, read past a cursor per source: the Xid events a check counts once, even when it is killed
between reading them and acting on them (the cursor moves only once what was read has been acted on: program.py).

The sources are the kernel's own log (/dev/kmsg) and the inventory's extra one where set (a test cluster's file of
records in /dev/kmsg's format); a file that anyone but root could have written is never read, as a user could write
an Xid into it."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from . import xid
from .expect import Expectations

KMSG = "/dev/kmsg"
KERNEL_BOOT_ID = "/proc/sys/kernel/random/boot_id"


def kernel_log(path: str = KMSG, limit: int = 1_000_000) -> list[str]:
    """The first line of every record /dev/kmsg holds now, oldest first; reading stops at the end instead of
    waiting for the next record. Records overwritten while reading are skipped (the kernel says EPIPE)."""
    lines: list[str] = []
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while len(lines) < limit:
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:
                break
            except BrokenPipeError:
                continue
            if not record:
                break
            lines.append(record.decode("utf-8", "replace").split("\n", 1)[0])
    finally:
        os.close(fd)
    return lines


def root_only(path: str) -> bool:
    """A file only root can have written: root's, and writable by no one else."""
    info = os.stat(path)
    return info.st_uid == 0 and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def boot_id(expect: Expectations) -> str:
    """This boot's id: the kernel's, or the test cluster's file standing in for it (expect.boot_id_file) where it
    is there and root's alone; the program's own tests name another file (CLUSTERFORGE_HEALTH_BOOT_ID)."""
    path = os.environ.get("CLUSTERFORGE_HEALTH_BOOT_ID", KERNEL_BOOT_ID)
    stand_in = expect.boot_id_file
    if stand_in and os.path.isfile(stand_in) and root_only(stand_in):
        path = stand_in
    with open(path, encoding="utf-8", errors="replace") as file:
        return file.read().strip()


@dataclass
class XidRead:
    events: list[xid.XidEvent]
    cursors: dict[str, str]    # source -> the cursor once these events are counted
    notes: list[str]


def kernel_source() -> str:
    """The kernel's log: /dev/kmsg, or for the program's own tests a root-owned file of records in its format, so
    that what the test machine's kernel happened to log never decides a test."""
    return os.environ.get("CLUSTERFORGE_HEALTH_KMSG", KMSG)


def read_xids(expect: Expectations, saved: dict[str, str], boot: str) -> XidRead:
    """The Xid events past each source's cursor: the kernel's log, then the inventory's extra source where set."""
    read = XidRead([], dict(saved), [])
    kernel = kernel_source()
    sources = [kernel] + ([expect.kernel_log_extra] if expect.kernel_log_extra else [])
    for source in sources:
        try:
            device = stat.S_ISCHR(os.stat(source).st_mode)
            if not device and not root_only(source):
                read.notes.append(f"{source} ignored: not root's alone")
                continue
            lines = kernel_log(source) if device else _file_lines(source)
        except OSError as error:
            read.notes.append(f"{source} unreadable: {error.strerror}")
            continue
        cursor = xid.Cursor.parse(saved.get(source, ""))
        after = cursor.after(boot) if cursor is not None else -1
        events = xid.xid_events(lines, after)
        last = max((seq for seq, _ in xid.kernel_records(lines)), default=after)
        read.events += events
        read.cursors[source] = str(xid.advance(cursor, boot, events, last))
    return read


def _file_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8", errors="replace") as file:
        return file.read().splitlines()
