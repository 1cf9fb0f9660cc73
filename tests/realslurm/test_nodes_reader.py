"""The one node reader (slurm/nodes.py) against the real slurmctld of every release: its sinfo listing and
`scontrol show node` read into the same Node, with the same flags, reason, partitions and GPUs, and the long state
and reason the controller's commands read before (sinfo's ``%N|%T|%E``) the same as the listing's.

The nodes have no slurmd (this machine runs none), so they are never registered (``*``): an admin's drain with a ``|``
in its reason, clusterforge's drain, a node an admin set down, one in a MAINT reservation, one whose reboot is asked.
With CLUSTERFORGE_CAPTURE_DIR set, what each release printed is written there (``<release>/sinfo.txt``,
``<release>/scontrol-show-node.txt``): tests/slurm/captures/ was made so."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from realslurm import harness

from clusterforge.slurm import nodes

NODES = ["gpu01", "gpu02", "gpu03", "gpu04", "cpu01", "cpu02"]
ADMIN = "RMA | ticket 4711 (admin)"
OURS = "cf:gpu:xid79 gpu1 0000:9b:00.0"


def cluster(scratch: Path, more: str = "") -> Path:
    """The captures' cluster (tests/slurm/captures/README.md), with ``more`` slurm.conf keys."""
    return harness.bare_etc(scratch, "nodes", "GresTypes=gpu\nRebootProgram=/bin/true\n" + more
                            + "".join(f"NodeName={name} NodeAddr=127.3.0.{i + 1} CPUs=2 RealMemory=1000"
                                      + (" Gres=gpu:h100:4" if name.startswith("gpu") else "") + " State=UNKNOWN\n"
                                      for i, name in enumerate(NODES))
                            + "PartitionName=gpu Nodes=gpu[01-04] Default=YES MaxTime=30 State=UP\n"
                            "PartitionName=cpu Nodes=cpu[01-02] MaxTime=1-00:00:00 State=UP\n"
                            "PartitionName=all Nodes=gpu[01-04],cpu[01-02] MaxTime=INFINITE State=UP\n")


@pytest.mark.realslurm
@pytest.mark.parametrize("version", ["22.05", "24.11", "26.05"])
def test_the_listing_and_scontrol_read_into_the_same_nodes(version):
    runtime = harness.require(version)
    with harness.scratch_dir() as scratch, harness.running_slurmctld(runtime, cluster(scratch), scratch) as ctld:
        ctld.scontrol("update", "NodeName=gpu02", "State=DRAIN", f"Reason={ADMIN}")
        ctld.scontrol("update", "NodeName=gpu04", "State=DRAIN", f"Reason={OURS}")
        ctld.scontrol("update", "NodeName=cpu01", "State=DOWN", "Reason=PSU replaced")
        ctld.scontrol("reboot", "ASAP", "nextstate=resume", "reason=cf:roll:reboot batch 1/1", "cpu02")
        ctld.scontrol("create", "reservation", "ReservationName=fw", "Flags=MAINT", "Nodes=gpu03", "StartTime=now",
                      "Duration=60", "Users=root")
        deadline = time.monotonic() + 30
        while not nodes.parse_node(ctld.scontrol(*nodes.show_argv("gpu03")[1:])).maintenance:
            assert time.monotonic() < deadline, "no MAINTENANCE flag on gpu03 within 30 s"
            time.sleep(0.5)

        listing = ctld.run(*nodes.sinfo_argv()).stdout
        shown = ctld.scontrol(*nodes.show_argv()[1:])
        captures = os.environ.get("CLUSTERFORGE_CAPTURE_DIR")
        if captures:
            out = Path(captures) / version
            out.mkdir(parents=True, exist_ok=True)
            (out / "sinfo.txt").write_text(listing)
            (out / "scontrol-show-node.txt").write_text(shown)

        listed = {n.name: n for n in nodes.parse_sinfo(listing)}
        seen = {n.name: n for n in nodes.parse_show(shown)}
        assert list(listed) == list(seen) == sorted(NODES)  # both by name
        for name in NODES:
            a, b = listed[name], seen[name]
            assert (a.flags, a.reason, set(a.partitions), a.gpus) == (b.flags, b.reason, set(b.partitions), b.gpus)
            assert b.set_by.startswith("root@") == bool(b.reason), name
        # Each partition with its limit; in an order sinfo does not keep from run to run (seen on 22.05).
        assert dict(zip(listed["gpu01"].partitions, listed["gpu01"].limits)) == {"gpu": 1800, "all": None}
        assert set(listed["cpu01"].fitting(86400)) == {"cpu", "all"} and listed["gpu01"].fitting(1860) == ("all",)
        assert listed["gpu02"].reason == ADMIN and listed["gpu02"].drained and listed["gpu04"].drained_for(("gpu",))
        assert listed["gpu03"].maintenance and not listed["gpu03"].drained
        assert "DOWN" in listed["cpu01"].flags and "REBOOT_REQUESTED" in listed["cpu02"].flags

        # The controller's commands read the long state and reason the listing reads, as %T and %E print them.
        old = ctld.run("sinfo", "--noheader", "--Node", "--format=%N|%T|%E").stdout
        for line in old.splitlines():
            name, state, reason = line.split("|", 2)
            assert (listed[name].state, listed[name].reason) == (state, "" if reason == "none" else reason)
        # Never registered, every node is out of service; the roll's own reboot is its own.
        assert {n for n in NODES if listed[n].held_by_another(("roll",))} == set(NODES) - {"cpu02"}
