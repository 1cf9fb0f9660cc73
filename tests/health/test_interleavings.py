"""The health program under seeded random interleavings of what happens to a node: an admin's drains and lifts
(of anyone's drain), Slurm's own drains and DOWN, hardware and application Xid records, reboots, and the program's
periodic checks and job prologs. After every step, the invariants the program promises:

- it never lifts, nor relabels, a drain or a DOWN someone else set;
- a hardware fault seen in a boot is held until that boot ends, and the node is drained for it as soon as no one else
  holds it (after any check or prolog the program ran then).

The program runs in this process (its functions, as main() calls them), against the one Slurm stand-in
(tests/slurm_standin: slurmctld's update_node for the program's and the admin's scontrol, and what slurmctld does on
its own: its drains, a node not responding and back), and its own kernel log and boot id. A failing sequence names
its seed; benchmarks/interleavings.py runs many more.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from slurm_standin import Slurm, events, printing

from clusterforge.health import kernel, program
from clusterforge.health.expect import Expectations
from clusterforge.slurm.commands import Answer
from clusterforge.slurm.drains import drain_argv, undrain_argv

ROOT = Path(__file__).resolve().parents[2]
SMI = (ROOT / "tests" / "check" / "fixtures" / "h100-sxm-x8.nvidia-smi-q.txt").read_text()
SLURMD_C = ("NodeName=gpu01 CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 ThreadsPerCore=2 "
            "RealMemory=2063425\nUpTime=1-00:00:00\n")
BUSES = ("0000:18:00", "0000:2a:00", "0000:5d:00", "0000:9a:00")
HARDWARE = {79: "GPU has fallen off the bus.", 95: "Uncontained memory error"}  # reboot class, reset class
SEEDS = range(20)
STEPS = 80


NODE = "gpu01"


def held_by_another(slurm: Slurm) -> bool:
    """Who set the node's hold, as the test tells it (never the program's account): drained for another's reason, or
    down with no drain of clusterforge's (a drain of its own on a node Slurm set down is still its own: relabelling or
    lifting it leaves the DOWN, and its reason, to Slurm)."""
    node = slurm.nodes[NODE]
    drained, down = "DRAIN" in node.flags, node.base == "DOWN"
    ours = drained and node.reason.startswith("cf:")
    return (drained and not ours) or (down and not ours)


def held(slurm: Slurm) -> tuple[str, frozenset[str], str]:
    """What the program must leave as it is on a node another holds: its base state, flags and reason."""
    node = slurm.nodes[NODE]
    return node.base, frozenset(node.flags), node.reason


class World:
    def __init__(self, root: Path, rng: random.Random) -> None:
        self.rng, self.slurm = rng, Slurm.of([NODE])
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
        if argv[0] == "scontrol":
            return self.slurm.run(argv)
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

    def admin(self, argv: list[str]) -> None:
        """An admin's scontrol, on the controller."""
        assert self.slurm.run(argv).rc == 0, argv

    def step(self) -> str:
        slurm, rng = self.slurm, self.rng
        what = rng.choice(["admin drains", "admin lifts", "slurm drains", "down", "up", "hardware xid",
                           "application xid", "reboot", "check", "check", "prolog"])
        if what == "admin drains":
            self.admin(drain_argv(NODE, rng.choice(["disk swap", "RMA gpu3 (admin)"])))
        elif what == "admin lifts" and "DRAIN" in slurm.nodes[NODE].flags:  # whoever's drain it is: the admin's call
            self.admin(undrain_argv(NODE))
        elif what == "slurm drains":
            events.drained_by_slurm(slurm, NODE, "Kill task failed")
        elif what == "down":
            events.not_responding(slurm, NODE)
        elif what == "up":
            events.responding(slurm, NODE)
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
            events.responding(slurm, NODE)   # its slurmd answers again (a reboot outside Slurm: no reason of its own)
        elif what in ("check", "prolog"):
            before, another, asked = held(slurm), held_by_another(slurm), len(slurm.asked)
            if what == "check":
                program.check(self.expect, self.run, self.state_dir, "gpu01", locked=True)
                self.faults |= self.written
            else:
                program.job_boundary("prolog", self.expect, self.run, self.state_dir, "gpu01", "7", [0])
            if another:
                updates = [argv for argv in slurm.asked[asked:] if argv[:2] == ["scontrol", "update"]]
                assert updates == [], f"{what} changed a node someone else holds: {before}"
                assert held(slurm) == before
            elif self.faults:
                node = slurm.nodes[NODE]
                shown = printing.node_record(slurm, NODE)
                assert "DRAIN" in node.flags and node.reason.startswith("cf:gpu:xid"), \
                    f"{what} left a node with a hardware fault of this boot in service: {shown}"
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
    world.admin(drain_argv(NODE, "disk swap"))
    world.record(79, BUSES[2], HARDWARE[79])
    world.written.add(BUSES[2])
    world.faults.add(BUSES[2])
    program.check(world.expect, world.run, world.state_dir, "gpu01", locked=True)  # leave: held by another
    world.admin(undrain_argv(NODE))  # the admin lets go
    world.rng = _Scripted(["check"])
    with pytest.raises(AssertionError, match="left a node with a hardware fault of this boot in service"):
        world.step()


class _Scripted(random.Random):
    def __init__(self, choices: list[str]) -> None:
        super().__init__(0)
        self.choices = list(choices)

    def choice(self, options):  # type: ignore[override]
        return self.choices.pop(0) if self.choices and self.choices[0] in options else super().choice(options)

