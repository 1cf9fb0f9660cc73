"""The Slurm stand-in (tests/slurm_standin) against the real captures of tests/slurm/captures: the same cluster, the
same admin's and clusterforge's steps, and the stand-in prints what each release printed (the listing byte for byte;
scontrol's records in the keys the readers use). tests/realslurm/test_standin.py compares it to the live daemons
step by step."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from slurm_standin import Node, Partition, Slurm

from clusterforge.slurm import nodes
from clusterforge.slurm.parse import key_values

CAPTURES = Path(__file__).resolve().parent / "captures"
NAMES = ["gpu01", "gpu02", "gpu03", "gpu04", "cpu01", "cpu02"]
# The keys of `scontrol show node` the stand-in prints as the releases do (the others are hardware it has not).
KEYS = ("NodeName", "State", "Gres", "Partitions", "NextState", "ReservationName", "CPUAlloc", "BootTime")


def captured_cluster(release: str) -> Slurm:
    """The captures' cluster (tests/slurm/captures/README.md), after the steps test_nodes_reader.py takes."""
    slurm = Slurm({n: Node(base="UNKNOWN", gres="gpu:h100:4" if n.startswith("gpu") else "") for n in NAMES},
                  {"gpu": Partition(NAMES[:4], default=True, max_minutes=30),
                   "cpu": Partition(NAMES[4:], max_minutes=1440), "all": Partition(NAMES)}, release=release)
    for argv in (["update", "NodeName=gpu02", "State=DRAIN", "Reason=RMA | ticket 4711 (admin)"],
                 ["update", "NodeName=gpu04", "State=DRAIN", "Reason=cf:gpu:xid79 gpu1 0000:9b:00.0"],
                 ["update", "NodeName=cpu01", "State=DOWN", "Reason=PSU replaced"],
                 ["reboot", "ASAP", "nextstate=resume", "reason=cf:roll:reboot batch 1/1", "cpu02"],
                 ["create", "reservation", "ReservationName=fw", "Flags=MAINT", "Nodes=gpu03", "StartTime=now",
                  "Duration=60", "Users=root"]):
        assert slurm.run(["scontrol", *argv]).rc == 0, argv
    return slurm


@pytest.mark.parametrize("release", ["22.05", "24.11", "26.05"])
def test_the_stand_ins_listing_is_each_releases_byte_for_byte(release):
    listing = captured_cluster(release).run(nodes.sinfo_argv()).out
    # sinfo keeps no order between a node's partitions from run to run (22.05): compared as sets of lines
    assert sorted(listing.splitlines()) == sorted((CAPTURES / release / "sinfo.txt").read_text().splitlines())


@pytest.mark.parametrize("release", ["22.05", "24.11", "26.05"])
def test_the_stand_ins_node_records_are_each_releases_in_the_keys_read(release):
    shown = captured_cluster(release).run(nodes.show_argv()).out
    real = (CAPTURES / release / "scontrol-show-node.txt").read_text()

    def records(text: str) -> dict[str, dict[str, str]]:
        out = {}
        for line in text.splitlines():
            values = key_values(line)
            out[values["NodeName"]] = {k: values[k] for k in KEYS if k in values}
            out[values["NodeName"]]["Reason"] = re.split(r"\s+ReservationName=", line.partition(" Reason=")[2])[0].rpartition(" [")[0]
        return out
    assert records(shown) == records(real)
    assert [n.name for n in nodes.parse_show(shown)] == [n.name for n in nodes.parse_show(real)]
    for ours, theirs in zip(nodes.parse_show(shown), nodes.parse_show(real)):
        assert (ours.flags, ours.reason, ours.partitions, ours.gpus) == (
            theirs.flags, theirs.reason, theirs.partitions, theirs.gpus)
