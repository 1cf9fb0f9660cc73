"""Monitoring's files from the inventory: what Prometheus scrapes and keeps, what each alert rule expects (the GPUs
of each profile, the nodes of each partition), where Alertmanager sends the alerts. tests/monitoring has the real
promtool and amtool read them and fire the rules."""

from __future__ import annotations

from clusters import small_cluster

from clusterforge.model import Host, Monitoring, Nodes, Partition, Profile, resolve
from clusterforge.model.settings import PROMETHEUS_RULES
from clusterforge.render import alert_rules, monitoring, render_all
from clusterforge.render.text import yaml_string

CPU = Profile("cpu", sockets=2, cores_per_socket=32, real_memory=64000)


def watched(monitoring_fields: dict | None = None, **cluster_fields):
    spec = Monitoring(host=Host("mon", address="10.9.0.9"), **(monitoring_fields or {}))
    return resolve(small_cluster(monitoring=spec, **cluster_fields))


def rules_named(valid, name: str) -> list[alert_rules.Alert]:
    return [a for a in alert_rules.alerts(valid) if a.name == name]


def test_a_cluster_without_monitoring_renders_none_of_its_files():
    valid = resolve(small_cluster())
    assert monitoring.files(valid) == {}
    assert "prometheus.yml" not in render_all(valid)


def test_the_monitoring_host_gets_prometheus_and_alertmanager_files_with_their_command_lines():
    files = monitoring.files(watched())
    assert list(files) == ["/etc/prometheus/prometheus.yml", PROMETHEUS_RULES, "/etc/default/prometheus",
                           "/etc/prometheus/alertmanager.yml", "/etc/default/prometheus-alertmanager"]
    flat = {"prometheus.yml", "clusterforge-alerts.yml", "prometheus.default", "alertmanager.yml",
            "prometheus-alertmanager.default"}
    assert flat <= set(render_all(watched()))


def test_every_machine_is_scraped_at_its_address_or_name_labelled_with_its_name_and_groups():
    valid = watched(login=(Host("login1"),))
    node, slurm, prometheus, alertmanager = monitoring.scrape_jobs(valid)
    assert [(t.endpoint, dict(t.labels)) for t in node.targets] == [
        ("10.9.0.1:9100", {"node": "ctl", "groups": "controller,database"}),
        ("login1:9100", {"node": "login1", "groups": "login"}),
        ("10.9.0.9:9100", {"node": "mon", "groups": "monitoring"}),
        *((f"10.9.1.{i}:9100", {"node": f"gpu0{i}", "groups": "compute"}) for i in range(1, 5)),
    ]
    assert [t.endpoint for t in slurm.targets] == ["10.9.0.1:9341"]  # the exporter on the controller
    assert [t.endpoint for t in prometheus.targets + alertmanager.targets] == ["localhost:9090", "localhost:9093"]
    text = monitoring.prometheus_yml(valid)
    assert "      - targets: ['login1:9100']\n        labels:\n          node: 'login1'\n" in text


def test_a_machine_on_ipv6_is_scraped_at_its_bracketed_address():
    valid = watched(login=(Host("login1", address="fd00::5"),))
    assert "[fd00::5]:9100" in [t.endpoint for t in monitoring.scrape_jobs(valid)[0].targets]


def test_scrape_interval_rules_and_alertmanager_come_from_the_inventory_retention_is_a_flag():
    valid = watched({"scrape_interval": 45, "retention_days": 7})
    text = monitoring.prometheus_yml(valid)
    assert "  scrape_interval: 45s\n  evaluation_interval: 45s\n" in text
    assert f"rule_files:\n  - '{PROMETHEUS_RULES}'\n" in text
    assert "        - targets: ['localhost:9093']\n" in text
    assert "retention" not in text
    assert monitoring.prometheus_defaults(valid).endswith(
        'ARGS="--config.file=/etc/prometheus/prometheus.yml --web.listen-address=:9090 '
        '--storage.tsdb.retention.time=7d"\n')


def test_a_profile_without_gpus_gets_no_gpu_rule():
    valid = watched(profiles=(small_cluster().profiles[0], CPU),
                    nodes=(*small_cluster().nodes, Nodes("cpu[1-2]", profile="cpu", leaf="leaf1")),
                    partitions=(Partition("batch", profiles=("gpu", "cpu"), default=True),))
    found = rules_named(valid, "NodeGpusMissing")
    assert [(a.expr, a.labels) for a in found] == [('clusterforge_health_gpus{profile="gpu"} < 4',
                                                    (("profile", "gpu"),))]


def test_a_cluster_without_gpus_gets_neither_gpu_rule():
    valid = watched(profiles=(CPU,), nodes=(Nodes("cpu[1-2]", profile="cpu", leaf="leaf1"),),
                    partitions=(Partition("batch", profiles=("cpu",), default=True),))
    names = [a.name for a in alert_rules.alerts(valid)]
    assert "NodeGpusMissing" not in names and "JobsWaitWhileGpusIdle" not in names
    assert "PartitionDegraded" in names and "HostDown" in names


def test_each_partition_is_held_to_the_node_count_the_inventory_declares_for_it():
    valid = watched(partitions=(Partition("batch", profiles=("gpu",), default=True),
                                Partition("pair", nodes="gpu[02-03]")))
    found = rules_named(valid, "PartitionDegraded")
    assert [(a.expr, a.wait, a.labels) for a in found] == [
        ('slurm_partition_nodes{partition="batch",state="usable"} < 4', "15m", (("partition", "batch"),)),
        ('slurm_partition_nodes{partition="pair",state="usable"} < 2', "15m", (("partition", "pair"),)),
    ]
    assert found[1].summary.startswith("Partition pair has {{ $value }} usable nodes of the 2 ")


def test_jobs_may_wait_while_gpus_idle_for_the_inventorys_minutes():
    (found,) = rules_named(watched({"pending_minutes": 45}), "JobsWaitWhileGpusIdle")
    assert found.wait == "45m" and "45 minutes" in found.summary


def test_the_daemon_alerts_name_the_controller_and_the_database_host():
    valid = watched(database=Host("db", address="10.9.0.2", memory=8192))
    (ctld,), (dbd,) = rules_named(valid, "SlurmctldDown"), rules_named(valid, "SlurmdbdDown")
    assert ctld.summary.startswith("slurmctld on ctl is down") and ctld.severity == "critical"
    assert dbd.summary.startswith("slurmdbd on db is down") and dbd.severity == "warning"


def test_every_alert_has_a_severity_and_a_summary():
    for alert in alert_rules.alerts(watched()):
        assert alert.severity in ("critical", "warning") and alert.summary, alert


def test_with_no_webhook_alerts_go_to_a_receiver_with_no_target():
    text = monitoring.alertmanager_yml(watched())
    assert "  receiver: 'nowhere'\n" in text and "  - name: 'nowhere'\n" in text
    assert "webhook_configs" not in text


def test_with_a_webhook_every_alert_and_its_resolution_is_posted_there_grouped_by_node_or_partition():
    text = monitoring.alertmanager_yml(watched({"webhook": "https://hooks.example.org/cf"}))
    assert ("receivers:\n  - name: 'webhook'\n    webhook_configs:\n"
            "      - url: 'https://hooks.example.org/cf'\n        send_resolved: true\n") in text
    assert "  group_by: ['alertname', 'node', 'partition']\n" in text


def test_alertmanagers_timing_is_the_inventorys():
    assert ("  group_wait: 30s\n  group_interval: 300s\n  repeat_interval: 4h\n"
            in monitoring.alertmanager_yml(watched()))
    assert ("  group_wait: 0s\n  group_interval: 10s\n  repeat_interval: 168h\n"
            in monitoring.alertmanager_yml(watched({"group_wait": 0, "group_interval": 10, "repeat_hours": 168})))


def test_alertmanager_runs_alone_without_gossip():
    assert monitoring.alertmanager_defaults(watched()).endswith(
        'ARGS="--config.file=/etc/prometheus/alertmanager.yml --web.listen-address=:9093 '
        '--cluster.listen-address="\n')


def test_yaml_strings_stay_strings_whatever_they_hold():
    assert yaml_string("on") == "'on'" and yaml_string("007") == "'007'"
    assert yaml_string('up{job="slurm"} == 0') == "'up{job=\"slurm\"} == 0'"
    assert yaml_string("it's") == "'it''s'"
    assert yaml_string("a\nb") == '"a\\nb"'


def test_every_alert_is_explained_on_the_monitoring_page():
    from golden_cases import ROOT, cases

    page = (ROOT / "docs" / "inventory" / "monitoring.md").read_text()
    valid = next(c for c in cases() if c.name == "monitoring").valid()
    for alert in alert_rules.alerts(valid):
        assert f"| `{alert.name}` | {alert.severity} |" in page and f"- **{alert.name}** —" in page, alert.name


def test_only_nodes_whose_gpu_stack_has_the_dcgm_exporter_are_scraped_for_it_and_alerted_on():
    from clusterforge.model import GpuStack, Stack

    without = watched(stack=Stack(gpu=GpuStack(driver="550.163.01-1", dcgm="1:4.5.2-1")))
    assert "dcgm" not in [j.name for j in monitoring.scrape_jobs(without)]
    assert not rules_named(without, "DcgmExporterDown")
    valid = watched(stack=Stack(gpu=GpuStack(driver="550.163.01-1", dcgm="1:4.5.2-1", dcgm_exporter="4.8.2-1")),
                    profiles=(small_cluster().profiles[0], CPU),
                    nodes=(*small_cluster().nodes, Nodes("cpu[1-2]", profile="cpu", leaf="leaf1")),
                    partitions=(Partition("batch", profiles=("gpu", "cpu"), default=True),))
    (job,) = [j for j in monitoring.scrape_jobs(valid) if j.name == "dcgm"]
    gpu_nodes = [m for m in valid.machines if m.node is not None and m.node.profile.gpus is not None]
    assert [dict(t.labels)["node"] for t in job.targets] == [m.name for m in gpu_nodes]
    assert all(t.endpoint.endswith(":9400") for t in job.targets)
    assert [a.expr for a in rules_named(valid, "DcgmExporterDown")] == ['up{job="dcgm"} == 0']
