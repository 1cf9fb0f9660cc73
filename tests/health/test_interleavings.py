"""The health program under seeded random interleavings of what happens to a node: an admin's drains and lifts
(of anyone's drain), Slurm's own drains and DOWN, hardware and application Xid records, reboots, and the program's
periodic checks and job prologs. After every step, the invariants the program promises:

- it never lifts, nor relabels, a drain or a DOWN someone else set;
- a hardware fault seen in a boot is held until that boot ends, and the node is drained for it as soon as no one else
  holds it (after any check or prolog the program ran then).

The program runs in this process (its functions, as main() calls them), against a controller played here that does
what slurmctld does with ``scontrol update State=DRAIN|UNDRAIN Reason=``, and its own kernel log and boot id. A
failing sequence names its seed; benchmarks/interleavings.py runs many more.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from clusterforge.health import kernel, program
from clusterforge.slurm.commands import Answer
from clusterforge.health.expect import Expectations

ROOT = Path(__file__).resolve().parents[2]
SMI = (ROOT / "tests" / "check" / "fixtures" / "h100-sxm-x8.nvidia-smi-q.txt").read_text()
SLURMD_C = ("NodeName=gpu01 CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 ThreadsPerCore=2 "
            "RealMemory=2063425\nUpTime=1-00:00:00\n")
BUSES = ("0000:18:00", "0000:2a:00", "0000:5d:00", "0000:9a:00")
HARDWARE = {79: "GPU has fallen off the bus.", 95: "Uncontained memory error"}  # reboot class, reset class
SEEDS = range(20)
STEPS = 80


@dataclass
class Controller:
    """The node as slurmctld holds it, and who set its hold (the test's own bookkeeping, never the program's)."""

    drained: bool = False
    down: bool = False
    reason: str = ""
    updates: list[str] = field(default_factory=list)

    def show(self) -> str:
        state = "+".join(["DOWN" if self.down else "IDLE", *(["DRAIN"] if self.drained else [])])
        reason = f" Reason={self.reason} [root@2026-11-26T10:00:00]" if self.reason else ""
        return f"NodeName=gpu01 Arch=x86_64 State={state} ThreadsPerCore=2{reason}\n"

    def update(self, args: list[str]) -> None:
        """scontrol update, as slurmctld's update_node does it: DRAIN sets the flag and the reason (scontrol asks a
        reason with it); UNDRAIN clears the flag, and the reason unless the node is also down."""
        values = dict(a.split("=", 1) for a in args if "=" in a)
        self.updates.append(" ".join(args))
        if values["State"] == "DRAIN":
            self.drained, self.reason = True, values["Reason"]
        elif values["State"] == "UNDRAIN":
            self.drained = False
            if not self.down:
                self.reason = ""

    @property
    def held_by_another(self) -> bool:
        """Drained for another's reason, or down with no drain of clusterforge's (a drain of its own on a node Slurm
        set down is still its own: relabelling or lifting it leaves the DOWN, and its reason, to Slurm)."""
        ours = self.drained and self.reason.startswith("cf:")
        return (self.drained and not ours) or (self.down and not ours)


class World:
    def __init__(self, root: Path, rng: random.Random) -> None:
        self.rng, self.ctl = rng, Controller()
        self.kmsg, self.boot_file, self.state_dir = root / "kmsg", root / "boot_id", str(root / "state")
        self.kmsg.write_text("")
        self.boot, self.seq = 1, 0
        self.boot_file.write_text("boot-1\n")
        devices = root / "dev"
        devices.mkdir()
        for minor in range(8):
            (devices / f"nvidia{minor}").symlink_to("/dev/null")
        self.expect = Expectations(
            node="gpu01", gpu_type="h100", device_files=tuple(str(devices / f"nvidia{m}") for m in range(8)),
            sockets=2, cores_per_socket=56, threads_per_core=2, real_memory=2_000_000, mounts=("/",),
            probes=("gpus", "xid", "hardware", "mounts"), probe_timeout_s=5)
        # The buses of hardware faults in this boot's kernel log (the test's own account): written, and seen by a
        # check (the periodic check reads the kernel log; a prolog looks at the GPUs alone).
        self.written: set[str] = set()
        self.faults: set[str] = set()

    def run(self, argv, timeout: float) -> Answer:
        if argv[0] == "scontrol" and argv[1] == "show":
            return Answer(0, self.ctl.show(), "")
        if argv[0] == "scontrol" and argv[1] == "update":
            self.ctl.update(list(argv[2:]))
            return Answer(0, "", "")
        if argv[0] == "nvidia-smi":
            return Answer(0, SMI, "")
        if argv[0] == "slurmd":
            return Answer(0, SLURMD_C, "")
        return Answer(127, "", f"{argv[0]}: not here")

    # What happens to the node.

    def record(self, xid: int, bus: str, message: str) -> None:
        self.seq += 1
        with self.kmsg.open("a") as file:
            file.write(f"4,{self.seq},{self.seq * 1000},-;NVRM: Xid (PCI:{bus}): {xid}, pid=1, {message}\n")

    def step(self) -> str:
        ctl, rng = self.ctl, self.rng
        what = rng.choice(["admin drains", "admin lifts", "slurm drains", "down", "up", "hardware xid",
                           "application xid", "reboot", "check", "check", "prolog"])
        if what == "admin drains":
            ctl.drained, ctl.reason = True, rng.choice(["disk swap", "RMA gpu3 (admin)"])
        elif what == "admin lifts" and ctl.drained:  # whoever's drain it is: the admin's call
            ctl.drained = False
            ctl.reason = ctl.reason if ctl.down else ""
        elif what == "slurm drains" and not ctl.drained:
            ctl.drained, ctl.reason = True, "Kill task failed"
        elif what == "down":
            ctl.down = True
            ctl.reason = ctl.reason or "Not responding"
        elif what == "up" and ctl.down:
            ctl.down = False
            ctl.reason = "" if ctl.reason == "Not responding" else ctl.reason
        elif what == "hardware xid":
            xid, bus = rng.choice(sorted(HARDWARE)), rng.choice(BUSES)
            self.record(xid, bus, HARDWARE[xid])
            self.written.add(bus)
        elif what == "application xid":
            self.record(13, rng.choice(BUSES), "Graphics SM Warp Exception")
        elif what == "reboot":
            self.boot, self.seq = self.boot + 1, 0
            self.boot_file.write_text(f"boot-{self.boot}\n")
            self.kmsg.write_text("")
            self.faults.clear()
            self.written.clear()
            ctl.down = False
            ctl.reason = "" if ctl.reason == "Not responding" else ctl.reason
        elif what in ("check", "prolog"):
            before = (ctl.drained, ctl.down, ctl.reason)
            held = ctl.held_by_another
            updates = len(ctl.updates)
            if what == "check":
                program.check(self.expect, self.run, self.state_dir, "gpu01", locked=True)
                self.faults |= self.written
            else:
                program.job_boundary("prolog", self.expect, self.run, self.state_dir, "gpu01", "7", [0])
            if held:
                assert ctl.updates[updates:] == [], f"{what} changed a node someone else holds: {before}"
                assert (ctl.drained, ctl.down, ctl.reason) == before
            elif self.faults:
                assert ctl.drained and ctl.reason.startswith("cf:gpu:xid"), \
                    f"{what} left a node with a hardware fault of this boot in service: {ctl.show()}"
        return what


@pytest.fixture(autouse=True)
def kernel_log_taken_as_roots(tmp_path, monkeypatch):
    """The program reads a kernel-log file only if it is root's alone; the test's is the file of whoever runs the
    tests, so it is taken as root's, and these run without root too (the check itself, as root: test_program.py)."""
    kmsg, root_only = str(tmp_path / "kmsg"), kernel.root_only
    monkeypatch.setattr(kernel, "root_only", lambda path: path == kmsg or root_only(path))


@pytest.mark.parametrize("seed", SEEDS)
def test_no_interleaving_lifts_anothers_hold_or_forgets_a_hardware_fault(seed, tmp_path, monkeypatch):
    # One process runs one check on a node, and holds its lock until it ends: here one process runs them all, one
    # after the other (the lock itself: tests/health/test_program.py).
    monkeypatch.setattr(program, "_locked", lambda state_dir: True)
    monkeypatch.setenv("CLUSTERFORGE_HEALTH_KMSG", str(tmp_path / "kmsg"))
    monkeypatch.setenv("CLUSTERFORGE_HEALTH_BOOT_ID", str(tmp_path / "boot_id"))
    monkeypatch.setenv("CLUSTERFORGE_HEALTH_SITE_DIR", str(tmp_path / "no-site-probes"))
    world = World(tmp_path, random.Random(seed))
    done = []
    for _ in range(STEPS):
        try:
            done.append(world.step())
        except AssertionError as error:
            raise AssertionError(f"seed {seed}, after {done}: {error}") from None
    assert {"check", "prolog", "hardware xid"} <= set(done), done  # the sequence exercised the program


def test_the_interleavings_would_catch_a_program_that_forgets_a_fault_seen_under_anothers_hold(tmp_path,
                                                                                              monkeypatch):
    monkeypatch.setenv("CLUSTERFORGE_HEALTH_KMSG", str(tmp_path / "kmsg"))
    monkeypatch.setenv("CLUSTERFORGE_HEALTH_BOOT_ID", str(tmp_path / "boot_id"))
    monkeypatch.setattr(program.held_faults, "hold", lambda state_dir, boot, kept, findings: [])
    world = World(tmp_path, random.Random(0))
    world.ctl.drained, world.ctl.reason = True, "disk swap"
    world.record(79, BUSES[2], HARDWARE[79])
    world.written.add(BUSES[2])
    world.faults.add(BUSES[2])
    program.check(world.expect, world.run, world.state_dir, "gpu01", locked=True)  # leave: held by another
    world.ctl.drained, world.ctl.reason = False, ""  # the admin lets go
    world.rng = _Scripted(["check"])
    with pytest.raises(AssertionError, match="left a node with a hardware fault of this boot in service"):
        world.step()


class _Scripted(random.Random):
    def __init__(self, choices: list[str]) -> None:
        super().__init__(0)
        self.choices = list(choices)

    def choice(self, options):  # type: ignore[override]
        return self.choices.pop(0) if self.choices and self.choices[0] in options else super().choice(options)

