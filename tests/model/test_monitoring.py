"""Rules for Monitoring: its host, its figures, its receiver."""

from __future__ import annotations

import pytest
from clusters import only_problem, small_cluster

from clusterforge.model import Host, Monitoring, resolve


def test_the_monitoring_host_is_a_machine_of_its_own_or_joins_a_service_host():
    alone = resolve(small_cluster(monitoring=Monitoring(host=Host("mon1", address="10.0.0.9"))))
    assert [m.groups for m in alone.machines if m.name == "mon1"] == [("monitoring",)]
    shared = resolve(small_cluster(monitoring=Monitoring(host=Host("ctl"))))
    ctl = next(m for m in shared.machines if m.name == "ctl")
    assert "monitoring" in ctl.groups and "controller" in ctl.groups
    assert shared.monitoring is not None and shared.monitoring.scrape_interval == 30


@pytest.mark.parametrize(("field", "value", "message"), [
    ("scrape_interval", 2, "monitoring.scrape_interval: 2 s: between 5 and 300 seconds"),
    ("retention_days", 0, "monitoring.retention_days: 0: at least 1"),
    ("pending_minutes", 0, "monitoring.pending_minutes: 0: at least 1"),
    ("group_wait", -1, "monitoring.group_wait: -1: between 0 and 3600 seconds"),
    ("group_interval", 0, "monitoring.group_interval: 0: between 1 and 86400 seconds"),
    ("repeat_hours", 200, "monitoring.repeat_hours: 200: between 1 and 168 hours"),
    ("webhook", "mail.example.org", "monitoring.webhook: 'mail.example.org' is not an http:// or https:// URL"),
])
def test_each_figure_and_the_receiver_are_checked(field, value, message):
    cluster = small_cluster(monitoring=Monitoring(host=Host("mon1"), **{field: value}))
    assert only_problem(cluster).startswith(message)


def test_its_host_takes_the_address_the_cluster_gives_that_name():
    cluster = small_cluster(monitoring=Monitoring(host=Host("ctl", address="10.99.0.1")))
    assert only_problem(cluster).startswith(
        "monitoring.host: ctl is already the name of controller, at 10.9.0.1: a name is one machine, with one "
        "address; give this one another name, or that address (")


def test_prometheus_on_a_compute_node_is_refused():
    problem = only_problem(small_cluster(monitoring=Monitoring(host=Host("gpu02"))))
    assert problem.startswith("monitoring.host: gpu02 is a compute node: Prometheus and Alertmanager would take")
