"""What the node health program finds, compared with what the node should have: pure functions from what a probe
read (parsed by parse.py and xid.py) to findings. Each finding is a drain reason in clusterforge's format
(drains.py) and what it asks for: drain the node, or only be recorded."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from . import gpu_names
from ..slurm.drains import Drain
from .expect import Expectations
from .parse import Gpu, IbPort, NodeHardware
from .xid import XidEvent, bus_id, classify

Action = Literal["drain", "record"]
# The causes the health program drains for, and so the only ones it lifts: never the deploy's ("removed") nor an
# operation's to come.
CAUSES = ("gpu", "hw", "ib", "mount", "daemon", "site", "check", "job")
# Memory a GPU may hold with no process on it after a job: an idle H100 shows 1 MiB "Used" (the driver's own
# reservation is apart, "Reserved"); more is a context that outlived its process.
LEFTOVER_MIB = 256
REASON_MAX = 255  # slurmdbd keeps a node event's reason in a tinytext column


@dataclass(frozen=True, slots=True)
class Finding:
    drain: Drain
    action: Action = "drain"
    # A hardware fault the node keeps until it boots again, or until its GPU is reset (``until``): the event is over,
    # the GPU may still be broken. Any other finding clears when a later check no longer finds it.
    sticky: bool = False
    until: str = ""   # a sticky finding's end: "reboot", or "reset" (of the GPU on ``bus``, or a reboot)
    bus: str = ""     # the GPU's PCI bus (xid.bus_id form), where the finding is one GPU's
    # Holds a drain of its cause that is already there, but never sets one: a process the periodic check finds on
    # a GPU outside any job keeps a job boundary's drain, while an admin's tool on an idle node drains nothing.
    keeps_only: bool = False

    @property
    def reason(self) -> str:
        return self.drain.reason


def reason_of(findings: Sequence[Finding]) -> str:
    """The drain reason for the findings: the first (a sticky one before any other), and how many more."""
    ordered = sorted(findings, key=lambda f: not f.sticky)
    text = ordered[0].reason + (f" (+{len(ordered) - 1} more)" if len(ordered) > 1 else "")
    text = "".join(c if " " <= c <= "~" else "?" for c in text)
    return text[:REASON_MAX]


def _gpu_label(index: int | None, bus: str) -> str:
    return f"gpu{index} {bus}" if index is not None else bus


def inventory_index(gpu: Gpu, device_files: Sequence[str]) -> int | None:
    """The inventory's number of the GPU nvidia-smi lists: i where the i-th device file is /dev/nvidia<minor>."""
    for i, path in enumerate(device_files):
        m = re.search(r"(\d+)$", path)
        if m and gpu.minor is not None and int(m.group(1)) == gpu.minor:
            return i
    return None


def device_files(expect: Expectations, found: Mapping[str, str]) -> list[Finding]:
    findings = []
    for i, path in enumerate(expect.device_files):
        kind = found.get(path, "missing")
        if kind != "char":
            what = "missing" if kind == "missing" else "not a character device"
            findings.append(Finding(Drain("gpu", "missing", f"gpu{i} {path} {what}")))
    return findings


def gpus(expect: Expectations, found: Sequence[Gpu]) -> list[Finding]:
    """nvidia-smi's GPUs: count, model, pending or failed row remapping, and the NVSwitch fabric's state."""
    findings = []
    listed = {inventory_index(gpu, expect.device_files) for gpu in found}
    unseen = [i for i in range(expect.gpu_count) if i not in listed]
    for i in unseen:
        findings.append(Finding(Drain("gpu", "missing", f"gpu{i} {expect.device_files[i]} not seen by nvidia-smi "
                                                        f"({len(found)} of {expect.gpu_count} GPUs)")))
    if not unseen and len(found) != expect.gpu_count:
        findings.append(Finding(Drain("gpu", "count", f"nvidia-smi sees {len(found)} of {expect.gpu_count} GPUs")))
    for gpu in found:
        label = _gpu_label(inventory_index(gpu, expect.device_files), bus_id(gpu.bus_id))
        if expect.gpu_type and not gpu_names.matches(expect.gpu_type, gpu.name):
            findings.append(Finding(Drain("gpu", "model", f"{label} is a {gpu.name}, not {expect.gpu_type}")))
        if gpu.remap_failed:
            findings.append(Finding(Drain("gpu", "remap-failed", f"{label} row remapping failed: RMA candidate")))
        elif gpu.remap_pending:
            findings.append(Finding(Drain("gpu", "remap-pending", f"{label} a row remap waits for a GPU reset")))
        if expect.fabric_manager and gpu.fabric_state not in (None, "Completed"):
            findings.append(Finding(Drain("gpu", "fabric", f"{label} NVSwitch fabric {gpu.fabric_state}")))
    return findings


def xids(expect: Expectations, events: Iterable[XidEvent], found: Sequence[Gpu]) -> list[Finding]:
    """One finding per Xid event: a hardware one drains until its GPU is reset or the node reboots (its class says
    which), the application's is recorded."""
    findings = []
    by_bus = {bus_id(g.bus_id): g for g in found}
    for event in events:
        kind = classify(event.xid, expect.xid_actions, event.message)
        gpu = by_bus.get(event.pci)
        label = _gpu_label(inventory_index(gpu, expect.device_files) if gpu else None, event.pci)
        drain = Drain("gpu", f"xid{event.xid}", f"{label} {kind.why}")
        if kind.drains:
            findings.append(Finding(drain, sticky=True, until=kind.action, bus=event.pci))
        else:
            findings.append(Finding(drain, "record"))
    return findings


Owner = Callable[[int], str | None]


def _process_label(gpu: Gpu, expect: Expectations, what: str) -> str:
    return f"{_gpu_label(inventory_index(gpu, expect.device_files), bus_id(gpu.bus_id))} {what}"


def _job_gpus(expect: Expectations, found: Sequence[Gpu], job_gpus: Sequence[int] | None) -> list[Gpu]:
    """The GPUs of ``found`` that are the job's: its gres indices are the inventory's numbers (gres.conf lists
    the device files in that order); None: all of them (a job whose GPUs Slurm did not say)."""
    if job_gpus is None:
        return list(found)
    wanted = set(job_gpus)
    return [g for g in found if inventory_index(g, expect.device_files) in wanted]


def foreign(expect: Expectations, found: Sequence[Gpu], job_gpus: Sequence[int] | None) -> list[Finding]:
    """Before a job: a process on one of its GPUs, which Slurm gave it alone, is someone else's."""
    return [Finding(Drain("job", "foreign", _process_label(gpu, expect, f"busy: pid {p.pid} {p.name or '?'} "
                                                                         f"{p.used_mib} MiB")))
            for gpu in _job_gpus(expect, found, job_gpus) for p in gpu.processes if p.computes]


def leftover(expect: Expectations, found: Sequence[Gpu], job_gpus: Sequence[int] | None, owner: Owner,
             job: str | None) -> list[Finding]:
    """After a job (``job``), or between jobs (None): a process on a GPU that belongs to no job, or to the job that
    has ended, and memory held with no process at all. Between jobs it only keeps a drain already set."""
    findings = []
    for gpu in _job_gpus(expect, found, job_gpus):
        computing = [p for p in gpu.processes if p.computes]
        for p in computing:
            if owner(p.pid) in (None, job):
                findings.append(Finding(Drain("job", "leftover", _process_label(
                    gpu, expect, f"pid {p.pid} {p.name or '?'} {p.used_mib} MiB outlived its job")),
                    keeps_only=job is None))
        if not computing and (gpu.memory_used_mib or 0) > LEFTOVER_MIB:
            findings.append(Finding(Drain("job", "leftover", _process_label(
                gpu, expect, f"{gpu.memory_used_mib} MiB in use by no process")), keeps_only=job is None))
    return findings


def hardware(expect: Expectations, found: NodeHardware) -> list[Finding]:
    findings = []
    for what, want, have in (("sockets", expect.sockets, found.sockets),
                             ("cores per socket", expect.cores_per_socket, found.cores_per_socket),
                             ("threads per core", expect.threads_per_core, found.threads_per_core)):
        if want != have:
            findings.append(Finding(Drain("hw", what.replace(" ", "-"), f"slurmd -C finds {have} {what}, "
                                                                         f"the inventory says {want}")))
    if found.real_memory < expect.real_memory:
        findings.append(Finding(Drain("hw", "memory", f"{found.real_memory} MiB, below RealMemory "
                                                      f"{expect.real_memory}")))
    return findings


def infiniband(expect: Expectations, ports: Sequence[IbPort], width: Callable[[str, int], str] | None = None
               ) -> list[Finding]:
    """The declared HCAs (all InfiniBand ports where none is declared): present, Active and LinkUp, at the
    expected rate at least. Ethernet ports are not the compute fabric and are not judged. ``width``: a port's width
    and speed as sysfs names them (``2X NDR``; ibstat says neither), named in a rate finding: a lane down and a link
    trained at a lower speed both show as a lower rate, and call for different repairs."""
    ib = [p for p in ports if p.link_layer == "InfiniBand"]
    wanted = [(h.name, h.min_rate if h.min_rate is not None else expect.ib_rate) for h in expect.hcas] or \
        [(p.ca, expect.ib_rate) for p in ib]
    findings = []
    for ca, rate in dict.fromkeys(wanted):
        mine = [p for p in ib if p.ca == ca]
        if not mine:
            findings.append(Finding(Drain("ib", "missing", f"{ca} not found by ibstat")))
        for port in mine:
            if port.state != "Active" or port.physical_state != "LinkUp":
                findings.append(Finding(Drain("ib", "down", f"{ca} port {port.port} {port.state} "
                                                            f"{port.physical_state}")))
            elif rate is not None and (port.rate or 0) < rate:
                named = width(ca, port.port) if width is not None else ""
                findings.append(Finding(Drain("ib", "rate", f"{ca} port {port.port} at {port.rate} Gb/s"
                                                            f"{f' ({named})' if named else ''}, below {rate}")))
    return findings


def mount_points(mountinfo: str) -> set[str]:
    """The mount points of /proc/self/mountinfo (its fifth field, with the kernel's octal escapes undone)."""
    points = set()
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4:
            points.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return points


def mounts(expect: Expectations, mounted: set[str]) -> list[Finding]:
    return [Finding(Drain("mount", "", f"{path} not mounted")) for path in expect.mounts if path not in mounted]


def daemons(expect: Expectations, states: Mapping[str, str]) -> list[Finding]:
    return [Finding(Drain("daemon", "", f"{unit} {states.get(unit, 'unknown')}"))
            for unit in expect.units if states.get(unit) != "active"]


def probe_failed(probe: str, why: str) -> Finding:
    """A probe that could not read what it reads (a hang, a command missing or failing) is itself a finding: a
    node whose GPUs cannot be listed is not one to schedule on."""
    cause = {"gpus": "gpu", "xid": "gpu", "hardware": "hw", "infiniband": "ib", "mounts": "mount",
             "daemons": "daemon", "site": "site"}.get(probe, "check")
    return Finding(Drain(cause, "probe", f"{probe}: {why}"))


def site(name: str, rc: int, output: str) -> list[Finding]:
    """A site's probe: exit 0 is healthy; anything else drains, with its last line of output as the detail."""
    if rc == 0:
        return []
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    said = lines[-1] if lines else f"exit {rc}"
    return [Finding(Drain("site", re.sub(r"[^A-Za-z0-9_.-]", "_", name), said if rc != 124 else
                          "gave no answer in time"))]
