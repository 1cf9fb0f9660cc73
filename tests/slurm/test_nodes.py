"""slurm/nodes.py, the one node reader, on what the real 22.05, 24.11 and 26.05 printed (captures/README.md) and on
the exporter's captures of registered nodes: the listing and `scontrol show node` read into the same Node."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.slurm import nodes
from clusterforge.slurm.parse import ParseError

CAPTURES = Path(__file__).parent / "captures"
EXPORTER = Path(__file__).parents[1] / "exporter" / "captures"
RELEASES = ["22.05", "24.11", "26.05"]
# The exporter's captures were taken with its own listing then (captures/README.md there): no Time.
EXPORTER_FIELDS = ("NodeList", "Partition", "StateLong", "StateComplete", "Gres", "GresUsed", "Reason")


def capture(release: str, name: str) -> str:
    return (CAPTURES / release / name).read_text()


@pytest.mark.parametrize("release", RELEASES)
def test_the_listing_reads_each_node_once_with_its_partitions_limits_states_and_reason(release):
    found = {n.name: n for n in nodes.parse_sinfo(capture(release, "sinfo.txt"))}
    assert {name: (n.state, n.complete) for name, n in found.items()} == {
        "cpu01": ("down", "down"), "cpu02": ("reboot", "unknown+drain+reboot_requested"),
        "gpu01": ("unknown", "unknown"), "gpu02": ("drained", "unknown+drain"),
        "gpu03": ("maint", "unknown+maintenance+reserved"), "gpu04": ("drained", "unknown+drain")}
    assert found["gpu01"].partitions == ("gpu", "all") and found["gpu01"].limits == (1800, None)
    assert found["cpu01"].limits == (86400, None) and found["gpu01"].fitting(1860) == ("all",)
    assert found["gpu01"].limits_said() == "gpu 30 min, all none"
    assert found["gpu02"].reason == "RMA | ticket 4711 (admin)" and found["gpu01"].reason == ""
    assert (found["gpu04"].gpus, found["gpu04"].gpus_alloc, found["cpu01"].gpus) == (4, 0, 0)


@pytest.mark.parametrize("release", RELEASES)
def test_scontrol_reads_into_the_same_nodes_with_who_set_each_reason(release):
    listed = {n.name: n for n in nodes.parse_sinfo(capture(release, "sinfo.txt"))}
    shown = {n.name: n for n in nodes.parse_show(capture(release, "scontrol-show-node.txt"))}
    assert list(shown) == list(listed)
    for name, node in shown.items():
        assert (node.flags, node.reason, set(node.partitions), node.gpus) == (
            listed[name].flags, listed[name].reason, set(listed[name].partitions), listed[name].gpus)
        assert node.state == "" and node.set_by.startswith("root@") == bool(node.reason)
    assert shown["gpu02"].complete == "UNKNOWN+DRAIN" and shown["gpu02"].base == "UNKNOWN"
    assert shown["cpu02"].flags == {"UNKNOWN", "DRAIN", "REBOOT_REQUESTED"} and not shown["cpu02"].rebooting


@pytest.mark.parametrize("release", RELEASES)
def test_whose_each_node_is_by_its_flags_and_by_its_long_state(release):
    found = {n.name: n for n in nodes.parse_sinfo(capture(release, "sinfo.txt"))}
    # The health check's and the gate's view: drained by another, down, in maintenance.
    assert {n for n, node in found.items() if node.kept_by_another(("gpu",))} == {"cpu01", "cpu02", "gpu02", "gpu03"}
    assert found["gpu04"].drained_for(("gpu",)) and found["gpu03"].maintenance
    assert not found["gpu03"].kept_by_another(("gpu",), gate_held=True)
    # The controller's commands' view (the long state): a node never registered is out of service for anyone.
    assert all(node.out_of_service for node in found.values())
    assert not found["cpu02"].held_by_another(("roll",)) and found["gpu04"].held_by_another(("roll",))
    # The long state says "drained" and no more (the flags say "unknown" too): a resume may lift it.
    assert found["gpu04"].resumable_for("gpu") and not found["gpu02"].resumable_for("gpu")


@pytest.mark.parametrize("release", ["22.05", "24.11"])
def test_the_exporters_captures_of_registered_nodes_read_alike(release):
    found = {n.name: n for n in nodes.parse_sinfo((EXPORTER / release / "sinfo.txt").read_text(), EXPORTER_FIELDS)}
    assert {name: n.state for name, n in found.items()} == {
        "cpu1": "allocated", "cpu2": "unknown*", "cpu3": "reboot^", "cpu4": "idle",
        "gpu1": "mixed", "gpu2": "draining", "gpu3": "drained", "gpu4": "down*"}
    assert found["cpu3"].rebooting and found["cpu2"].flags == {"UNKNOWN", "NOT_RESPONDING"}
    assert found["gpu2"].resumable_for("gpu") and not found["gpu2"].held_by_another(("gpu",))
    assert found["gpu3"].held_by_another(("gpu",)) and found["gpu3"].kept_by_another(("gpu",))
    assert not found["cpu2"].kept_by_another(("gpu",)) and found["cpu2"].held_by_another(("gpu",))
    assert (found["gpu2"].gpus, found["gpu2"].gpus_alloc) == (4, 1)


def test_a_node_the_health_check_reads_is_refused_where_scontrol_did_not_print_one():
    assert nodes.parse_node("NodeName=gpu01 State=IDLE+DRAIN Reason=fan [root@2026-11-22T23:40:00]\n").set_by == \
        "root@2026-11-22T23:40:00"
    for text in ("", "slurm_load_node error: Invalid node name specified\n", "NodeName=gpu01 Arch=x86_64\n"):
        with pytest.raises(ParseError):
            nodes.parse_node(text)


def test_gpus_over_all_types_of_every_gres_spelling():
    assert [nodes.gpu_count(g) for g in ("gpu:h100:8(S:0-1)", "gpu:a100:1(IDX:0),gpu:h100:0(IDX:N/A)", "gpu:8",
                                         "gpu:h100:4(S:0),gpu:h100:4(S:1)", "gpu:0", "(null)", "shard:h100:8")] == [
        8, 1, 8, 8, 0, 0, 0]


def test_the_commands():
    assert nodes.sinfo_command("gpu[01-02]") == (
        "sinfo --noheader --all --Node '--nodes=gpu[01-02]' "
        "'--Format=NodeList:|,Partition:|,Time:|,StateLong:|,StateComplete:|,Gres:|,GresUsed:|,Reason:|'")
    assert nodes.show_argv() == ["scontrol", "show", "node", "-o"]
    assert "--states=drain" in nodes.drained_command() and nodes.drained_command().startswith("command -v sinfo")
