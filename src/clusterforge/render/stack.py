"""The pinned stack's files: apt's preferences (each package at its exact version), unattended-upgrades told to
leave those packages alone, NVIDIA's apt source, NCCL's settings for a profile's jobs (/etc/nccl.conf, and the
same values in every Enroot container's environment), and the DCGM exporter's drop-in. Pure text; the roles decide
where each goes and what is held.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..model import AptRepository, Machine, ValidCluster
from ..model.settings import DCGM_EXPORTER_PORT
from ..model.stack import DCGM_EXPORTER_UNIT, DCGM_UNIT, EVERY_PACKAGE, GpuStack, Nccl, Part, parts
from .text import fill, header

# Priority above 1000: apt takes the pinned version even where that is a downgrade, so a node some upgrade moved
# is brought back by the next deploy (apt_preferences(5)).
PIN_PRIORITY = 1001
# The binary packages Debian builds from Slurm's source that a cluster host may have (their versions are read), and
# those the deploy installs itself, which it holds: their exact-version dependencies (slurm-wlm-basic-plugins) cannot
# move without them.
SLURM_PACKAGES = ("slurm-client", "slurmctld", "slurmd", "slurmdbd", "sackd", "slurmrestd", "slurm-wlm",
                  "slurm-wlm-basic-plugins", "slurm-wlm-plugins", "slurm-wlm-jwt-plugin", "libslurm-dev", "libpmi0",
                  "libpmi2-0", "libpam-slurm-adopt")
SLURM_HELD = ("slurm-client", "slurmctld", "slurmd", "slurmdbd", "sackd", "slurmrestd", "slurm-wlm-jwt-plugin")


def gpu_stack(valid: ValidCluster, machine: Machine) -> GpuStack | None:
    """The GPU stack of a compute host's profile, or None."""
    if valid.stack is None or machine.node is None:
        return None
    return valid.stack.gpu.get(machine.node.profile.name)


def gpu_parts(valid: ValidCluster, machine: Machine) -> tuple[Part, ...]:
    found = gpu_stack(valid, machine)
    return parts(found) if found is not None else ()


DCGM_EXPORTER_DROPIN_DIR = f"/etc/systemd/system/{DCGM_EXPORTER_UNIT}.d"
DCGM_EXPORTER_DROPIN = f"{DCGM_EXPORTER_DROPIN_DIR}/clusterforge.conf"
# nv-hostengine's own listener, which nvidia-dcgm.service runs it on (NVIDIA's default).
HOSTENGINE = "localhost:5555"


def dcgm_exporter_dropin(valid: ValidCluster, stack: GpuStack | None) -> str | None:
    """The drop-in over NVIDIA's nvidia-dcgm-exporter.service where the stack has the exporter, else None. NVIDIA's
    unit runs the exporter with a host engine of its own embedded; here it reads nvidia-dcgm's, so that a node
    has one host engine, whose GPU watches dcgmi and the health check share."""
    if stack is None or stack.dcgm_exporter is None:
        return None
    purpose = "the DCGM exporter reads nvidia-dcgm's host engine and logs to the journal"
    return (f"{header(valid, purpose)}\n"
            "[Unit]\n"
            "# Nothing to export without the host engine: stopped and restarted with it (NVIDIA's unit Wants it).\n"
            f"Requires={DCGM_UNIT}\nAfter={DCGM_UNIT}\n"
            "\n[Service]\n"
            f"Environment=DCGM_REMOTE_HOSTENGINE_INFO={HOSTENGINE}\n"
            f"Environment=DCGM_EXPORTER_LISTEN=:{DCGM_EXPORTER_PORT}\n"
            "# The journal, as the other daemons, not a file that only grows (NVIDIA's unit appends to one).\n"
            "StandardOutput=journal\nStandardError=journal\n"
            "Restart=on-failure\nRestartSec=5\n")


def pins(valid: ValidCluster, machine: Machine) -> dict[str, list[str]]:
    """Version -> what apt keeps at it (package names and patterns), on this host: Slurm's packages where the
    inventory gives their version (every package of that version: Debian builds them all from one source, with
    exact-version dependencies between them), and the host's GPU stack."""
    out: dict[str, list[str]] = {}
    if valid.stack is not None and valid.stack.slurm is not None and machine.runs_slurm:
        out[valid.stack.slurm] = [EVERY_PACKAGE]
    for part in gpu_parts(valid, machine):
        found = out.setdefault(part.version, [])
        found += [p for p in part.pins if p not in found]
    return {version: [EVERY_PACKAGE] if EVERY_PACKAGE in found else found for version, found in out.items()}


def preferences(valid: ValidCluster, machine: Machine) -> str | None:
    """/etc/apt/preferences.d's file for this host: one stanza per version, or None where nothing is pinned."""
    found = pins(valid, machine)
    if not found:
        return None
    stanzas = [f"Package: {' '.join(names)}\nPin: version {version}\nPin-Priority: {PIN_PRIORITY}"
               for version, names in found.items()]
    return fill("apt-preferences.j2", header=header(valid, "apt keeps these packages at exactly these versions; "
                                                           f"{EVERY_PACKAGE}: every package that has the version"),
                stanzas=stanzas)


def unattended_upgrades(valid: ValidCluster, names: Iterable[str]) -> str:
    """An apt.conf.d file that adds the held packages to unattended-upgrades' blacklist: it would otherwise report
    them as kept back on every run (a hold and a pin already keep it from moving them)."""
    # unattended-upgrades matches each entry with re.match (anchored at the start only, hence the $); a '.' in a
    # name matches itself too, a '+' must not repeat.
    entries = [name.replace("+", "[+]") + "$" for name in sorted(set(names))]
    return fill("unattended-upgrades.conf.j2", header=header(valid).replace("# ", "// "), entries=entries)


def deb_line(repo: AptRepository, keyring: str) -> str:
    return " ".join(("deb", f"[signed-by={keyring}]", repo.url, repo.suite, *repo.components))


def nvidia_sources(valid: ValidCluster, keyring: str) -> str:
    assert valid.stack is not None and valid.stack.repository is not None
    return fill("lines.conf.j2", header=header(valid), lines=[deb_line(valid.stack.repository, keyring)])


def nccl_settings(nccl: Nccl) -> list[tuple[str, str]]:
    """NCCL's variables for a profile, in a fixed order: the named ones, then the others by name."""
    found = []
    if nccl.ib_hca:
        # '=': exact names; a bare mlx5_1 would also select mlx5_10 and mlx5_11 (NCCL_IB_HCA's prefix match).
        found.append(("NCCL_IB_HCA", "=" + ",".join(nccl.ib_hca)))
    if nccl.socket_ifname is not None:
        found.append(("NCCL_SOCKET_IFNAME", nccl.socket_ifname))
    if nccl.ib_gid_index is not None:
        found.append(("NCCL_IB_GID_INDEX", str(nccl.ib_gid_index)))
    found += sorted(nccl.extra.items())
    return found


def nccl_conf(valid: ValidCluster, nccl: Nccl) -> str:
    """/etc/nccl.conf: NAME=value lines, which NCCL reads at start; a job's environment wins over it."""
    return fill("keyvalue.conf.j2", header=header(valid, "NCCL's defaults for this node's jobs"),
                settings=nccl_settings(nccl))


def nccl_environ(valid: ValidCluster, nccl: Nccl) -> str:
    """Enroot's environ.d file: the host's /etc/nccl.conf is not in a container, its variables are."""
    return fill("keyvalue.conf.j2", header=header(valid, "NCCL's settings in every container, as /etc/nccl.conf"),
                settings=nccl_settings(nccl))


def files(valid: ValidCluster) -> dict[str, str]:
    """The stack's files as ``clusterforge render`` writes them: the service hosts' preferences, and each profile's
    preferences, NCCL settings and DCGM exporter drop-in (as the profile's first node gets them)."""
    out: dict[str, str] = {}
    service = next((m for m in valid.machines if m.node is None and m.runs_slurm), None)
    if service is not None and (text := preferences(valid, service)) is not None:
        out["apt-preferences"] = text
    first = {m.node.profile.name: m for m in reversed(valid.machines) if m.node is not None}
    for hardware in valid.hardware:
        machine = first.get(hardware.name)
        if machine is None:
            continue
        if (text := preferences(valid, machine)) is not None:
            out[f"apt-preferences-{hardware.name}"] = text
        if hardware.profile.nccl is not None:
            out[f"nccl-{hardware.name}.conf"] = nccl_conf(valid, hardware.profile.nccl)
        if (text := dcgm_exporter_dropin(valid, gpu_stack(valid, machine))) is not None:
            out[f"nvidia-dcgm-exporter.service.d-clusterforge-{hardware.name}.conf"] = text
    return out
