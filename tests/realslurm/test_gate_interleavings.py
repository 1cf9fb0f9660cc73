"""The gate's commands (slurm/drains.py: drain, resume, reboot) under seeded random interleavings with an admin's
drains and lifts and nodes set DOWN and back, against the real slurmctld of both releases. After every command of
clusterforge's, read back from slurmctld: a node someone else held just before (drained for a reason that is not the
command's own cause, or down) has the same drain, down state and reason, and no reboot asked; a reboot is asked only
for a node drained for one of the command's causes. A failing sequence names its seed; benchmarks/interleavings.py
runs more.

The nodes have no slurmd (this machine runs none): they never register, so a reboot asked for stays asked, which is
what the invariants read (tests/realslurm/test_node_gate.py shows each command alone). slurmctld goes on by itself
with a reboot asked earlier (24.11 issues it and appends " : reboot issued" to whatever reason the node has then):
that is not the command's doing, and Slurm's limit the roll's page states (an admin's drain set while a reboot is
pending is lifted when the node registers)."""

from __future__ import annotations

import random
import time

import pytest
from realslurm import harness

from clusterforge.slurm import drains
from clusterforge.slurm.drains import Drain

NODES = ["gpu01", "gpu02", "gpu03", "gpu04"]
CAUSES = (drains.STACK, drains.ROLL, drains.REMOVED.cause)
REBOOT_FLAGS = {"REBOOT_REQUESTED", "REBOOT_ISSUED"}


def states(ctld: harness.Slurmctld) -> dict[str, tuple[frozenset[str], str]]:
    """Each node's state flags and bare reason, as slurmctld holds them now."""
    out = {}
    for record in harness.parse_oneliner(ctld.scontrol("show", "node", "-o")):
        flags = frozenset(f.rstrip("*~#!%$@^-") for f in record["State"].split("+"))
        out[record["NodeName"]] = (flags, drains.bare_reason(record.get("Reason", "")))
    return out


def held_by_another(flags: frozenset[str], reason: str, causes: tuple[str, ...]) -> bool:
    """Independent of drains.py: out of service, and not for the command's own cause."""
    ours = any(reason == f"cf:{c}" or reason.startswith((f"cf:{c}:", f"cf:{c} ")) for c in causes)
    return bool({"DRAIN", "DOWN", "FAIL", "MAINTENANCE"} & flags) and not (ours and "DOWN" not in flags)


def sequence(ctld: harness.Slurmctld, rng: random.Random, steps: int) -> list[str]:
    done: list[str] = []
    for _ in range(steps):
        node = rng.choice(NODES)
        what = rng.choice(["admin drains", "admin lifts", "down", "up", "cf drain", "cf resume", "cf reboot"])
        if what == "admin drains":
            ctld.scontrol("update", f"NodeName={node}", "State=DRAIN", "Reason=admin: fan")
        elif what == "admin lifts":
            ctld.run("scontrol", "update", f"NodeName={node}", "State=UNDRAIN", check=False)
        elif what == "down":
            ctld.scontrol("update", f"NodeName={node}", "State=DOWN", "Reason=Not responding")
        elif what == "up":
            ctld.run("scontrol", "update", f"NodeName={node}", "State=RESUME", check=False)
        else:
            causes = tuple(rng.sample(CAUSES, rng.choice((1, 2))))
            drain = Drain(causes[0], "x", "interleaved")
            command = {"cf drain": drains.drain_command("gpu[01-04]", drain),
                       "cf resume": drains.resume_command(NODES, causes[0]),
                       "cf reboot": drains.reboot_command(NODES, causes, drain)}[what]
            causes = causes if what == "cf reboot" else causes[:1]
            before = states(ctld)
            ctld.run("sh", "-c", command, check=False)
            after = states(ctld)
            for name, (flags, reason) in before.items():
                now_flags, now_reason = after[name]
                if flags & REBOOT_FLAGS:  # slurmctld going on with a reboot asked earlier, as it does by itself
                    reason, now_reason = (r.removesuffix(" : reboot issued") for r in (reason, now_reason))
                if held_by_another(flags, reason, causes):
                    assert (now_flags & {"DRAIN", "DOWN"}, now_reason) == (flags & {"DRAIN", "DOWN"}, reason), \
                        f"{what} ({causes}) changed {name}, held by another: {flags} {reason!r} -> {now_flags} " \
                        f"{now_reason!r}"
                if now_flags & REBOOT_FLAGS and not flags & REBOOT_FLAGS:
                    assert what == "cf reboot" and "DRAIN" in flags and not held_by_another(flags, reason, causes), \
                        f"{what} asked a reboot of {name}: {flags} {reason!r}"
        done.append(f"{what} {node}")
    return done


def run_seeds(version: str, seeds, steps: int) -> tuple[list[str], float]:
    """Each seed's sequence on a fresh slurmctld; the failing ones, and when this started."""
    runtime = harness.require(version)
    failed, started = [], time.monotonic()
    for seed in seeds:
        with harness.topology_slurmctld(runtime, NODES, "topology/tree", "SwitchName=s1 Nodes=gpu[01-04]\n",
                                        extra="RebootProgram=/bin/true\n") as ctld:
            try:
                sequence(ctld, random.Random(seed), steps)
            except AssertionError as error:
                failed.append(f"seed {seed}: {error}")
    return failed, started


@pytest.mark.realslurm
@pytest.mark.parametrize("version", ["22.05", "24.11", "26.05"])
def test_no_interleaving_has_the_gate_lift_relabel_or_reboot_anothers_node(version):
    failed, _ = run_seeds(version, range(3), 40)
    assert failed == []
