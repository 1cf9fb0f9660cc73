"""Monitoring's files on the monitoring host: Prometheus' configuration (what it scrapes, where its rules are,
where it sends alerts), Alertmanager's (where the alerts go), and each daemon's command line in /etc/default. Only
for a cluster with Monitoring; the rules themselves are alert_rules.py's."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from ..model import Machine, ValidCluster
from ..model.settings import (
    ALERTMANAGER_CONFIG,
    ALERTMANAGER_DEFAULTS,
    ALERTMANAGER_PORT,
    DCGM_EXPORTER_PORT,
    NODE_EXPORTER_PORT,
    PROMETHEUS_CONFIG,
    PROMETHEUS_DEFAULTS,
    PROMETHEUS_PORT,
    PROMETHEUS_RULES,
    SLURM_EXPORTER_PORT,
)
from . import alert_rules
from .alert_rules import DCGM_JOB, NODE_JOB, SLURM_JOB, dcgm_exporter_machines
from .text import fill, header

# The labels Alertmanager groups by: one notification per alert and node or partition, not one per firing series.
GROUP_BY = ("alertname", "node", "partition")


@dataclass(frozen=True, slots=True)
class Target:
    endpoint: str  # host:port
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ScrapeJob:
    name: str
    targets: tuple[Target, ...]
    # Keep the target's own labels where they clash with the job's: the health check's textfile metrics name their
    # node as the target does, and would otherwise get an exported_node copy of the label.
    honor_labels: bool = False


def endpoint(host: str, port: int) -> str:
    # An IPv6 address is bracketed, as in a URL: its colons are not the port's.
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def reach(machine: Machine) -> str:
    return machine.address or machine.name


def node_target(machine: Machine) -> Target:
    """A machine's node exporter, labelled with the machine's name and groups: an alert on it names both."""
    return Target(endpoint(reach(machine), NODE_EXPORTER_PORT),
                  (("node", machine.name), ("groups", ",".join(machine.groups))))


def scrape_jobs(valid: ValidCluster) -> tuple[ScrapeJob, ...]:
    """Every machine's node exporter, the Slurm exporter on the controller, the monitoring host's own two daemons
    (at localhost: Prometheus runs beside them), and the DCGM exporters."""
    controller = next(m for m in valid.machines if m.name == valid.controller.name)
    return (
        ScrapeJob(NODE_JOB, tuple(node_target(m) for m in valid.machines), honor_labels=True),
        ScrapeJob(SLURM_JOB, (Target(endpoint(reach(controller), SLURM_EXPORTER_PORT)),)),
        ScrapeJob("prometheus", (Target(endpoint("localhost", PROMETHEUS_PORT)),)),
        ScrapeJob("alertmanager", (Target(endpoint("localhost", ALERTMANAGER_PORT)),)),
        *dcgm_job(valid),
    )


def dcgm_job(valid: ValidCluster) -> tuple[ScrapeJob, ...]:
    """The DCGM exporter of every node whose GPU stack has it, labelled as its node exporter is (a GPU's series
    join the node's on ``node``); no job where none has it."""
    machines = dcgm_exporter_machines(valid)
    if not machines:
        return ()
    return (ScrapeJob(DCGM_JOB, tuple(Target(endpoint(reach(m), DCGM_EXPORTER_PORT), node_target(m).labels)
                                      for m in machines)),)


def prometheus_yml(valid: ValidCluster, rules: str = PROMETHEUS_RULES) -> str:
    """Prometheus' configuration; ``rules``: the path of the rules file on the host."""
    assert valid.monitoring is not None
    # Rules are evaluated as often as samples arrive: a condition is seen at the first scrape that shows it.
    interval = f"{valid.monitoring.scrape_interval}s"
    return fill("prometheus.yml.j2", header=header(valid, "Prometheus' configuration: what it scrapes, its rules, "
                                                          "its Alertmanager"),
                interval=interval, cluster=valid.name, rules=rules,
                alertmanager=endpoint("localhost", ALERTMANAGER_PORT), jobs=scrape_jobs(valid))


def command_line(valid: ValidCluster, daemon: str, flags: list[str]) -> str:
    """An /etc/default file of Debian's units, which run the daemon with $ARGS."""
    purpose = f"the command line of {daemon}, which Debian's unit runs with $ARGS"
    return fill("keyvalue.conf.j2", header=header(valid, purpose),
                settings=[("ARGS", '"' + " ".join(flags) + '"')])


def prometheus_defaults(valid: ValidCluster) -> str:
    """Retention is a flag of Prometheus, not a key of its configuration."""
    assert valid.monitoring is not None
    return command_line(valid, "Prometheus", [f"--config.file={PROMETHEUS_CONFIG}",
                                              f"--web.listen-address=:{PROMETHEUS_PORT}",
                                              f"--storage.tsdb.retention.time={valid.monitoring.retention_days}d"])


def alertmanager_yml(valid: ValidCluster) -> str:
    """One route, to the inventory's webhook; without one, to a receiver that sends nothing (the alerts are still
    shown by Prometheus and Alertmanager). Its timing is the inventory's, written out even where it is
    Alertmanager's own default, so the file says when a post comes."""
    assert valid.monitoring is not None
    found = valid.monitoring
    return fill("alertmanager.yml.j2", header=header(valid, "Alertmanager's configuration: where alerts go"),
                receiver="webhook" if found.webhook else "nowhere", webhook=found.webhook, group_by=GROUP_BY,
                group_wait=f"{found.group_wait}s", group_interval=f"{found.group_interval}s",
                repeat_interval=f"{found.repeat_hours}h")


def alertmanager_defaults(valid: ValidCluster) -> str:
    # One Alertmanager, no peers: without the empty listen address it gossips on 0.0.0.0:9094 and, on a host with
    # no private IP address, exits at start ("No private IP address found, and explicit IP not provided").
    return command_line(valid, "Alertmanager", [f"--config.file={ALERTMANAGER_CONFIG}",
                                                f"--web.listen-address=:{ALERTMANAGER_PORT}",
                                                "--cluster.listen-address="])


def files(valid: ValidCluster) -> dict[str, str]:
    """Path on the monitoring host -> text, in a fixed order; nothing for a cluster without Monitoring."""
    if valid.monitoring is None:
        return {}
    return {
        PROMETHEUS_CONFIG: prometheus_yml(valid),
        PROMETHEUS_RULES: alert_rules.render(valid),
        PROMETHEUS_DEFAULTS: prometheus_defaults(valid),
        ALERTMANAGER_CONFIG: alertmanager_yml(valid),
        ALERTMANAGER_DEFAULTS: alertmanager_defaults(valid),
    }


def flat_name(path: str) -> str:
    """A file's name in ``clusterforge render``'s one directory: /etc/default/prometheus is prometheus.default."""
    directory, name = posixpath.split(path)
    return f"{name}.default" if directory == "/etc/default" else name
