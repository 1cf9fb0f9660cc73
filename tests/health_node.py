"""A compute node as the node health program sees it, in a directory: the program as the deploy ships it, and the
stand-ins of what it asks (tests/health/test_program.py says how each behaves), shared by the health program's tests
(test_program, test_repaired, test_evidence). slurmctld is the one Slurm stand-in (tests/slurm_standin): its
commands in the node's bin, its cluster (this node and a neighbour) in a state file of the node's directory."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from slurm_standin import Reservation, Slurm, cluster, shell

from clusterforge.health.expect import Expectations
from clusterforge.render.programs import health_program

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "check" / "fixtures"
SMI = (FIXTURES / "h100-sxm-x8.nvidia-smi-q.txt").read_text()
PYTHON = "/usr/bin/python3"
NAME = "gpu01"
NEIGHBOUR = "gpu02"   # in some of the reservations an admin makes (gpu[01-02])


SLURMD = """#!/bin/sh
echo "NodeName=$(hostname) CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=2063425"
echo "UpTime=1-00:00:00"
"""
SYSTEMCTL = """#!/bin/sh
shift; for unit in "$@"; do grep -qx "$unit" "$NODE/inactive" 2>/dev/null && echo inactive || echo active; done
"""
# The journal of the kernel's messages since boot: $NODE/journal, or none, as journalctl says it.
JOURNALCTL = """#!/bin/sh
echo "journalctl $*" >> "$NODE/journal-calls"
[ -e "$NODE/journal-fails" ] && { echo "Failed to get journal access: Input/output error" >&2; exit 1; }
cat "$NODE/journal" 2>/dev/null || echo "-- No entries --"
"""
NVIDIA_SMI = """#!/bin/sh
[ -e "$NODE/smi-hangs" ] && exec sleep 600
if [ "$1" = -r ]; then
  echo "nvidia-smi $*" >> "$NODE/resets"
  ls "$NODE/evidence" > "$NODE/evidence-at-reset" 2>/dev/null
  [ -e "$NODE/reset-fails" ] && { echo "Unable to reset GPU $3: In use by another client"; exit 255; }
  echo "GPU $3 was successfully reset."; exit 0
fi
cat "$NODE/smi.txt"
"""


def wait_until(test, timeout: float) -> bool:
    """Whether ``test()`` held within ``timeout`` seconds (a program running in the background acts meanwhile)."""
    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def without_gpus(text: str, minors: set[int]) -> str:
    """The capture less the blocks of the GPUs with these minor numbers (derived here, not captured)."""
    head, *blocks = text.split("\nGPU ")
    kept = [b for b in blocks if not any(f"Minor Number                          : {m}\n" in b for m in minors)]
    return "\nGPU ".join([head, *kept])


class Node:
    """A compute node as the program sees it, in a directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.program = root / "clusterforge-health.pyz"  # as the deploy ships it (render/programs.py)
        self.program.write_bytes(health_program())
        self.bin = root / "bin"
        self.bin.mkdir()
        for name, text in {"slurmd": SLURMD, "systemctl": SYSTEMCTL, "nvidia-smi": NVIDIA_SMI,
                           "journalctl": JOURNALCTL}.items():
            (self.bin / name).write_text(text)
            (self.bin / name).chmod(0o755)
        shell.bin_dir(self.bin)   # scontrol and the other Slurm commands, on slurmctld_state
        self.slurmctld_state = root / "slurmctld.state"
        shell.save(Slurm.of([NAME, NEIGHBOUR]), self.slurmctld_state)
        self.dev = root / "dev"
        self.dev.mkdir()
        for minor in range(8):
            (self.dev / f"nvidia{minor}").symlink_to("/dev/null")
        self.kmsg = root / "kmsg"
        self.kmsg.write_text("")
        self.kernel_log = root / "kernel.log"
        self.kernel_log.write_text("")
        self.boot_id = root / "boot_id"
        self.boot_id.write_text("boot-1\n")
        self.state_dir = root / "health-state"
        self.site_dir = root / "health.d"
        self.set(smi=SMI)
        self.expect = Expectations(
            node="gpu01", gpu_type="h100", device_files=tuple(str(self.dev / f"nvidia{m}") for m in range(8)),
            sockets=2, cores_per_socket=56, threads_per_core=2, real_memory=2_000_000, mounts=("/",),
            daemons=("munge",), kernel_log_extra=str(self.kernel_log), probe_timeout_s=5)
        self.seq = 0

    def set(self, state: str | None = None, reason: str | None = None, **files: str) -> None:
        """The node's state and reason as slurmctld holds them (``state``: the base state, then flags, as scontrol
        prints them, ``IDLE+DRAIN``; ``ALLOCATED``: a job runs on it; the reason set by root now), and the files the
        other stand-ins answer from (``smi``: what nvidia-smi -q prints)."""
        if state is not None or reason is not None:
            with self.controller() as slurm:
                node = slurm.nodes[NAME]
                if state is not None:
                    _set_state(slurm, state)
                if reason is not None:
                    node.reason, node.reason_by = reason, f"root@{cluster.stamp(slurm.now)}" if reason else ""
        for name, text in files.items():
            (self.root / ("smi.txt" if name == "smi" else name)).write_text(text)

    def kernel(self, message: str, prefix: int = 4, extra: bool = False) -> None:
        """A record of the kernel's log (or of the ``extra`` source), as /dev/kmsg gives it:
        <prefix>,<seq>,<usec>,<flags>;<message>."""
        self.seq += 1
        with (self.kernel_log if extra else self.kmsg).open("a") as file:
            file.write(f"{prefix},{self.seq},{self.seq * 1000},-;{message}\n")

    def reboot(self) -> None:
        """Another boot: a new boot id, and a kernel log that starts again."""
        number = int(self.boot_id.read_text().split("-")[1]) + 1
        self.boot_id.write_text(f"boot-{number}\n")
        self.kmsg.write_text("")
        self.seq = 0

    def run(self, *args: str, **slurm_env: str) -> subprocess.CompletedProcess[str]:
        expect = self.root / "health.json"
        expect.write_text(self.expect.to_json())
        env = {"PATH": f"{self.bin}:/usr/bin:/bin", "NODE": str(self.root), "SLURMD_NODENAME": "gpu01",
               "CLUSTERFORGE_HEALTH_EXPECT": str(expect), "CLUSTERFORGE_HEALTH_STATE": str(self.state_dir),
               "CLUSTERFORGE_HEALTH_SITE_DIR": str(self.site_dir), "CLUSTERFORGE_HEALTH_KMSG": str(self.kmsg),
               "CLUSTERFORGE_HEALTH_BOOT_ID": str(self.boot_id), **self.evidence_env, **self.controller_env,
               **slurm_env}
        code = ("import sys; sys.path.insert(0, sys.argv[1]); from clusterforge_health.health.program import main; "
                "sys.exit(main(sys.argv[2:]))")
        return subprocess.run([PYTHON, "-I", "-S", "-c", code, str(self.program), *args], env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    def launch(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The check through the launcher the deploy installs (render/health.py), on this node's program."""
        from clusterforge.model.settings import HEALTH_PROGRAM
        from clusterforge.render.health import PROGRAM, launcher

        program = self.root / "clusterforge-health"
        program.write_text(launcher(HEALTH_PROGRAM).replace(repr(PROGRAM), repr(str(self.program))))
        program.chmod(0o755)
        expect = self.root / "health.json"
        expect.write_text(self.expect.to_json())
        env = {"PATH": f"{self.bin}:/usr/bin:/bin", "NODE": str(self.root), "SLURMD_NODENAME": "gpu01",
               "CLUSTERFORGE_HEALTH_EXPECT": str(expect), "CLUSTERFORGE_HEALTH_STATE": str(self.state_dir),
               "CLUSTERFORGE_HEALTH_SITE_DIR": str(self.site_dir), "CLUSTERFORGE_HEALTH_KMSG": str(self.kmsg),
               "CLUSTERFORGE_HEALTH_BOOT_ID": str(self.boot_id), **self.evidence_env, **self.controller_env}
        return subprocess.run([str(program), *args], env=env, capture_output=True, text=True, timeout=120,
                              check=False)

    @property
    def evidence_env(self) -> dict[str, str]:
        """Where the evidence before a reset or a reboot goes, and the HCAs' counters it reads: the node's own."""
        return {"CLUSTERFORGE_HEALTH_EVIDENCE": str(self.root / "evidence"),
                "CLUSTERFORGE_HEALTH_SYS_INFINIBAND": str(self.root / "sys-infiniband")}

    @property
    def controller_env(self) -> dict[str, str]:
        """Where the node's Slurm commands find slurmctld: the stand-in's state file."""
        return {shell.STATE: str(self.slurmctld_state)}

    @contextlib.contextmanager
    def controller(self) -> Iterator[Slurm]:
        """slurmctld, to read or change between the program's calls, or while its gate polls in the background
        (locked as the commands lock it)."""
        with shell.changing(self.slurmctld_state) as slurm:
            yield slurm

    @property
    def state(self) -> str:
        """The node's state as slurmctld keeps it: its base state (ALLOCATED while a job runs) and the flags set on
        it; scontrol prints MAINTENANCE and RESERVED besides while a reservation holds it (reserve). Read once the
        node's slurmd has answered slurmctld's registration request after a lift (within a second on a live node)."""
        with self.controller() as slurm:
            slurm.answer_registration_requests()
            base, _ = slurm.state_of(NAME)
            return cluster.complete(base, slurm.nodes[NAME].flags)

    @property
    def reason(self) -> str:
        """The node's reason, without scontrol's " [user@time]"."""
        with self.controller() as slurm:
            return slurm.nodes[NAME].reason

    def reserve(self, name: str, nodes: str = NAME, flags: str = "MAINT,IGNORE_JOBS", state: str = "ACTIVE") -> None:
        """A reservation slurmctld holds, as an admin (or the gate) made it: active for the hour from now, or
        (``INACTIVE``) from tomorrow."""
        with self.controller() as slurm:
            start = slurm.now if state == "ACTIVE" else slurm.now + 24 * 3600
            slurm.reservations[name] = Reservation(nodes, flags, "root", start, minutes=60)

    @property
    def reservations(self) -> list[str]:
        """The names of the reservations slurmctld holds."""
        with self.controller() as slurm:
            return list(slurm.reservations)

    @property
    def asked(self) -> list[str]:
        """Every Slurm command the node ran, its words joined by spaces: ``scontrol -o show reservation``."""
        with self.controller() as slurm:
            return [" ".join(argv) for argv in slurm.asked]

    @property
    def updates(self) -> list[str]:
        return [line for line in self.asked if line.startswith("scontrol update")]


def _set_state(slurm: Slurm, state: str) -> None:
    """``IDLE+DRAIN``, ``DOWN+DRAIN+REBOOT_ISSUED``: the node's base state and flags; ALLOCATED is a job placed on it
    (the stand-in derives it from the running jobs, as slurmctld does), any other base state ends its jobs."""
    base, *flags = state.split("+")
    running = slurm.running_on(NAME)
    if base == "ALLOCATED" and not running:
        slurm.place("root", [NAME], 3600)
    elif base != "ALLOCATED":
        for job in running:
            job.state, job.ended = "COMPLETED", slurm.now
    node = slurm.nodes[NAME]
    node.base, node.flags = ("IDLE" if base == "ALLOCATED" else base), set(flags)
