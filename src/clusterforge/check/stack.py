"""What the `stack` check compares: the packages the inventory pins (at their versions, held), the GPU stack's
daemons, and the driver the kernel runs against the one installed. Pure: the probe reads, this judges."""

from __future__ import annotations

from collections.abc import Mapping

from ..model import Machine, ValidCluster
from ..model.stack import FABRIC_MANAGER_UNIT, upstream
from ..render.stack import SLURM_HELD, SLURM_PACKAGES, gpu_parts
from .findings import Finding

MISMATCH = "version mismatch"  # nvidia-smi: "Failed to initialize NVML: Driver/library version mismatch"


def names(valid: ValidCluster, machine: Machine) -> list[str]:
    """The packages whose state the check reads on this host."""
    return [*SLURM_PACKAGES, *(p for part in gpu_parts(valid, machine) for p in part.packages)]


def has_driver(valid: ValidCluster, machine: Machine) -> bool:
    return any(part.name == "driver" for part in gpu_parts(valid, machine))


def units(valid: ValidCluster, machine: Machine) -> list[str]:
    return [part.unit for part in gpu_parts(valid, machine) if part.unit]


def dpkg(text: str) -> dict[str, tuple[str, bool]]:
    """`dpkg-query -W -f='${Package} ${db:Status-Abbrev} ${Version}\\n'`: installed package -> (version, held)."""
    found = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in ("ii", "hi"):
            found[fields[0]] = (fields[2], fields[1] == "hi")
    return found


def compare(valid: ValidCluster, machine: Machine, packages: Mapping[str, tuple[str, bool]],
            states: Mapping[str, str], smi: tuple[int, str] | None) -> tuple[str, list[Finding]]:
    """``states``: unit -> `systemctl is-active`; ``smi``: `nvidia-smi --query-gpu=driver_version` (rc, output),
    None where there is no nvidia-smi."""
    findings = []
    slurm = valid.stack.slurm if valid.stack is not None else None
    for name in SLURM_PACKAGES:
        if name not in packages:
            continue
        version, held = packages[name]
        if slurm is not None and version != slurm:
            findings.append(Finding(f"{name} is {version}, the inventory pins {slurm}"))
        if not held and name in SLURM_HELD:
            findings.append(Finding(f"{name} is not held: an apt-get upgrade could move it (the deploy holds it)"))
    parts = gpu_parts(valid, machine)
    for part in parts:
        for name in part.packages:
            if name not in packages:
                findings.append(Finding(f"{name} is not installed, the inventory pins {part.version}"))
                continue
            version, held = packages[name]
            if version != part.version:
                findings.append(Finding(f"{name} is {version}, the inventory pins {part.version} (the deploy moves "
                                        "it)"))
            elif not held:
                findings.append(Finding(f"{name} is not held: an apt-get upgrade could move it (the deploy holds "
                                        "it)"))
        if part.unit is not None and states.get(part.unit, "unknown") != "active":
            then = ": slurmd does not start without it" if part.unit == FABRIC_MANAGER_UNIT else ""
            findings.append(Finding(f"{part.unit} is {states.get(part.unit, 'unknown')}{then}"))
    driver = next((p for p in parts if p.name == "driver"), None)
    loaded = ""
    if driver is not None and smi is not None:
        rc, output = smi
        lines = output.strip().splitlines()
        if rc != 0 and MISMATCH in output:
            findings.append(Finding("the kernel runs another driver than the one installed (nvidia-smi: "
                                    "Driver/library version mismatch): a reboot is owed"))
        elif rc == 0 and lines:
            loaded = lines[0].strip()
            if loaded != upstream(driver.version):
                findings.append(Finding(f"the kernel runs driver {loaded}, the inventory pins "
                                        f"{upstream(driver.version)}: a reboot is owed"))
    held = sum(1 for _, h in packages.values() if h)
    detail = "; ".join(x for x in (f"{held} pinned package(s) held",
                                   f"driver {loaded} loaded" if loaded else "",
                                   ", ".join(f"{u} {states.get(u, 'unknown')}" for u in units(valid, machine))) if x)
    return detail, findings
