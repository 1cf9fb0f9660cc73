"""The HCAs' ports as the kernel shows them in sysfs, ``/sys/class/infiniband/<hca>/ports/<n>/``: the link layer,
the rate (``400 Gb/sec (4X NDR)``) and the counters (``counters/``, ``hw_counters/``). The one reader of them, for
the check's link health (links.py, probes.infiniband) and for the evidence before a reset or a reboot (evidence.py).

A test cluster's machines have no HCA. There the inventory's stand-in (Health.infiniband_sysfs), a directory laid out
as sysfs, is read instead, where it exists. A counter a user can touch must never drain a node, so the stand-in is
read only where root alone could have written it: no link anywhere in it; it and everything in it root's and writable
by no one else; each directory above it the same, or root's and sticky (/tmp: no one else may replace root's entry).
Where it is not, the kernel's sysfs is read, and a note says why. The kernel's own sysfs is root's, and links each HCA
to its device: read as it is. The program's own tests name another root (CLUSTERFORGE_HEALTH_SYS_INFINIBAND).
"""

from __future__ import annotations

import os
import re
import stat
import threading
from collections.abc import Collection
from dataclasses import dataclass, field

from .expect import Expectations
from .kernel import root_only

SYS_INFINIBAND = "/sys/class/infiniband"
KINDS = ("counters", "hw_counters")


@dataclass(frozen=True, slots=True)
class Sysfs:
    path: str
    stand_in: bool          # the test cluster's: every entry checked as it is read
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Port:
    hca: str
    port: int
    link_layer: str         # "InfiniBand", "Ethernet"; "" where unreadable
    rate: str               # "400 Gb/sec (4X NDR)"; "" where unreadable
    values: dict[str, str] = field(default_factory=dict)   # "<kind>/<name>" -> the file's text, or "unreadable: ..."

    @property
    def key(self) -> str:
        return f"{self.hca}/{self.port}"

    def counter(self, name: str) -> int | None:
        value = self.values.get(f"counters/{name}", "")
        return int(value) if value.isdigit() else None


def where(expect: Expectations) -> Sysfs:
    """The sysfs to read: the test cluster's stand-in where it is there and root's alone all the way, else the
    kernel's."""
    kernel = os.environ.get("CLUSTERFORGE_HEALTH_SYS_INFINIBAND", SYS_INFINIBAND)
    stand_in = expect.infiniband_sysfs
    if not stand_in or not os.path.lexists(stand_in):
        return Sysfs(kernel, False)
    if _roots_all_the_way(stand_in):
        return Sysfs(stand_in, True)
    return Sysfs(kernel, False, (f"{stand_in} ignored: not root's alone all the way down, or a link",))


def _roots_all_the_way(path: str) -> bool:
    path = os.path.abspath(path)
    above = []
    head = os.path.dirname(path)
    while True:
        above.append(head)
        if head == os.path.dirname(head):
            break
        head = os.path.dirname(head)
    return _root_only(path) and all(_root_only(p) or _sticky_root(p) for p in above)


def _root_only(path: str) -> bool:
    try:
        return not os.path.islink(path) and root_only(path)
    except OSError:
        return False


def _sticky_root(path: str) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == 0 and bool(info.st_mode & stat.S_ISVTX)


def _trusted(sysfs: Sysfs, path: str) -> bool:
    return not sysfs.stand_in or _root_only(path)


def _read(sysfs: Sysfs, path: str) -> str:
    """What the file holds, stripped; ``unreadable: <why>`` where it cannot be read, or may not (the stand-in's)."""
    if not _trusted(sysfs, path):
        return "unreadable: not root's alone"
    try:
        fd = os.open(path, os.O_RDONLY | (os.O_NOFOLLOW if sysfs.stand_in else 0))
        with os.fdopen(fd, encoding="ascii", errors="replace") as file:
            return file.read().strip()
    except OSError as error:
        return f"unreadable: {error.strerror}"


def _listing(sysfs: Sysfs, path: str) -> list[str]:
    if not _trusted(sysfs, path):
        return []
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def ports(sysfs: Sysfs, hcas: Collection[str] = (), counters: Collection[str] | None = None) -> list[Port]:
    """Every port of ``hcas`` (of every HCA where none is given), with those of the ``counters`` (names under
    counters/) it has, or with every counter of both kinds where None."""
    found = []
    for hca in _listing(sysfs, sysfs.path):
        if (hcas and hca not in hcas) or not _trusted(sysfs, os.path.join(sysfs.path, hca)):
            continue
        base = os.path.join(sysfs.path, hca, "ports")
        for number in _listing(sysfs, base):
            directory = os.path.join(base, number)
            if not number.isdigit() or not _trusted(sysfs, directory):
                continue
            kinds = KINDS if counters is None else ("counters",)
            names = [f"{kind}/{name}" for kind in kinds for name in _listing(sysfs, os.path.join(directory, kind))
                     if counters is None or name in counters]
            link_layer, rate = (_read(sysfs, os.path.join(directory, name)) for name in ("link_layer", "rate"))
            found.append(Port(hca, int(number), "" if link_layer.startswith("unreadable") else link_layer,
                              "" if rate.startswith("unreadable") else rate,
                              {name: _read(sysfs, os.path.join(directory, name)) for name in names}))
    return found


def bounded(sysfs: Sysfs, timeout_s: float, hcas: Collection[str] = (), counters: Collection[str] | None = None
            ) -> list[Port] | None:
    """ports(), or None where it has not answered within ``timeout_s``: each counter read is a command to the HCA's
    firmware, which a wedged HCA leaves unanswered for minutes. In a thread of its own that nothing waits for."""
    found: list[list[Port]] = []
    reader = threading.Thread(target=lambda: found.append(ports(sysfs, hcas, counters)), daemon=True)
    reader.start()
    reader.join(timeout_s)
    return found[0] if found else None


def width(sysfs: Sysfs, hca: str, port: int) -> str:
    """The port's width and speed as its rate names them (``4X NDR``), or "" where it says none."""
    parts = (hca, "ports", str(port))
    if not all(_trusted(sysfs, os.path.join(sysfs.path, *parts[:i])) for i in range(1, len(parts) + 1)):
        return ""
    found = re.search(r"\(([^()]+)\)", _read(sysfs, os.path.join(sysfs.path, *parts, "rate")))
    return found.group(1).strip() if found else ""
