"""The reset the repair loop asks of a node's health check through the node's drain reason (``cf:repair:reset gpu3
0000:5d:00 xid48 (attempt 1 of 2)``, slurm/repairs.py): the periodic check that finds it starts it in the background
(program.asked_reset), which resets that GPU as ``clusterforge-health reset`` does (resets.py), holds the node for the
admission gate where its profile has admission, and lifts the loop's drain where the node is healthy; a reset that
fails is said in the node's reason (``cf:repair:reset-failed``), never lifted.

Two tiers. The program as the deploy ships it, with its stand-ins (tests/health_node.py, tests/health/test_program.py
says how each behaves), for what a node does end to end, its background process included. And the program's functions
in this process against the one Slurm stand-in (tests/slurm_standin), every command recorded in one list: the order of
what it asks, a process killed before each of its commands, an admin who acts before each of them.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest
from health_node import SMI, Node, wait_until
from slurm_standin import Reservation, Slurm, events, printing

from clusterforge.health import kernel, program
from clusterforge.health.expect import Expectations
from clusterforge.slurm import repairs
from clusterforge.slurm.commands import Answer
from clusterforge.slurm.drains import drain_argv, undrain_argv

XID48 = "NVRM: Xid (PCI:0000:5d:00): 48, pid=1912, An uncorrectable double bit error (DBE) has been detected on GPU"
XID79 = "NVRM: Xid (PCI:0000:9a:00): 79, pid=1912, GPU has fallen off the bus."   # gpu4, until a reboot
ASKED = repairs.reset_drain("gpu3", "0000:5d:00", "xid48", 1, 2).reason
HOLD = "cf-gate-repaired-gpu01"
NAME = "gpu01"
RESET = "nvidia-smi -r -i 00000000:5D:00.0"

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the extra kernel-log source must be root's (CI is root)")


# --- The program as the deploy ships it ---------------------------------------------------------------------------


@pytest.fixture
def node(tmp_path):
    node = Node(tmp_path)
    node.kernel(XID48)
    node.run()
    assert node.reason.startswith("cf:gpu:xid48 gpu3 0000:5d:00")
    node.set(reason=ASKED)   # the loop: no job holds gpu3
    return node


def resets_of(node: Node) -> list[str]:
    path = node.root / "resets"
    return path.read_text().splitlines() if path.exists() else []


def held_faults(node: Node) -> list[str]:
    return [f["reason"] for f in json.loads((node.state_dir / "held-faults.json").read_text())["faults"]]


def finished(node: Node) -> bool:
    """The background's check has run to its end (its last-check written after the reset)."""
    return bool(resets_of(node)) and " finding(s)" in (node.state_dir / "last-check").read_text() and \
        (node.state_dir / "last-check").stat().st_mtime >= (node.root / "resets").stat().st_mtime


@as_root
def test_a_reset_the_loop_asks_is_performed_after_the_check_with_evidence_and_the_drain_is_lifted(node):
    done = node.run()
    assert "reset of gpu3 0000:5d:00 asked by the repair loop: performed in the background" in done.stdout, done.stdout
    assert wait_until(lambda: "DRAIN" not in node.state, timeout=30), (node.state, node.reason)
    assert resets_of(node) == [RESET]
    assert (node.root / "evidence-at-reset").read_text().strip().endswith("-xid48-gpu3-reset")   # kept first
    assert held_faults(node) == []   # the reset released the fault of gpu3
    assert node.updates[-1] == "scontrol update NodeName=gpu01 State=UNDRAIN"
    assert wait_until(lambda: finished(node), timeout=30)
    node.run()
    assert resets_of(node) == [RESET] and node.state == "IDLE"   # done once


@as_root
def test_with_admission_the_node_is_held_for_the_gate_before_the_loops_drain_is_lifted(node):
    node.expect = replace(node.expect, admission=True)
    node.run()
    assert wait_until(lambda: "DRAIN" not in node.state, timeout=30), node.reason
    asked = node.asked
    create = next(i for i, line in enumerate(asked) if line.startswith("scontrol create reservation"))
    assert asked[create] == (f"scontrol create reservation ReservationName={HOLD} StartTime=now Duration=infinite "
                             "Users=root Flags=MAINT,IGNORE_JOBS Nodes=gpu01")
    assert asked.index("scontrol update NodeName=gpu01 State=UNDRAIN") > create
    assert node.reservations == [HOLD] and node.state == "IDLE"


@as_root
def test_a_reset_nvidia_smi_refuses_is_said_in_the_nodes_reason_and_the_drain_stays(node):
    node.set(**{"reset-fails": ""})
    node.run()
    assert wait_until(lambda: node.reason.startswith("cf:repair:reset-failed"), timeout=30), node.reason
    assert node.reason == ("cf:repair:reset-failed gpu3 0000:5d:00 nvidia-smi -r exit 255: Unable to reset GPU "
                           "00000000:5D:00.0: In use by another client")
    assert "DRAIN" in node.state and "UNDRAIN" not in " ".join(node.updates)
    assert held_faults(node) == [f for f in held_faults(node) if f.startswith("cf:gpu:xid48 gpu3")] != []
    assert wait_until(lambda: finished(node), timeout=30)
    node.run()   # the loop's to act on now: the check asks nothing more
    time.sleep(1)
    assert resets_of(node) == [RESET] and node.reason.startswith("cf:repair:reset-failed")


@as_root
def test_a_prolog_never_resets(node):
    done = node.run("prolog", SLURM_JOB_ID="7", SLURM_JOB_GPUS="0")
    assert done.returncode == 1 and "leave gpu01: held by another: cf:repair:reset gpu3" in done.stdout
    time.sleep(1)
    assert resets_of(node) == [] and node.reason == ASKED


@as_root
def test_a_report_says_a_reset_is_asked_and_changes_nothing(node):
    before = node.updates
    found = json.loads(node.run("report").stdout)
    assert (f"the repair loop asks a reset of gpu3 0000:5d:00 ({ASKED}): the next check performs it where nothing "
            "else holds the node") in found["notes"]
    time.sleep(1)
    assert resets_of(node) == [] and node.updates == before and node.reason == ASKED


# --- The program's functions against the Slurm stand-in, in this process -----------------------------------------

SLURMD_C = ("NodeName=gpu01 CPUs=224 Boards=1 SocketsPerBoard=2 CoresPerSocket=56 ThreadsPerCore=2 "
            "RealMemory=2063425\nUpTime=1-00:00:00\n")


class Killed(BaseException):
    """The process ends here (slurmd's kill, a reboot, the OOM killer): nothing after runs."""


class World:
    """One node, its Slurm, its GPUs and its kernel log; every command the program runs in ``commands``."""

    def __init__(self, root: Path, admission: bool = False) -> None:
        self.slurm = Slurm.of([NAME, "gpu02"])
        self.kmsg, self.boot_file, self.state_dir = root / "kmsg", root / "boot_id", str(root / "state")
        self.kmsg.write_text("")
        self.boot_file.write_text("boot-1\n")
        self.seq = 0
        devices = root / "dev"
        devices.mkdir()
        for minor in range(8):
            (devices / f"nvidia{minor}").symlink_to("/dev/null")
        self.expect = Expectations(
            node=NAME, gpu_type="h100", device_files=tuple(str(devices / f"nvidia{m}") for m in range(8)),
            sockets=2, cores_per_socket=56, threads_per_core=2, real_memory=2_000_000, mounts=("/",),
            probes=("gpus", "xid", "hardware", "mounts"), probe_timeout_s=5, admission=admission)
        self.commands: list[str] = []
        self.reset_refused = False
        self.started: list[str] = []   # the background processes a check started
        self.before: dict[int, object] = {}   # before the n-th command: a callable, or Killed

    def run(self, argv, timeout: float) -> Answer:
        what = self.before.pop(len(self.commands), None)
        if what is Killed:
            raise Killed(" ".join(argv))
        if callable(what):
            what(argv)
        self.commands.append(" ".join(argv))
        if argv[0] == "scontrol":
            return self.slurm.run(argv)
        if argv[:2] == ["nvidia-smi", "-r"]:
            return (Answer(255, f"Unable to reset GPU {argv[3]}: In use by another client\n", "")
                    if self.reset_refused else Answer(0, f"GPU {argv[3]} was successfully reset.\n", ""))
        if argv[0] == "nvidia-smi":
            return Answer(0, SMI, "")
        if argv[0] == "slurmd":
            return Answer(0, SLURMD_C, "")
        return Answer(127, "", f"{argv[0]}: not here")

    def kernel(self, line: str) -> None:
        self.seq += 1
        with self.kmsg.open("a") as file:
            file.write(f"4,{self.seq},{self.seq * 1000},-;{line}\n")

    def check(self) -> int:
        return program.check(self.expect, self.run, self.state_dir, NAME, locked=True)

    def asked_reset(self) -> int:
        return program.asked_reset(self.expect, self.run, self.state_dir, NAME)

    @property
    def node(self):
        return self.slurm.nodes[NAME]

    def updates(self) -> list[str]:
        return [c for c in self.commands if c.startswith("scontrol update")]

    def resets(self) -> list[str]:
        return [c for c in self.commands if c.startswith("nvidia-smi -r")]

    def held(self) -> list[str]:
        path = Path(self.state_dir) / "held-faults.json"
        return [f["reason"][:17] for f in json.loads(path.read_text())["faults"]] if path.exists() else []

    def admin(self, argv: list[str]) -> None:
        assert self.slurm.run(argv).rc == 0, argv
        self.slurm.asked.pop()


@pytest.fixture
def world(tmp_path, monkeypatch):
    kmsg, root_only = str(tmp_path / "kmsg"), kernel.root_only
    monkeypatch.setattr(kernel, "root_only", lambda path: path == kmsg or root_only(path))
    monkeypatch.setattr(program, "_locked", lambda state_dir: True)   # one process here: the lock is test_program's
    for name, value in {"KMSG": kmsg, "BOOT_ID": str(tmp_path / "boot_id"), "SITE_DIR": str(tmp_path / "no-site"),
                        "EVIDENCE": str(tmp_path / "evidence"),
                        "SYS_INFINIBAND": str(tmp_path / "no-ib")}.items():
        monkeypatch.setenv(f"CLUSTERFORGE_HEALTH_{name}", value)
    made = World(tmp_path)
    monkeypatch.setattr(program, "start_asked_reset", lambda: made.started.append("asked-reset"))
    monkeypatch.setattr(program, "start_gate", lambda: made.started.append("gate"))
    made.kernel(XID48)
    made.check()
    assert made.node.reason.startswith("cf:gpu:xid48 gpu3 0000:5d:00")
    made.admin(drain_argv(NAME, ASKED))   # the loop
    made.commands.clear()
    return made


def test_the_check_leaves_the_loops_drain_and_starts_the_reset_after_it(world):
    world.check()
    assert world.started == ["asked-reset"] and world.updates() == [] and world.resets() == []
    assert world.asked_reset() == 0
    assert world.resets() == [RESET] and world.held() == []
    assert "DRAIN" not in world.node.flags and world.updates() == ["scontrol update NodeName=gpu01 State=UNDRAIN"]
    world.started.clear()
    world.check()
    assert world.started == [] and len(world.resets()) == 1


def test_with_admission_the_commands_come_in_their_order(world):
    world.expect = replace(world.expect, admission=True)
    world.asked_reset()
    assert [c for c in world.commands if not c.startswith(("slurmd", "nvidia-smi -q"))] == [
        "scontrol show node -o gpu01",   # the ask read again, once the check that found it has ended
        "journalctl -k -b --no-pager -o short-iso-precise",   # the evidence first (the bug report is not here)
        RESET,
        (f"scontrol create reservation ReservationName={HOLD} StartTime=now Duration=infinite Users=root "
         "Flags=MAINT,IGNORE_JOBS Nodes=gpu01"),
        "scontrol show node -o gpu01",   # the check after it, just before it acts
        "scontrol -o show reservation",  # the maintenance the node now shows: the gate's hold alone
        "scontrol update NodeName=gpu01 State=UNDRAIN",
    ]
    assert list(world.slurm.reservations) == [HOLD] and "DRAIN" not in world.node.flags


def test_a_hold_that_exists_is_taken_as_made_and_one_refused_leaves_the_loops_drain(world):
    world.expect = replace(world.expect, admission=True)
    world.slurm.refuse["scontrol create reservation"] = Answer(
        1, "", "Error creating the reservation: Requested node configuration is not available\n")
    world.asked_reset()
    assert world.node.reason == ASKED and world.updates() == []   # no gate hold: not lifted; the next check asks
    del world.slurm.refuse["scontrol create reservation"]
    world.slurm.reservations[HOLD] = Reservation(NAME, "MAINT,IGNORE_JOBS")
    world.asked_reset()
    assert "DRAIN" not in world.node.flags and list(world.slurm.reservations) == [HOLD]


def test_faults_the_reset_does_not_end_keep_the_node_drained_with_the_checks_own_reason(world):
    world.kernel(XID79)
    world.asked_reset()
    assert world.node.reason.startswith("cf:gpu:xid79 gpu4 0000:9a:00") and "DRAIN" in world.node.flags
    assert world.held() == ["cf:gpu:xid79 gpu4"]


@pytest.mark.parametrize("reason, why", [
    (repairs.reset_drain("gpu4", "0000:5d:00", "xid48", 1, 2).reason, "is gpu3 here, not gpu4"),
    (repairs.reset_drain("gpu3", "0000:77:00", "xid48", 1, 2).reason, "not listed by nvidia-smi"),
    (ASKED, "nvidia-smi -r exit 255: Unable to reset GPU 00000000:5D:00.0: In use by another client"),
], ids=["name-and-bus-disagree", "not-listed", "refused"])
def test_a_reset_that_fails_is_said_in_the_reason_and_never_lifted(world, reason, why):
    world.admin(drain_argv(NAME, reason))
    world.reset_refused = True
    assert world.asked_reset() == 1
    gpu, bus = reason.split()[1:3]
    assert world.node.reason == f"cf:repair:reset-failed {gpu} {bus} {why}"
    assert "DRAIN" in world.node.flags and world.held() == ["cf:gpu:xid48 gpu3"]
    assert len(world.resets()) == (1 if why.startswith("nvidia-smi") else 0)
    world.reset_refused = False
    world.started.clear()
    world.check()
    world.asked_reset()
    assert world.started == [] and world.node.reason.startswith("cf:repair:reset-failed")


@pytest.mark.parametrize("hold", ["admin", "slurm", "down", "admins-maint", "reboot-asked"])
def test_a_node_another_holds_is_neither_reset_nor_changed(world, hold):
    if hold == "admin":
        world.admin(drain_argv(NAME, "disk swap"))
    elif hold == "slurm":
        world.node.flags.add("FAIL")
    elif hold == "down":
        events.not_responding(world.slurm, NAME)
    elif hold == "admins-maint":
        world.slurm.reservations["admin_fw"] = Reservation("gpu[01-02]", "MAINT")
    else:
        world.node.flags.add("REBOOT_REQUESTED")
    before = printing.node_record(world.slurm, NAME)
    world.check()
    world.asked_reset()
    assert world.started == [] and world.resets() == [] and world.updates() == []
    assert printing.node_record(world.slurm, NAME) == before


def test_inside_the_gates_hold_alone_the_reset_is_performed(world):
    world.slurm.reservations["cf-gate-new-gpu01"] = Reservation(NAME, "MAINT,IGNORE_JOBS")
    world.check()
    assert world.started == ["asked-reset"]
    world.asked_reset()
    assert world.resets() == [RESET] and "DRAIN" not in world.node.flags


@pytest.mark.parametrize("reason", [
    repairs.reboot_drain("xid79 gpu3", 1, 2).reason,
    repairs.quarantine_drain("xid48", 2).reason,
    repairs.reset_failed_drain("gpu3", "0000:5d:00", "nvidia-smi -r exit 255").reason,
    ASKED.replace("cf:repair:reset", "cf:repair:reset-failed"),
], ids=["reboot", "quarantined", "reset-failed", "reset-failed-with-an-attempt"])
def test_the_loops_other_reasons_are_never_lifted_nor_acted_on(world, reason):
    world.admin(drain_argv(NAME, reason))
    world.admin(["scontrol", "update", "NodeName=gpu01", "State=UNDRAIN"])
    world.admin(drain_argv(NAME, reason))
    world.check()
    world.asked_reset()
    assert world.started == [] and world.resets() == [] and world.updates() == []
    assert world.node.reason == reason and "DRAIN" in world.node.flags


def commands_of_a_whole_run(world: World, admission: bool, refused: bool) -> int:
    world.expect = replace(world.expect, admission=admission)
    world.reset_refused = refused
    snapshot = _snapshot(world)
    world.asked_reset()
    count = len(world.commands)
    _restore(world, snapshot)
    return count


def _snapshot(world: World):
    import copy
    import shutil
    saved = Path(world.state_dir + ".saved")
    shutil.copytree(world.state_dir, saved)
    return copy.deepcopy(world.slurm), saved


def _restore(world: World, snapshot) -> None:
    import shutil
    slurm, saved = snapshot
    world.slurm = slurm
    shutil.rmtree(world.state_dir)
    shutil.copytree(saved, world.state_dir)
    shutil.rmtree(saved)
    world.commands.clear()


@pytest.mark.parametrize("admission", [False, True], ids=["plain", "admission"])
@pytest.mark.parametrize("refused", [False, True], ids=["reset", "refused"])
def test_a_reset_killed_before_any_of_its_commands_converges_at_the_next_check(world, admission, refused):
    whole = commands_of_a_whole_run(world, admission, refused)
    assert whole >= 4
    for at in range(whole):
        snapshot = _snapshot(world)
        world.before = {at: Killed}
        with pytest.raises(Killed):
            world.asked_reset()
        world.before = {}
        # The next periodic check: it starts the reset again where the reason still asks.
        world.started.clear()
        world.check()
        if world.started:
            world.asked_reset()
        node = world.node
        if refused:
            assert node.reason.startswith("cf:repair:reset-failed gpu3 0000:5d:00 nvidia-smi -r"), (at, node.reason)
            assert "DRAIN" in node.flags and world.held() == ["cf:gpu:xid48 gpu3"]
            assert "UNDRAIN" not in " ".join(world.updates())
        else:
            assert "DRAIN" not in node.flags and world.held() == [], (at, world.commands)
            assert list(world.slurm.reservations) == ([HOLD] if admission else [])
            undrain = world.commands.index("scontrol update NodeName=gpu01 State=UNDRAIN")
            assert world.commands.count(world.commands[undrain]) == 1
            if admission:   # held before the lift, whichever run made the hold
                assert any(c.startswith("scontrol create reservation") for c in world.commands[:undrain])
        _restore(world, snapshot)


ADMIN_ACTS = {
    "drains": lambda w: w.admin(drain_argv(NAME, "disk swap")),
    "downs": lambda w: events.not_responding(w.slurm, NAME),
    "maint": lambda w: w.slurm.reservations.__setitem__("admin_fw", Reservation("gpu[01-02]", "MAINT")),
    "lifts": lambda w: w.admin(undrain_argv(NAME)),
}


@pytest.mark.parametrize("admission", [False, True], ids=["plain", "admission"])
@pytest.mark.parametrize("refused", [False, True], ids=["reset", "refused"])
@pytest.mark.parametrize("act", sorted(ADMIN_ACTS))
def test_an_admin_who_acts_before_any_of_its_commands_keeps_the_node(world, admission, refused, act):
    """Between the read of the ask and the relabel or the lift, an admin takes the node (or lifts the drain): the
    program never lifts nor relabels what the admin set, and a reason no longer asking is not relabelled. Slurm has
    no conditional update: between the program's last read of the node and its update there is a window, as for every
    drain and lift clusterforge asks (drains.py); an admin who acts in it is not what this test plays."""
    whole = commands_of_a_whole_run(world, admission, refused)
    for at in range(whole + 1):
        snapshot = _snapshot(world)
        world.before = {at: lambda argv: ADMIN_ACTS[act](world)}
        world.asked_reset()
        world.before = {}
        after = world.commands[at:]
        update = next((i for i, c in enumerate(after) if c.startswith("scontrol update")), None)
        if update is not None and not any(c.startswith("scontrol show node") for c in after[:update]):
            _restore(world, snapshot)
            continue   # in the window
        node = world.node
        if act == "drains" and at < whole:
            assert node.reason == "disk swap" and "DRAIN" in node.flags, (at, after)
        if act == "downs" and at < whole:
            assert node.base == "DOWN" and not [c for c in after if "UNDRAIN" in c], (at, after)
        if act in ("drains", "downs", "maint"):
            assert not [c for c in after if c.startswith("scontrol update")], (at, after)
        if act == "lifts":
            assert not [c for c in after if "reset-failed" in c], (at, after)
        _restore(world, snapshot)
