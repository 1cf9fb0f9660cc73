"""The dashboard's PromQL under the real tools: `promtool check rules` parses every panel's and variable's expression
as Grafana sends it (its variables replaced), `promtool test rules` evaluates what the panels show on series as
Prometheus holds them after scraping the golden cluster with monitoring (partition gpu of gpu[01-04], cpu of
cpu[1-2], profile hgx-h100 with 8 GPUs), and the real node exporter serves every node_* metric they read."""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from clusters import small_cluster
from dashboard_queries import INTERPOLATIONS, expressions, metric_names
from golden_cases import cases
from monitoring.tools import check_expressions, evaluate, require
from ports import free_port

from clusterforge.health.metrics import IB_COUNTER
from clusterforge.model import Gpus, Host, Monitoring, Nodes, Partition, Profile, ValidCluster, resolve
from clusterforge.render import dashboards

VALID = next(c for c in cases() if c.name == "monitoring").valid()
DASHBOARD = json.loads(dashboards.render(VALID))
SLURM = 'instance="10.30.0.2:9341",job="slurm"'  # the labels scraping the exporter adds


def others() -> dict[str, ValidCluster]:
    """Beside the golden cluster: names with a dot and a dash, two GPU profiles, and a cluster without GPUs."""
    a100 = Profile("a100.sxm-4", sockets=2, cores_per_socket=4, real_memory=4000,
                   gpus=Gpus(type="a100", count=4, files="/dev/nvidia[0-3]"))
    cpu = Profile("cpu", sockets=2, cores_per_socket=4, real_memory=4000)
    watch = Monitoring(host=Host("ctl"))
    return {
        "dotted": resolve(small_cluster(monitoring=watch, profiles=(*small_cluster().profiles, a100),
                                        nodes=(*small_cluster().nodes, Nodes("a[1-2]", profile="a100.sxm-4",
                                                                             leaf="leaf1")),
                                        partitions=(Partition("gpu.all-1", profiles=("gpu", "a100.sxm-4"),
                                                              default=True),))),
        "no-gpus": resolve(small_cluster(monitoring=watch, profiles=(cpu,),
                                         nodes=(Nodes("c[1-2]", profile="cpu", leaf="leaf1"),),
                                         partitions=(Partition("batch", profiles=("cpu",), default=True),))),
    }


CLUSTERS = {"golden": VALID, **others()}


@pytest.mark.parametrize("name", CLUSTERS)
def test_promtool_parses_every_expression_as_grafana_sends_it(name):
    found = expressions(json.loads(dashboards.render(CLUSTERS[name])))
    check_expressions([e.interpolated(values) for values in INTERPOLATIONS for e in found])


def panel_expr(title: str, ref: str = "A", values: dict[str, str] = INTERPOLATIONS[0]) -> str:
    (panel,) = [p for p in DASHBOARD["panels"] if p["title"] == title]
    (target,) = [t for t in panel["targets"] if t["refId"] == ref]
    expr = target["expr"]
    for name, value in values.items():
        expr = expr.replace(name, value)
    return expr


def test_slurmctld_shows_down_when_it_does_not_answer_and_when_the_exporter_cannot_be_scraped():
    expr = panel_expr("slurmctld")
    evaluate(expr, {f"slurm_slurmctld_up{{{SLURM}}}": "1x10", f"up{{{SLURM}}}": "1x10"}, {"{}": 1})
    evaluate(expr, {f"slurm_slurmctld_up{{{SLURM}}}": "0x10", f"up{{{SLURM}}}": "1x10"}, {"{}": 0})
    evaluate(expr, {f"up{{{SLURM}}}": "0x10"}, {"{}": 0})  # a failed scrape leaves no exporter series
    evaluate(panel_expr("slurmdbd"), {f"up{{{SLURM}}}": "0x10"}, {"{}": 0})


def test_a_partitions_jobs_count_those_waiting_for_it_among_others_not_another_partitions():
    evaluate(panel_expr("gpu: jobs by state"), {
        f'slurm_jobs{{{SLURM},partition="gpu",account="a",state="running"}}': "3x10",
        f'slurm_jobs{{{SLURM},partition="gpu",account="b",state="pending"}}': "1x10",
        f'slurm_jobs{{{SLURM},partition="cpu,gpu",account="a",state="pending"}}': "2x10",
        f'slurm_jobs{{{SLURM},partition="cpu",account="a",state="running"}}': "5x10",
    }, {'{state="running"}': 3, '{state="pending"}': 3})
    evaluate(panel_expr("cpu: pending jobs by reason"), {
        f'slurm_jobs_pending{{{SLURM},partition="cpu,gpu",reason="Resources"}}': "2x10",
        f'slurm_jobs_pending{{{SLURM},partition="gpu",reason="Priority"}}': "4x10",
    }, {'{reason="Resources"}': 2})


def health(node: str) -> str:
    return f'instance="{node}:9100",job="node",node="{node}"'


def test_nodes_short_of_gpus_are_counted_against_the_profiles_count_and_none_is_zero():
    expr = panel_expr("hgx-h100: nodes short of GPUs")
    gpus = 'clusterforge_health_gpus{{{},profile="hgx-h100"}}'
    evaluate(expr, {gpus.format(health("gpu01")): "8x10", gpus.format(health("gpu02")): "7x10",
                    gpus.format(health("gpu03")): "8x10"}, {"{}": 1})
    evaluate(expr, {gpus.format(health("gpu01")): "8x10"}, {"{}": 0})


def test_a_profiles_xid_events_are_those_of_its_own_nodes():
    evaluate(panel_expr("hgx-h100: Xid events"), {
        f'clusterforge_health_gpus{{{health("gpu01")},profile="hgx-h100"}}': "7x10",
        f'clusterforge_health_xid_events_total{{{health("gpu01")},xid="79"}}': "1x10",
        f'clusterforge_health_xid_events_total{{{health("cpu1")},xid="13"}}': "2x10",  # no GPU count: not the profile's
    }, {f'clusterforge_health_xid_events_total{{{health("gpu01")},xid="79"}}': 1})


def port(node: str, hca: str, counter: str) -> str:
    return f'{IB_COUNTER}{{{health(node)},hca="{hca}",port="1",counter="{counter}"}}'


# Sampled each minute: two counters rise at 3 m, one stays, one is reset (a reboot, perfquery -R: no rise).
IB_SERIES = {
    port("gpu01", "mlx5_4", "symbol_error"): "3 3 3 5x45",
    port("gpu01", "mlx5_4", "link_downed"): "0x48",
    port("gpu02", "mlx5_0", "link_downed"): "9 9 9 0x45",
    port("gpu03", "mlx5_1", "port_rcv_errors"): "1 1 1 4x45",
}


def test_the_link_health_graph_draws_only_the_counters_that_rose_by_node_hca_port_and_counter():
    # sgn: 1 for each series drawn (the rise as increase() extrapolates it over the window is Prometheus' business).
    rose = {'{counter="symbol_error",hca="mlx5_4",node="gpu01",port="1"}': 1,
            '{counter="port_rcv_errors",hca="mlx5_1",node="gpu03",port="1"}': 1}
    evaluate(f"sgn({panel_expr('InfiniBand port errors')})", IB_SERIES, rose, at="3m")
    picked = INTERPOLATIONS[1]  # gpu01 and login1
    evaluate(f"sgn({panel_expr('InfiniBand port errors', values=picked)})", IB_SERIES,
             {labels: 1 for labels in rose if 'node="gpu01"' in labels}, at="3m")
    evaluate(f"sgn({panel_expr('InfiniBand port errors')})", IB_SERIES, {}, at="10m")  # quiet since


def test_ports_with_errors_rising_counts_the_ports_the_alert_fires_for_over_its_thirty_minutes():
    expr = panel_expr("Ports with errors rising")
    evaluate(expr, IB_SERIES, {"{}": 2}, at="3m")
    evaluate(expr, IB_SERIES, {"{}": 2}, at="30m")
    evaluate(expr, IB_SERIES, {"{}": 0}, at="40m")


def host(node: str) -> str:
    return f'{health(node)},groups="compute"'


def test_host_panels_show_cpu_memory_and_load_per_cpu_of_the_hosts_picked():
    idle = 'node_cpu_seconds_total{{{},cpu="{}",mode="idle"}}'
    series = {
        # gpu01: two CPUs, one idle half the time, one all the time; load 3
        idle.format(host("gpu01"), 0): "0+30x10", idle.format(host("gpu01"), 1): "0+60x10",
        f'node_load1{{{host("gpu01")}}}': "3x10",
        f'node_memory_MemAvailable_bytes{{{host("gpu01")}}}': "25x10",
        f'node_memory_MemTotal_bytes{{{host("gpu01")}}}': "100x10",
        # gpu02, not picked in the second interpolation
        idle.format(host("gpu02"), 0): "0+60x10", f'node_load1{{{host("gpu02")}}}': "1x10",
        f'node_memory_MemAvailable_bytes{{{host("gpu02")}}}': "50x10",
        f'node_memory_MemTotal_bytes{{{host("gpu02")}}}': "100x10",
    }
    picked = INTERPOLATIONS[1]  # gpu01 and login1
    evaluate(panel_expr("CPU busy", values=picked), series, {'{node="gpu01"}': 0.25})
    evaluate(panel_expr("Memory used", values=picked), series, {f"{{{host('gpu01')}}}": 0.75})
    evaluate(panel_expr("Load per CPU", values=picked), series, {'{node="gpu01"}': 1.5})
    evaluate(panel_expr("Load per CPU"), series, {'{node="gpu01"}': 1.5, '{node="gpu02"}': 1})




def served(port: int, deadline: float) -> str:
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
                return response.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_node_exporter_serves_every_node_metric_the_dashboard_reads(tmp_path: Path):
    wanted = {name for e in expressions(DASHBOARD) for name in metric_names(e.expr) if name.startswith("node_")}
    assert wanted
    port = free_port()
    # As Debian's unit runs it: the default collectors (the textfile directory an empty one here).
    daemon = subprocess.Popen([require("prometheus-node-exporter"), f"--web.listen-address=127.0.0.1:{port}",
                               f"--collector.textfile.directory={tmp_path}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        text = served(port, time.monotonic() + 20)
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)
    names = set(re.findall(r"^([A-Za-z_:][A-Za-z0-9_:]*)[{ ]", text, re.MULTILINE))
    assert wanted <= names, wanted - names
