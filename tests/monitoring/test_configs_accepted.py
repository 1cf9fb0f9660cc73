"""Debian's own tools accept what clusterforge renders: `promtool check config` reads prometheus.yml and the rules
file it names, `amtool check-config` alertmanager.yml, and each daemon parses the command line of its /etc/default
file. For the golden cluster with monitoring, and for the inventory's extremes."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from clusters import small_cluster
from golden_cases import cases
from monitoring.tools import accepted, run

from clusterforge.model import Host, Monitoring, ValidCluster, resolve
from clusterforge.render import alert_rules, monitoring

WATCHED = next(c for c in cases() if c.name == "monitoring")


def extremes() -> dict[str, ValidCluster]:
    def with_monitoring(**fields) -> ValidCluster:
        return resolve(small_cluster(monitoring=Monitoring(host=Host("ctl"), **fields)))

    return {
        "golden": WATCHED.valid(),
        "fastest-no-webhook": with_monitoring(scrape_interval=5, retention_days=1, pending_minutes=1,
                                              group_wait=0, group_interval=1, repeat_hours=1),
        "slowest": with_monitoring(scrape_interval=300, retention_days=3650, pending_minutes=10_000,
                                   group_wait=3600, group_interval=86400, repeat_hours=168,
                                   webhook="http://10.9.0.50:8080/hook?cluster=t&x=1"),
    }


CLUSTERS = extremes()


@pytest.mark.parametrize("name", CLUSTERS)
def test_promtool_accepts_prometheus_yml_and_the_rules_it_names(name, tmp_path: Path):
    valid = CLUSTERS[name]
    rules = tmp_path / "clusterforge-alerts.yml"
    rules.write_text(alert_rules.render(valid))
    (tmp_path / "prometheus.yml").write_text(monitoring.prometheus_yml(valid, rules=str(rules)))
    result = run("promtool", "check", "config", "prometheus.yml", cwd=tmp_path)
    accepted(result)
    assert "SUCCESS: 1 rule files found" in result.stdout + result.stderr  # the rules were read, not skipped


@pytest.mark.parametrize("name", CLUSTERS)
def test_amtool_accepts_alertmanager_yml(name, tmp_path: Path):
    (tmp_path / "alertmanager.yml").write_text(monitoring.alertmanager_yml(CLUSTERS[name]))
    result = run("amtool", "check-config", "alertmanager.yml", cwd=tmp_path)
    accepted(result)
    assert " - 1 receivers" in result.stdout


def arguments(defaults: str) -> list[str]:
    """The words of ARGS="..." in an /etc/default file, as the unit passes them ($ARGS split on white space)."""
    (line,) = [line for line in defaults.splitlines() if line.startswith("ARGS=")]
    return shlex.split(line.removeprefix("ARGS="))


@pytest.mark.parametrize(("daemon", "defaults"), [("prometheus", monitoring.prometheus_defaults),
                                                  ("prometheus-alertmanager", monitoring.alertmanager_defaults)])
def test_each_daemon_knows_every_flag_of_its_command_line(daemon, defaults, tmp_path: Path):
    # The flags are parsed before --version is acted on: an unknown one fails, nothing starts.
    accepted(run(daemon, *arguments(defaults(WATCHED.valid())), "--version", cwd=tmp_path))
    assert run(daemon, "--no-such-flag", "--version", cwd=tmp_path).returncode != 0
