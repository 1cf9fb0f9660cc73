"""The Grafana dashboard from the inventory: written only with Monitoring, the same bytes every time, importable
anywhere (the data source a variable, a uid of the cluster's name), each partition held to the nodes and GPUs the
inventory gives it and each GPU profile to its count, and nothing read that no exporter produces.
tests/monitoring has the real promtool parse every expression and evaluate what the panels show, and the real node
exporter serve the node_* metrics they read."""

from __future__ import annotations

import json
import re

import pytest
from clusters import gpu_profile, small_cluster
from dashboard_queries import expressions, metric_names
from golden_cases import cases

from clusterforge.exporter import families
from clusterforge.exporter.jobs import Jobs
from clusterforge.exporter.sdiag import FIGURES
from clusterforge.health import metrics
from clusterforge.health.expect import PROBES
from clusterforge.model import Health, Host, Monitoring, Nodes, Partition, Profile, resolve
from clusterforge.render import alert_rules, dashboards, grafana, render_all

CPU = Profile("cpu", sockets=2, cores_per_socket=32, real_memory=64000)
WATCHED = next(c for c in cases() if c.name == "monitoring")


def watched(monitoring_fields: dict | None = None, **cluster_fields):
    spec = Monitoring(host=Host("mon", address="10.9.0.9"), **(monitoring_fields or {}))
    return resolve(small_cluster(monitoring=spec, **cluster_fields))


def board(valid) -> dict:
    return json.loads(dashboards.render(valid))


def panels(dashboard: dict, title: str) -> list[dict]:
    return [p for p in dashboard["panels"] if p["title"] == title]


def exprs(panel: dict) -> list[tuple[str, str | None]]:
    return [(t["expr"], t.get("legendFormat")) for t in panel["targets"]]


def test_a_cluster_without_monitoring_has_no_dashboard():
    valid = resolve(small_cluster())
    assert dashboards.render(valid) is None
    assert dashboards.FILE not in render_all(valid)


def test_render_writes_the_dashboard_as_json_grafana_reads():
    text = render_all(WATCHED.valid())[dashboards.FILE]
    found = json.loads(text)
    assert found["schemaVersion"] == grafana.SCHEMA_VERSION and found["id"] is None
    assert found["uid"] == "cf-watched" and found["title"] == "Slurm cluster watched"
    assert found["panels"] and "do not edit" in found["description"]


def test_the_same_inventory_renders_the_same_bytes_keys_sorted_two_space_indent():
    first, second = dashboards.render(WATCHED.valid()), dashboards.render(WATCHED.valid())  # two resolves
    assert first == second
    assert grafana.text(json.loads(first)) == first  # already sorted, indented by two, one final newline
    assert first.startswith('{\n  "annotations": ') and first.endswith("}\n")


def test_nothing_in_the_file_changes_with_the_clock():
    # No timestamps (Grafana's export has none either: "time" is a relative range) and no generated ids.
    text = dashboards.render(WATCHED.valid())
    assert not re.search(r"\d{4}-\d\d-\d\d|\d{10}", text)
    found = json.loads(text)
    assert found["time"] == {"from": "now-6h", "to": "now"}
    assert [p["id"] for p in found["panels"]] == list(range(1, len(found["panels"]) + 1))


def test_the_uid_is_the_clusters_name_or_for_a_long_name_its_start_and_a_digest_within_grafanas_40():
    assert dashboards.uid("watched") == "cf-watched"
    long_a, long_b = "a" * 39 + "1", "a" * 39 + "2"  # the longest names the inventory accepts, one start
    uid_a, uid_b = dashboards.uid(long_a), dashboards.uid(long_b)
    assert len(uid_a) == len(uid_b) == 40 and uid_a != uid_b
    assert uid_a == dashboards.uid(long_a) and re.fullmatch(r"[A-Za-z0-9_-]+", uid_a)
    assert dashboards.uid("a" * 37) == "cf-" + "a" * 37  # 40: still the name itself


def test_every_panel_and_variable_reads_the_data_source_the_importer_picks():
    found = board(WATCHED.valid())
    (source,) = [v for v in found["templating"]["list"] if v["type"] == "datasource"]
    assert source["name"] == "datasource" and source["query"] == "prometheus"
    ref = {"type": "prometheus", "uid": "${datasource}"}
    for panel in found["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"] == ref and all(t["datasource"] == ref for t in panel["targets"]), panel["title"]
    (hosts,) = [v for v in found["templating"]["list"] if v["type"] == "query"]
    assert hosts["datasource"] == ref and hosts["includeAll"] and hosts["allValue"] == ".+"


def test_every_panel_lies_on_grafanas_grid_without_overlapping_another():
    taken: set[tuple[int, int]] = set()
    for panel in board(WATCHED.valid())["panels"]:
        box = panel["gridPos"]
        assert box["x"] >= 0 and box["x"] + box["w"] <= 24, panel["title"]
        cells = {(x, y) for x in range(box["x"], box["x"] + box["w"]) for y in range(box["y"], box["y"] + box["h"])}
        assert not cells & taken, panel["title"]
        taken |= cells


def test_each_partition_is_held_to_the_nodes_and_gpus_the_inventory_gives_it():
    valid = watched(profiles=(gpu_profile(), CPU),
                    nodes=(*small_cluster().nodes, Nodes("cpu[1-3]", profile="cpu", leaf="leaf1")),
                    partitions=(Partition("batch", profiles=("gpu",), default=True),
                                Partition("pair", nodes="gpu[02-03]"), Partition("cpus", profiles=("cpu",))))
    found = board(valid)
    rows = [p["title"] for p in found["panels"] if p["type"] == "row"]
    assert rows == ["Cluster t", "Partition batch", "Partition pair", "Partition cpus", "GPU profile gpu",
                    "InfiniBand links", "Scheduler", "Hosts"]
    (pair_nodes,) = panels(found, "pair: nodes")
    assert exprs(pair_nodes) == [('slurm_partition_nodes{partition="pair",state="usable"}', "usable"),
                                 ('slurm_partition_nodes{partition="pair",state="total"}', "in Slurm"),
                                 ("vector(2)", "declared")]
    (batch_gpus,) = panels(found, "batch: GPUs")
    assert exprs(batch_gpus)[1] == ("vector(16)", "declared")  # 4 nodes of 4 GPUs
    (pair_gpus,) = panels(found, "pair: GPUs")
    assert exprs(pair_gpus)[1] == ("vector(8)", "declared")
    assert not panels(found, "cpus: GPUs")  # a partition without GPUs has no GPU panel
    (usable,) = panels(found, "cpus: usable nodes")
    assert [s["value"] for s in usable["fieldConfig"]["defaults"]["thresholds"]["steps"]] == [None, 3]
    (cluster_usable,) = panels(found, "Usable nodes")  # the whole cluster: 4 GPU and 3 CPU nodes
    assert cluster_usable["fieldConfig"]["defaults"]["thresholds"]["steps"][1]["value"] == 7


def partition_regex(expr: str) -> str:
    """The regex of a partition=~"..." matcher, as Prometheus reads the string."""
    (literal,) = re.findall(r'partition=~"((?:[^"\\]|\\.)*)"', expr)
    return literal.encode().decode("unicode_escape")


@pytest.mark.parametrize(("name", "listed", "not_listed"), [
    ("gpu", ["gpu", "gpu,all", "all,gpu", "debug,gpu,all"], ["gpu2", "agpu", "all", "gpu2,all"]),
    ("a.b", ["a.b", "x,a.b"], ["axb", "a.bc"]),  # the dot is a dot
])
def test_a_partitions_jobs_include_those_waiting_for_it_among_others(name, listed, not_listed):
    valid = watched(partitions=(Partition(name, profiles=("gpu",), default=True),))
    for title in (f"{name}: jobs by state", f"{name}: pending jobs by reason"):
        ((expr, _),) = exprs(panels(board(valid), title)[0])
        regex = partition_regex(expr)
        assert all(re.fullmatch(regex, p) for p in listed), (regex, listed)
        assert not any(re.fullmatch(regex, p) for p in not_listed), (regex, not_listed)


def test_each_gpu_profile_is_held_to_its_gpu_count_and_a_cpu_profile_has_no_such_row():
    found = board(WATCHED.valid())
    assert [p["title"] for p in found["panels"] if p["title"].startswith("GPU profile")] == ["GPU profile hgx-h100"]
    (seen,) = panels(found, "hgx-h100: GPUs seen")
    assert exprs(seen) == [('clusterforge_health_gpus{profile="hgx-h100"}', "{{node}}"), ("vector(8)", "declared")]
    (short,) = panels(found, "hgx-h100: nodes short of GPUs")
    assert exprs(short) == [('count(clusterforge_health_gpus{profile="hgx-h100"} < 8) or vector(0)', None)]
    (xids,) = panels(found, "hgx-h100: Xid events")
    assert "on (node) clusterforge_health_gpus{profile=\"hgx-h100\"}" in exprs(xids)[0][0]


def test_link_health_shows_each_ports_error_counters_rising_as_the_alert_reads_them():
    found = board(WATCHED.valid())
    rows = [p["title"] for p in found["panels"] if p["type"] == "row"]
    assert rows.index("InfiniBand links") == rows.index("GPU profile hgx-h100") + 1
    (graph,) = panels(found, "InfiniBand port errors")
    assert exprs(graph) == [(f'sum by (node, hca, port, counter) (increase({metrics.IB_COUNTER}{{node=~"$node"}}'
                             "[$__rate_interval])) > 0", "{{node}} {{hca}} port {{port}} {{counter}}")]
    assert graph["type"] == "timeseries" and graph["fieldConfig"]["defaults"]["custom"]["drawStyle"] == "bars"
    (rising,) = panels(found, "Ports with errors rising")
    ((expr, _),) = exprs(rising)
    # The alert's own window and counter: the stat counts the ports InfinibandPortErrorsRising fires for.
    (alert,) = alert_rules.ib_port_errors_rising(WATCHED.valid())
    assert f"increase({metrics.IB_COUNTER}[{alert_rules.IB_RISING_MINUTES}m])" in expr
    assert alert.expr.startswith(f"increase({metrics.IB_COUNTER}[{alert_rules.IB_RISING_MINUTES}m])")
    assert [s["value"] for s in rising["fieldConfig"]["defaults"]["thresholds"]["steps"]] == [None, 1]


def test_a_cluster_whose_health_check_reads_no_hca_counters_has_no_link_health_row():
    valid = watched(health=Health(probes=tuple(p for p in PROBES if p != "infiniband")))
    found = board(valid)
    assert "InfiniBand links" not in [p["title"] for p in found["panels"]]
    assert not [e for e in expressions(found) if metrics.IB_COUNTER in e.expr]
    assert alert_rules.ib_port_errors_rising(valid) == []   # nor an alert to count for


def test_a_declared_count_is_drawn_as_its_own_dashed_series():
    (seen,) = panels(board(WATCHED.valid()), "gpu: nodes")
    (override,) = seen["fieldConfig"]["overrides"]
    assert override["matcher"] == {"id": "byName", "options": "declared"}
    assert {"id": "custom.lineStyle", "value": {"dash": [10, 10], "fill": "dash"}} in override["properties"]


@pytest.mark.parametrize(("scrape", "refresh"), [(5, "5s"), (15, "30s"), (30, "30s"), (45, "1m"), (300, "5m")])
def test_graphs_step_and_refresh_no_finer_than_a_scrape(scrape, refresh):
    found = board(watched({"scrape_interval": scrape}))
    assert found["refresh"] == refresh and refresh in found["timepicker"]["refresh_intervals"]
    graphs = [p for p in found["panels"] if p["type"] == "timeseries"]
    assert graphs and all(p["interval"] == f"{scrape}s" for p in graphs)


def produced() -> set[str]:
    """Every metric the Slurm exporter and the health check write, by name."""
    exporter = [*families.node_families([]), *families.partition_families([]), *families.job_families(Jobs()),
                *families.scheduler_families({f: 0.0 for f in FIGURES}), *families.up_families(True, True),
                *families.command_families({}, {})]
    health = re.findall(r"^# TYPE (\S+) ", metrics.text("n", "p", 8, 0, {"xid79": 1}, 0), re.MULTILINE)
    return {f.name for f in exporter} | set(health)


def test_every_metric_a_panel_reads_is_one_an_exporter_produces():
    used = set().union(*(metric_names(e.expr) for e in expressions(board(WATCHED.valid()))))
    # node_*: node exporter's, which tests/monitoring has the real one serve; up: Prometheus' own of every target.
    ours = {name for name in used if not name.startswith("node_") and name != "up"}
    assert ours <= produced(), ours - produced()
    assert {"slurm_node_state", "slurm_node_drain_info", "slurm_partition_nodes", "slurm_partition_gpus", "slurm_jobs",
            "slurm_jobs_pending", "clusterforge_health_gpus", "clusterforge_health_xid_events_total",
            "slurm_slurmctld_up", "slurm_slurmdbd_up", "slurm_scheduler_backfill_max_cycle_seconds",
            metrics.IB_COUNTER} <= used
    assert {n for n in used if n.startswith("node_")} == {"node_cpu_seconds_total", "node_memory_MemAvailable_bytes",
                                                          "node_memory_MemTotal_bytes", "node_load1"}


def test_metric_names_are_read_from_an_expression_without_its_labels_functions_or_keywords():
    expr = ('sum by (node) (rate(node_cpu_seconds_total{mode="idle",node=~"$node"}[$__rate_interval])) '
            'and on (node) up{job="node"} or vector(0)')
    assert metric_names(expr) == {"node_cpu_seconds_total", "up"}
