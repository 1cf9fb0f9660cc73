"""The rendered alert rules under `promtool test rules`: synthetic series, as Prometheus holds them after scraping
the Slurm exporter and the node exporters of the golden cluster with monitoring (tests/golden/monitoring: partition
gpu of 4 nodes, cpu of 2, profile hgx-h100 with 8 GPUs, controller and database ctl, pending_minutes 20), make each
alert fire when it should, with its labels and summary, and stay quiet when it should not."""

from __future__ import annotations

import dataclasses

import pytest
from golden_cases import PROD, cases
from monitoring.tools import check_alerts

from clusterforge.reach.hosts import load
from clusterforge.render import alert_rules

VALID = next(c for c in cases() if c.name == "monitoring").valid()
RULES = alert_rules.render(VALID)
SLURM = {"instance": "10.30.0.2:9341", "job": "slurm"}  # the labels scraping the exporter adds


def series(metric: str, labels: dict[str, str]) -> str:
    return metric + "{" + ",".join(f'{key}="{value}"' for key, value in labels.items()) + "}"


def node_target(node: str, address: str, groups: str = "compute") -> dict[str, str]:
    return {"instance": f"{address}:9100", "job": "node", "node": node, "groups": groups}


def alert(severity: str, summary: str, **labels: str) -> dict:
    return {"exp_labels": {"severity": severity, **labels}, "exp_annotations": {"summary": summary}}


def test_a_drain_by_clusterforge_fires_with_its_reason_an_admins_does_not():
    ours = {"node": "gpu01", "reason": "cf:xid:79 GPU has fallen off the bus", "owner": "clusterforge"}
    admins = {"node": "gpu02", "reason": "replacing a fan", "owner": "other"}
    check_alerts(RULES, {series("slurm_node_drain_info", {**ours, **SLURM}): "1x10",
                         series("slurm_node_drain_info", {**admins, **SLURM}): "1x10"},
                 [("1m", "ClusterforgeDrained", [alert(
                     "warning", "Node gpu01 drained by clusterforge: cf:xid:79 GPU has fallen off the bus",
                     **ours, **SLURM)])])


def test_a_node_down_fires_after_five_minutes_whatever_its_flag_a_short_outage_does_not():
    gpu03, gpu04 = {"node": "gpu03", **SLURM}, {"node": "gpu04", **SLURM}
    check_alerts(RULES, {
        # not responding first (down*), then down: one outage, one wait
        series("slurm_node_state", {**gpu03, "state": "down*"}): "1 1 stale",
        series("slurm_node_state", {**gpu03, "state": "down"}): "_ _ 1x10",
        # down four minutes, then back
        series("slurm_node_state", {**gpu04, "state": "down"}): "1 1 1 1 stale",
        series("slurm_node_state", {**gpu04, "state": "idle"}): "_ _ _ _ 1x10",
        series("slurm_node_state", {"node": "gpu01", "state": "drained", **SLURM}): "1x10",
    }, [
        ("4m", "SlurmNodeDown", []),
        ("5m", "SlurmNodeDown", [alert("warning", "Slurm node gpu03 has been down for 5 minutes or more",
                                       node="gpu03")]),
        ("9m", "SlurmNodeDown", [alert("warning", "Slurm node gpu03 has been down for 5 minutes or more",
                                       node="gpu03")]),
    ])


def test_a_node_with_fewer_gpus_than_its_profile_fires_a_cpu_node_with_none_does_not():
    short = {**node_target("gpu01", "10.30.1.1"), "profile": "hgx-h100"}
    check_alerts(RULES, {
        series("clusterforge_health_gpus", short): "7x5",
        series("clusterforge_health_gpus", {**node_target("gpu02", "10.30.1.2"), "profile": "hgx-h100"}): "8x5",
        series("clusterforge_health_gpus", {**node_target("cpu1", "cpu1"), "profile": "cpu"}): "0x5",
    }, [("1m", "NodeGpusMissing", [alert("warning", "Node gpu01 sees 7 of the 8 GPUs its profile hgx-h100 declares",
                                         **short)])])


IB_COUNTER = "clusterforge_health_ib_port_errors_total"


def test_an_infiniband_port_counter_that_rose_fires_naming_the_port_until_thirty_minutes_pass_quiet():
    rising = {**node_target("gpu01", "10.30.1.1"), "hca": "mlx5_4", "port": "1", "counter": "symbol_error"}
    steady = {**node_target("gpu02", "10.30.1.2"), "hca": "mlx5_0", "port": "1", "counter": "link_downed"}
    reset = {**node_target("gpu03", "10.30.1.3"), "hca": "mlx5_1", "port": "1", "counter": "link_downed"}
    fired = alert("warning", "Node gpu01's InfiniBand mlx5_4 port 1 counted symbol_error in the last 30 minutes",
                  **rising)
    check_alerts(RULES, {series(IB_COUNTER, rising): "3 3 3 5x45", series(IB_COUNTER, steady): "2x48",
                         # a reboot or perfquery -R: the counter starts again, no rise
                         series(IB_COUNTER, reset): "9 9 9 0x45"},
                 [("2m", "InfinibandPortErrorsRising", []), ("3m", "InfinibandPortErrorsRising", [fired]),
                  ("30m", "InfinibandPortErrorsRising", [fired]), ("40m", "InfinibandPortErrorsRising", [])])


def test_a_partition_below_its_declared_nodes_fires_after_fifteen_minutes_one_at_its_count_does_not():
    gpu = {"partition": "gpu", "state": "usable", **SLURM}
    cpu = {"partition": "cpu", "state": "usable", **SLURM}
    degraded = alert("warning", "Partition gpu has 3 usable nodes of the 4 the inventory declares, for 15 minutes "
                                "or more", **gpu)
    check_alerts(RULES, {series("slurm_partition_nodes", gpu): "3x20", series("slurm_partition_nodes", cpu): "2x20"},
                 [("14m", "PartitionDegraded", []), ("15m", "PartitionDegraded", [degraded])])


def test_a_partition_at_its_declared_count_is_quiet():
    check_alerts(RULES, {series("slurm_partition_nodes", {"partition": "gpu", "state": "usable", **SLURM}): "4x20",
                         series("slurm_partition_nodes", {"partition": "gpu", "state": "total", **SLURM}): "4x20"},
                 [("16m", "PartitionDegraded", [])])


CTLD = "slurmctld on ctl is down, or the Slurm exporter there cannot be reached, for 2 minutes or more"
DBD = "slurmdbd on ctl is down, or the Slurm exporter on ctl cannot be reached, for 2 minutes or more"


@pytest.mark.parametrize(("ctld", "dbd", "firing"), [
    ("0x5", "1x5", ["SlurmctldDown"]),
    ("1x5", "0x5", ["SlurmdbdDown"]),
    ("1x5", "1x5", []),
])
def test_the_exporter_saying_a_daemon_is_down_fires_that_daemons_alert_after_two_minutes(ctld, dbd, firing):
    expected = {"SlurmctldDown": alert("critical", CTLD, **SLURM), "SlurmdbdDown": alert("warning", DBD, **SLURM)}
    check_alerts(RULES, {series("up", SLURM): "1x5", series("slurm_slurmctld_up", SLURM): ctld,
                         series("slurm_slurmdbd_up", SLURM): dbd},
                 [("1m", name, []) for name in expected]
                 + [("2m", name, [expected[name]] if name in firing else []) for name in expected])


def test_an_unreachable_exporter_fires_both_daemon_alerts():
    check_alerts(RULES, {series("up", SLURM): "0x5"},
                 [("1m", "SlurmctldDown", []),
                  ("2m", "SlurmctldDown", [alert("critical", CTLD, **SLURM)]),
                  ("2m", "SlurmdbdDown", [alert("warning", DBD, **SLURM)])])


def pending_and_idle(pending: dict[str, str], idle: str) -> dict[str, str]:
    """Jobs pending in partition gpu (by reason: their count, as values), and its idle GPUs."""
    found = {series("slurm_jobs_pending", {"partition": "gpu", "reason": reason, **SLURM}): values
             for reason, values in pending.items()}
    found[series("slurm_partition_gpus", {"partition": "gpu", "state": "idle", **SLURM})] = idle
    found[series("slurm_partition_gpus", {"partition": "gpu", "state": "total", **SLURM})] = "32x30"
    return found


def test_jobs_pending_on_resources_while_gpus_idle_fire_after_the_inventorys_minutes():
    waiting = alert("warning", "3 jobs of partition gpu wait for resources while GPUs of the partition sit idle, "
                               "for 20 minutes or more", partition="gpu")
    check_alerts(RULES, pending_and_idle({"Resources": "3x30", "Priority": "5x30"}, idle="4x30"),
                 [("19m", "JobsWaitWhileGpusIdle", []), ("20m", "JobsWaitWhileGpusIdle", [waiting])])


@pytest.mark.parametrize(("pending", "idle"), [
    ({"Resources": "0x30"}, "4x30"),       # GPUs idle, nothing waits
    ({"Priority": "5x30"}, "4x30"),        # jobs wait their turn, not for resources
    ({"Resources": "3x30"}, "0x30"),       # jobs wait for GPUs that are all busy
], ids=["nothing-pending", "pending-on-priority", "no-gpu-idle"])
def test_jobs_wait_while_gpus_idle_stays_quiet_otherwise(pending, idle):
    check_alerts(RULES, pending_and_idle(pending, idle), [("25m", "JobsWaitWhileGpusIdle", [])])


def test_a_host_whose_node_exporter_does_not_answer_fires_after_two_minutes():
    gpu02 = node_target("gpu02", "10.30.1.2")
    check_alerts(RULES, {series("up", gpu02): "0x5", series("up", node_target("ctl", "10.30.0.2",
                                                                               "controller,database")): "1x5"},
                 [("1m", "HostDown", []),
                  ("2m", "HostDown", [alert("critical", "Host gpu02 (compute) has not answered the node exporter "
                                                        "scrape for 2 minutes or more", **gpu02)])])


def test_a_dcgm_exporter_that_does_not_answer_fires_after_two_minutes_naming_its_node():
    gpu03 = {**node_target("gpu03", "10.30.1.3"), "instance": "10.30.1.3:9400", "job": "dcgm"}
    gpu04 = {**gpu03, "instance": "10.30.1.4:9400", "node": "gpu04"}
    check_alerts(RULES, {series("up", gpu03): "0x5", series("up", gpu04): "1x5"},
                 [("1m", "DcgmExporterDown", []),
                  ("2m", "DcgmExporterDown", [alert("warning", "The DCGM exporter on gpu03 has not answered for 2 "
                                                               "minutes or more: no GPU metrics from that node",
                                                    **gpu03)])])


def with_admission(**percents: float):
    """The golden cluster with admission on gpu01 and gpu02, each in the profile and falling_percent given."""
    plan = load(PROD)[0].admission["gpu-node-001"]
    admitted = {node: dataclasses.replace(plan, profile=profile,
                                          spec=plan.spec.model_copy(update={"falling_percent": percent}))
                for node, (profile, percent) in zip(("gpu01", "gpu02"), percents.items(), strict=True)}
    return alert_rules.render(dataclasses.replace(VALID, admission=admitted))


def test_a_node_more_than_its_profiles_share_below_its_baseline_or_median_fires_at_once():
    rules = with_admission(**{"hgx-h100": 10, "hgx-h200": 20})
    labels = {"test": "allreduce", "unit": "GB/s", **SLURM}
    below_baseline = {"node": "gpu01", "profile": "hgx-h100", **labels}
    below_median = {"node": "gpu03", "profile": "hgx-h100", **labels}
    within_its_share = {"node": "gpu02", "profile": "hgx-h200", **labels}  # 15 % below, its profile allows 20
    check_alerts(rules, {
        series("slurm_node_test_last", below_baseline): "420x3",
        series("slurm_node_test_baseline", below_baseline): "476x3",  # 11.8 % below
        series("slurm_node_test_median", below_baseline): "450x3",  # 6.7 % below
        series("slurm_node_test_last", below_median): "415x3",
        series("slurm_node_test_median", below_median): "468x3",  # 11.3 % below; it never passed: no baseline
        series("slurm_node_test_last", within_its_share): "400x3",
        series("slurm_node_test_baseline", within_its_share): "470x3",
        series("slurm_node_test_median", within_its_share): "470x3",
    }, [("0m", "NodeTestFalling", [
        alert("warning", "Node gpu01's last allreduce is 420 GB/s, more than 10 % below its baseline or the median "
              "of profile hgx-h100", **below_baseline),
        alert("warning", "Node gpu03's last allreduce is 415 GB/s, more than 10 % below its baseline or the median "
              "of profile hgx-h100", **below_median)])])


def test_no_rule_for_records_without_admission():
    assert "NodeTestFalling" not in RULES
