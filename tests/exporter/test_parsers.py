"""The exporter's parsers on what Slurm 22.05.8 and 24.11.5 really printed (captures/README.md): one cluster, set up
the same on both, of eight nodes in three partitions: gpu1 running GPU jobs, gpu2 drained by clusterforge while a
job still runs, gpu3 drained by an admin, gpu4 down and not responding, cpu1 full, cpu2 never registered, cpu3
rebooting, cpu4 idle; nine jobs (three running, six pending: an array of three, one behind them, one held, one
waiting for its start time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.exporter.jobs import parse_squeue
from clusterforge.exporter.nodes import drain_owner, usable
from clusterforge.slurm import nodes as slurm_nodes
from clusterforge.slurm.nodes import Node, gpu_count
from clusterforge.exporter.sdiag import figures, parse_sdiag

CAPTURES = Path(__file__).parent / "captures"
RELEASES = ["22.05", "24.11"]
# The exporter's listing when the captures were taken (captures/README.md): slurm/nodes.py's, without Time.
CAPTURED = ("NodeList", "Partition", "StateLong", "StateComplete", "Gres", "GresUsed", "Reason")


def parse_sinfo(text: str) -> list[Node]:
    return slurm_nodes.parse_sinfo(text, CAPTURED)


def capture(release: str, name: str) -> str:
    return (CAPTURES / release / name).read_text()


@pytest.mark.parametrize("release", RELEASES)
def test_each_node_once_with_its_long_state_and_all_its_partitions(release):
    nodes = {n.name: n for n in parse_sinfo(capture(release, "sinfo.txt"))}

    assert {name: n.state for name, n in nodes.items()} == {
        "cpu1": "allocated", "cpu2": "unknown*", "cpu3": "reboot^", "cpu4": "idle",
        "gpu1": "mixed", "gpu2": "draining", "gpu3": "drained", "gpu4": "down*"}
    assert set(nodes["gpu1"].partitions) == {"all", "gpu"}  # the default partition's "*" is not part of its name
    assert set(nodes["cpu4"].partitions) == {"all", "cpu"}


@pytest.mark.parametrize("release", RELEASES)
def test_only_responding_nodes_free_of_drain_down_and_reboot_are_usable(release):
    nodes = parse_sinfo(capture(release, "sinfo.txt"))

    assert sorted(n.name for n in nodes if usable(n)) == ["cpu1", "cpu4", "gpu1"]


@pytest.mark.parametrize("release", RELEASES)
def test_drained_and_draining_nodes_keep_their_whole_reason_and_its_owner(release):
    nodes = {n.name: n for n in parse_sinfo(capture(release, "sinfo.txt"))}

    drained = {n.name: (n.reason, drain_owner(n)) for n in nodes.values() if n.drained}
    assert drained == {
        "gpu2": ("cf:gpu:xid79 gpu1 0000:9b:00.0", "clusterforge"),
        # an admin's reason, with a "|" in it: the reason is the last field, split off whole
        "gpu3": ("bad DIMM B2 | ticket OPS-4711, ask Anna", "other"),
    }
    assert nodes["gpu4"].reason == "PSU replaced, waiting for test"  # down, not drained
    assert nodes["cpu4"].reason == ""  # sinfo's "none"


@pytest.mark.parametrize("release", RELEASES)
def test_gpus_total_and_allocated_over_all_types(release):
    nodes = {n.name: n for n in parse_sinfo(capture(release, "sinfo.txt"))}

    assert {name: (n.gpus, n.gpus_alloc) for name, n in nodes.items()} == {
        "cpu1": (0, 0), "cpu2": (0, 0), "cpu3": (0, 0), "cpu4": (0, 0),
        "gpu1": (4, 3),   # gpu:h100:4, gpu:h100:3(IDX:0-2)
        "gpu2": (4, 1),   # gpu:a100:2,gpu:h100:2, gpu:a100:1(IDX:0),gpu:h100:0(IDX:N/A)
        "gpu3": (4, 0), "gpu4": (4, 0)}


@pytest.mark.parametrize(("gres", "count"), [
    ("gpu:h100:8(S:0-1)", 8),
    ("gpu:h100:2(IDX:0-1)", 2),
    ("gpu:h100:2(IDX:0,3)", 2),          # an index list holds commas
    ("gpu:h100:4(S:0),gpu:h100:4(S:1)", 8),
    ("gpu:a100:2,gpu:h100:4", 6),
    ("gpu:2", 2),
    ("gpu:0", 0),                        # 22.05's GresUsed on a node without GRES
    ("(null)", 0),                       # Gres without GRES; 24.11's GresUsed too
    ("shard:h100:16(S:0-1),gpu:h100:8(S:0-1),nic:2", 8),
    ("gpu:h100:0(IDX:N/A)", 0),
])
def test_gpu_count_reads_every_form_sinfo_prints(gres, count):
    assert gpu_count(gres) == count


def test_the_owner_of_a_drain_is_the_health_packages_rule():
    def owner(reason: str) -> str:
        return drain_owner(Node("n1", "drained", reason, "idle+drain", ("p",)))

    assert owner("cf:removed from the inventory") == "clusterforge"
    assert owner("clusterforge: removed from inventory") == "clusterforge"  # the one before cf:
    assert owner("cf: bare prefix") == "other"  # no cause: not a reason clusterforge writes
    assert owner("Kill task failed") == "other"


def test_lines_that_are_not_sinfos_are_skipped():
    text = "gpu1|gpu*|idle|idle|gpu:h100:4|gpu:h100:0|none|\nsinfo: error: something\n\n"

    assert [n.name for n in parse_sinfo(text)] == ["gpu1"]


@pytest.mark.parametrize("release", RELEASES)
def test_jobs_counted_by_partition_account_and_state_array_tasks_each(release):
    jobs = parse_squeue(capture(release, "squeue.txt"))

    assert dict(jobs.by_state) == {
        ("gpu", "physics", "running"): 1, ("gpu", "chemistry", "running"): 1, ("cpu", "chemistry", "running"): 1,
        ("gpu", "physics", "pending"): 3,     # the array's three tasks
        ("gpu", "chemistry", "pending"): 1, ("cpu", "physics", "pending"): 1, ("all", "chemistry", "pending"): 1}
    assert dict(jobs.pending) == {("gpu", "Resources"): 3, ("gpu", "Priority"): 1, ("cpu", "JobHeldUser"): 1,
                                  ("all", "BeginTime"): 1}


def test_a_job_without_an_account_has_the_empty_account():
    jobs = parse_squeue("RUNNING|gpu|(null)|None\nPENDING|gpu,all|physics|Resources\n")

    assert dict(jobs.by_state) == {("gpu", "", "running"): 1, ("gpu,all", "physics", "pending"): 1}


@pytest.mark.parametrize(("release", "expected"), [
    ("22.05", {"threads": 3, "last_cycle_seconds": 96e-6, "max_cycle_seconds": 772e-6,
               "mean_cycle_seconds": 434e-6, "backfill_last_cycle_seconds": 228e-6,
               "backfill_max_cycle_seconds": 228e-6, "backfill_mean_cycle_seconds": 228e-6}),
    ("24.11", {"threads": 1, "last_cycle_seconds": 114e-6, "max_cycle_seconds": 2402e-6,
               "mean_cycle_seconds": 843e-6, "backfill_last_cycle_seconds": 190e-6,
               "backfill_max_cycle_seconds": 190e-6, "backfill_mean_cycle_seconds": 190e-6}),
])
def test_scheduler_figures_in_seconds_from_both_releases(release, expected):
    found = {f.metric.removeprefix("slurm_scheduler_"): value for f, value in figures(capture(release, "sdiag.txt"))
             .items()}

    assert found == pytest.approx({**expected, "agent_queue_size": 0, "dbd_agent_queue_size": 0,
                                   "backfill_depth_mean": 2}, rel=1e-12)


def test_a_key_is_read_in_its_own_section():
    # Derived from the 22.05 capture: messages queued for a slurmdbd that is down.
    values = parse_sdiag(capture("22.05", "sdiag.txt").replace("DBD Agent queue size: 0", "DBD Agent queue size: 3"))

    assert values["", "DBD Agent queue size"] == "3"
    assert values["Main schedule statistics (microseconds)", "Last cycle"] == "96"
    assert values["Backfilling stats", "Last cycle"] == "228"


def test_a_figure_sdiag_did_not_print_is_left_out():
    text = "Server thread count:  3\n\nBackfilling stats\n\tTotal cycles: 0\n\tLast cycle: 0\n"

    assert {f.metric: v for f, v in figures(text).items()} == {
        "slurm_scheduler_threads": 3, "slurm_scheduler_backfill_last_cycle_seconds": 0}
