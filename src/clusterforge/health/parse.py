"""Pure parsers of what the checks read on a node: `slurmd -C`, `nvidia-smi -q`, `nvidia-smi topo -m`, `ibstat`,
and the device-file listing. Each takes the command's text and returns plain records; nothing here connects."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..slurm.parse import ParseError, key_values

_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # nvidia-smi underlines the topo header on a terminal


@dataclass(frozen=True, slots=True)
class NodeHardware:
    """What slurmd finds on the machine, in slurm.conf's terms."""

    sockets: int
    cores_per_socket: int
    threads_per_core: int
    real_memory: int  # MiB

    @property
    def cpus(self) -> int:
        return self.sockets * self.cores_per_socket * self.threads_per_core


def slurmd_config(text: str) -> NodeHardware:
    """`slurmd -C`: ``NodeName=gpu01 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1
    RealMemory=7962``. Sockets are SocketsPerBoard x Boards, as slurm.conf's Sockets= counts them."""
    values = key_values(text)
    try:
        boards = int(values.get("Boards", "1"))
        return NodeHardware(sockets=boards * int(values["SocketsPerBoard"]),
                            cores_per_socket=int(values["CoresPerSocket"]),
                            threads_per_core=int(values["ThreadsPerCore"]),
                            real_memory=int(values["RealMemory"]))
    except (KeyError, ValueError):
        raise ParseError(f"not the output of slurmd -C: {text.strip()[:200]!r}") from None


@dataclass(frozen=True, slots=True)
class Gpu:
    """One GPU as nvidia-smi lists it; ``index`` is nvidia-smi's (and topo -m's) numbering, ``minor`` the N of its
    /dev/nvidiaN, which need not be the same."""

    index: int
    name: str
    minor: int | None
    bus_id: str
    # From the "Remapped Rows" section (None where the driver prints none or N/A): a remap waits for a GPU reset,
    # or one failed (an RMA candidate).
    remap_pending: bool | None = None
    remap_failed: bool | None = None
    # From the "Fabric" section of NVSwitch systems: "Completed" once the fabric manager has set the GPU up, None
    # where the driver prints no such section.
    fabric_state: str | None = None
    # The "Processes" section: what runs on the GPU now, and the framebuffer memory in use ("FB Memory Usage").
    processes: tuple[GpuProcess, ...] = ()
    memory_used_mib: int | None = None


@dataclass(frozen=True, slots=True)
class GpuProcess:
    pid: int
    kind: str        # nvidia-smi's Type: C (compute), G (graphics), C+G, M (MPS), ...
    name: str
    used_mib: int | None

    @property
    def computes(self) -> bool:
        """A CUDA context, which a job's GPU must not have left: anything but a display's graphics process."""
        return self.kind != "G"


def _mib(value: str | None) -> int | None:
    m = re.fullmatch(r"(\d+) MiB", value or "")
    return int(m.group(1)) if m else None


def _yes(value: str | None) -> bool | None:
    return {"yes": True, "no": False}.get((value or "").lower())


def _process(entry: dict[str, str]) -> GpuProcess:
    return GpuProcess(int(entry["Process ID"]), entry.get("Type", "?"), entry.get("Name", ""),
                      _mib(entry.get("Used GPU Memory")))


def nvidia_smi_query(text: str) -> list[Gpu]:
    """`nvidia-smi -q`: one ``GPU <bus id>`` block per GPU, in nvidia-smi's index order."""
    gpus: list[Gpu] = []
    block: dict[str, str] | None = None
    section = ""
    bus = ""
    processes: list[dict[str, str]] = []

    def close() -> None:
        if block is not None:
            minor = block.get("Minor Number", "N/A")
            fabric = block.get("Fabric/State")
            gpus.append(Gpu(len(gpus), block.get("Product Name", "?"), int(minor) if minor.isdigit() else None, bus,
                            _yes(block.get("Remapped Rows/Pending")),
                            _yes(block.get("Remapped Rows/Remapping Failure Occurred")),
                            fabric if fabric not in (None, "N/A", "Not Supported") else None,
                            tuple(_process(p) for p in processes if p.get("Process ID", "").isdigit()),
                            _mib(block.get("FB Memory Usage/Used"))))

    for line in text.splitlines():
        header = re.fullmatch(r"GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*", line)
        if header:
            close()
            block, bus, section, processes = {}, header.group(1), "", []
        elif block is not None and re.match(r"    \S", line):
            # The block's first level; a line without a value opens a section (PCI, Clocks...), whose keys repeat
            # some names and are kept apart as "<section>/<key>".
            key, colon, value = line.partition(":")
            if colon:
                block.setdefault(key.strip(), value.strip())
            section = "" if colon else key.strip()
        elif block is not None and section == "Processes" and re.match(r"        ", line) and ":" in line:
            # One entry per process, its "Process ID" line first and its Type, Name and memory indented below.
            key, _, value = (part.strip() for part in line.partition(":"))
            if key == "Process ID" or not processes:
                processes.append({})
            processes[-1].setdefault(key, value)
        elif block is not None and section and re.match(r"        \S", line) and ":" in line:
            key, _, value = line.partition(":")
            block.setdefault(f"{section}/{key.strip()}", value.strip())
    close()
    if not gpus and "NVSMI LOG" not in text:
        raise ParseError(f"not the output of nvidia-smi -q: {text.strip()[:200]!r}")
    return gpus


@dataclass(frozen=True, slots=True)
class GpuAffinity:
    index: int
    cpus: str
    numa: int | None  # None: the driver prints no NUMA Affinity column (or N/A)


def nvidia_smi_topology(text: str) -> list[GpuAffinity]:
    """`nvidia-smi topo -m`: the GPU rows' CPU and NUMA affinity columns, found by the header's names (the NIC
    columns before them vary per machine)."""
    lines = [_ANSI.sub("", line) for line in text.splitlines() if line.strip()]
    headers = [line for line in lines if line.startswith("\t") and "CPU Affinity" in line]
    if not headers:
        raise ParseError(f"not the output of nvidia-smi topo -m: {text.strip()[:200]!r}")
    columns = [c.strip() for c in headers[0].split("\t")]
    cpu_at = columns.index("CPU Affinity")
    numa_at = columns.index("NUMA Affinity") if "NUMA Affinity" in columns else None
    found = []
    for line in lines:
        row = re.match(r"GPU(\d+)\t", line)
        if not row:
            continue
        cells = [c.strip() for c in line.split("\t")]
        numa = cells[numa_at] if numa_at is not None and numa_at < len(cells) else ""
        found.append(GpuAffinity(int(row.group(1)), cells[cpu_at] if cpu_at < len(cells) else "",
                                 int(numa) if numa.isdigit() else None))
    return found


@dataclass(frozen=True, slots=True)
class IbPort:
    ca: str
    port: int
    state: str
    physical_state: str
    rate: int | None  # Gb/s
    link_layer: str


def ibstat(text: str) -> list[IbPort]:
    """`ibstat`: every port of every CA (``CA 'mlx5_0'`` ... ``Port 1:`` ... ``State: Active``)."""
    ports: list[IbPort] = []
    ca, port, fields = None, None, {}

    def close() -> None:
        if ca is not None and port is not None:
            rate = fields.get("Rate", "")
            ports.append(IbPort(ca, port, fields.get("State", "?"), fields.get("Physical state", "?"),
                                int(rate) if rate.isdigit() else None, fields.get("Link layer", "?")))

    for line in text.splitlines():
        stripped = line.strip()
        if m := re.fullmatch(r"CA '([^']+)'", stripped):
            close()
            ca, port, fields = m.group(1), None, {}
        elif m := re.fullmatch(r"Port (\d+):", stripped):
            close()
            port, fields = int(m.group(1)), {}
        elif port is not None and ":" in stripped:
            key, _, value = stripped.partition(":")
            fields[key.strip()] = value.strip()
    close()
    if not ports and text.strip():
        raise ParseError(f"not the output of ibstat: {text.strip()[:200]!r}")
    return ports


def device_listing(text: str) -> dict[str, str]:
    """The probe's ``<path> char|other|missing`` lines."""
    found = {}
    for line in text.splitlines():
        path, _, kind = line.strip().rpartition(" ")
        if path:
            found[path] = kind
    return found
