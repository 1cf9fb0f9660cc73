"""The Grafana dashboard of a cluster with Monitoring, written from the inventory. Grafana is not in Debian, so
clusterforge installs none: the file is for a site that runs one, to import (docs/inventory/monitoring.md).

Like the alert rules (alert_rules.py), the panels hold the cluster to its own description: each partition's usable
nodes and GPUs against what the inventory gives it, each GPU profile's nodes against the GPUs the profile declares,
drawn as constants beside what Prometheus measures. The metrics are the Slurm exporter's (``slurm_*``), the node
health check's (``clusterforge_health_*``), node exporter's (``node_*``, with the ``node`` label prometheus.yml gives
every machine) and Prometheus' own ``up``.
"""

from __future__ import annotations

import hashlib

from ..health.metrics import IB_COUNTER
from ..model import Hardware, MemberPartition, ValidCluster
from . import grafana
from .alert_rules import IB_RISING_MINUTES, NODE_JOB, SLURM_JOB, reads_ib_counters
from .grafana import COLUMNS, Json, Panel, Query, Section, stat, table, timeseries

FILE = "grafana-dashboard.json"
# Grafana refuses a longer uid ("uid too long, max 40 characters").
MAX_UID = 40
UID_PREFIX = "cf-"
# The variable that picks the hosts of the node exporter panels; Grafana replaces $node by a regex of the choice.
NODE_VARIABLE = "node"
NODE_VARIABLE_QUERY = f'label_values(up{{job="{NODE_JOB}"}}, node)'
DECLARED = "declared"  # the legend of the inventory's constants


def uid(cluster: str) -> str:
    """The dashboard's uid, the same at every render, so that importing again replaces the dashboard rather than
    adding a second one: the cluster's name where it fits, else its start and a digest of the whole name (two
    clusters whose names share a long start still differ)."""
    readable = UID_PREFIX + cluster
    if len(readable) <= MAX_UID:
        return readable
    digest = hashlib.sha256(cluster.encode()).hexdigest()[:12]
    return f"{readable[:MAX_UID - len(digest) - 1]}-{digest}"


def partition_matcher(name: str) -> str:
    """The label matcher of a partition's jobs. squeue prints a pending job submitted to several partitions under
    all of them at once ("gpu,all"), so such a job counts in each of its partitions. A partition name is letters,
    digits, '.', '-' and '_': only '.' means something in a regex, escaped here for the regex and the string."""
    literal = name.replace(".", "\\\\.")
    return f'partition=~"(.*,)?{literal}(,.*)?"'


def declared(count: int) -> Query:
    """A constant of the inventory as a series of its own, so the graph shows what is measured against it."""
    return Query(f"vector({count})", DECLARED)


def cluster_section(valid: ValidCluster, interval: str) -> Section:
    nodes = len(valid.nodes)
    # An unreachable exporter is no news of either daemon: shown as down, as the alerts fire for it.
    return Section(f"Cluster {valid.name}", (
        stat("slurmctld", f"Whether slurmctld on {valid.controller.name} answers the Slurm exporter; down also "
             "while the exporter cannot be scraped",
             Query(f'max(slurm_slurmctld_up) or max(up{{job="{SLURM_JOB}"}})'), good_from=1,
             mappings=grafana.up_down()),
        stat("slurmdbd", f"Whether slurmdbd on {valid.database.name} answers; down also while the Slurm exporter "
             "cannot be scraped", Query(f'max(slurm_slurmdbd_up) or max(up{{job="{SLURM_JOB}"}})'), good_from=1,
             mappings=grafana.up_down()),
        stat("Usable nodes", f"Nodes that can take jobs; red below the {nodes} the inventory declares",
             Query("sum(slurm_node_usable)"), good_from=nodes),
        timeseries("Nodes by state", "Slurm's nodes by state as sinfo prints it (idle, mixed, drained, down*, ...)",
                   (Query("count by (state) (slurm_node_state)", "{{state}}"),), interval=interval, stacked=True),
        table("Drained nodes", "Drained and draining nodes with their reason; owner clusterforge: a drain "
              "clusterforge set (cf:...), which it lifts itself; other: an admin's or Slurm's",
              Query("slurm_node_drain_info"), ("node", "owner", "reason")),
    ))


def partition_section(part: MemberPartition, gpus: int, interval: str) -> Section:
    """``gpus``: the GPUs of the partition's nodes as the inventory declares them; no GPU panel where none."""
    name, count, jobs = part.name, len(part.nodes), partition_matcher(part.name)
    usable = f'slurm_partition_nodes{{partition="{name}",state="usable"}}'
    total = f'slurm_partition_nodes{{partition="{name}",state="total"}}'
    panels: list[Panel] = [
        stat(f"{name}: usable nodes", f"Nodes of {name} that can take jobs; red below the {count} the inventory "
             "gives it", Query(usable), good_from=count),
        timeseries(f"{name}: nodes", f"Usable nodes of {name}, all its nodes as Slurm has them, and the {count} the "
                   "inventory gives it", (Query(usable, "usable"), Query(total, "in Slurm"), declared(count)),
                   interval=interval, declared=DECLARED, width=20 if not gpus else 10),
    ]
    if gpus:
        panels.append(timeseries(
            f"{name}: GPUs", f"GPUs of {name}: total, allocated to jobs, idle (free on usable nodes), and the {gpus} "
            "the inventory gives it", (Query(f'slurm_partition_gpus{{partition="{name}"}}', "{{state}}"),
                                       declared(gpus)),
            interval=interval, declared=DECLARED, width=10))
    panels += [
        timeseries(f"{name}: jobs by state", f"Jobs of {name} (each array task one) by state; a job waiting for "
                   "several partitions counts in each", (Query(f"sum by (state) (slurm_jobs{{{jobs}}})", "{{state}}"),),
                   interval=interval, stacked=True),
        timeseries(f"{name}: pending jobs by reason", f"Jobs of {name} waiting, by the reason Slurm gives "
                   "(Resources, Priority, ...)",
                   (Query(f"sum by (reason) (slurm_jobs_pending{{{jobs}}})", "{{reason}}"),),
                   interval=interval, stacked=True),
    ]
    return Section(f"Partition {name}", tuple(panels))


def profile_section(hardware: Hardware, interval: str) -> Section:
    """A GPU profile's nodes held to its GPU count, and the Xid events the health check counted on them."""
    name, count = hardware.name, hardware.profile.gpu_count
    seen = f'clusterforge_health_gpus{{profile="{name}"}}'
    return Section(f"GPU profile {name}", (
        stat(f"{name}: nodes short of GPUs", f"Nodes of {name} whose health check saw fewer than the {count} GPUs "
             "the profile declares", Query(f"count({seen} < {count}) or vector(0)"), bad_from=1),
        timeseries(f"{name}: GPUs seen", f"GPUs nvidia-smi listed at each node's last health check, and the "
                   f"{count} the profile declares", (Query(seen, "{{node}}"), declared(count)),
                   interval=interval, declared=DECLARED, width=10),
        # The Xid counter carries no profile: its nodes are those the GPU count names with this profile.
        timeseries(f"{name}: Xid events", "Xid events the health check counted on each node, by Xid, since the "
                   "node's health state was made; a step is a new event",
                   (Query(f"clusterforge_health_xid_events_total and on (node) {seen}", "{{node}} Xid {{xid}}"),),
                   interval=interval, width=10),
    ))


def links_section(interval: str) -> Section:
    """Link health: the rises of the HCAs' port error counters the health check reads (health/links.py), which
    InfinibandPortErrorsRising fires on and which drain the node past the inventory's limit. A counter reset (a
    reboot, perfquery -R) is no rise to increase()."""
    hosts = f'node=~"${NODE_VARIABLE}"'
    return Section("InfiniBand links", (
        stat("Ports with errors rising", f"InfiniBand ports of any node with a watched error counter that rose in the "
             f"last {IB_RISING_MINUTES} minutes, which InfinibandPortErrorsRising fires for",
             Query(f"count(sum by (node, hca, port) (increase({IB_COUNTER}[{IB_RISING_MINUTES}m])) > 0) or vector(0)"),
             bad_from=1),
        timeseries("InfiniBand port errors", "How much each watched error counter of an InfiniBand port rose, by node, "
                   "HCA, port and counter, as the health check read it on the hosts picked; only counters that rose "
                   "are drawn. A rise past the inventory's limit drains the node (cf:ib:...)",
                   (Query(f"sum by (node, hca, port, counter) (increase({IB_COUNTER}{{{hosts}}}[$__rate_interval])) "
                          "> 0", "{{node}} {{hca}} port {{port}} {{counter}}"),),
                   interval=interval, bars=True, width=COLUMNS - 4),
    ))


def scheduler_section(interval: str) -> Section:
    def cycle(prefix: str, who: str) -> Panel:
        return timeseries(f"{who} cycle", f"The {who.lower()}'s last cycle, and its mean and longest since midnight "
                          "UTC (sdiag's, which slurmctld resets then)",
                          (Query(f"slurm_scheduler_{prefix}last_cycle_seconds", "last"),
                           Query(f"slurm_scheduler_{prefix}mean_cycle_seconds", "mean"),
                           Query(f"slurm_scheduler_{prefix}max_cycle_seconds", "max")),
                          interval=interval, unit="s", width=8)

    return Section("Scheduler", (
        cycle("", "Main scheduler"),
        cycle("backfill_", "Backfill scheduler"),
        timeseries("slurmctld threads and queues", "Server threads in use, requests queued to send, and messages "
                   "held for slurmdbd (they grow while slurmdbd is away)",
                   (Query("slurm_scheduler_threads", "threads"),
                    Query("slurm_scheduler_agent_queue_size", "agent queue"),
                    Query("slurm_scheduler_dbd_agent_queue_size", "slurmdbd queue")),
                   interval=interval, width=8),
    ))


def hosts_section(interval: str) -> Section:
    hosts = f'node=~"${NODE_VARIABLE}"'
    return Section("Hosts", (
        timeseries("CPU busy", "Share of each host's CPU time not idle",
                   (Query(f'1 - avg by (node) (rate(node_cpu_seconds_total{{mode="idle",{hosts}}}[$__rate_interval]))',
                          "{{node}}"),), interval=interval, unit="percentunit", width=8),
        timeseries("Memory used", "Share of each host's memory not available to new programs",
                   (Query(f"1 - node_memory_MemAvailable_bytes{{{hosts}}} / node_memory_MemTotal_bytes{{{hosts}}}",
                          "{{node}}"),), interval=interval, unit="percentunit", width=8),
        # Per CPU, so a login host and a 224-thread GPU node read alike: 1 is every CPU busy or waited for.
        timeseries("Load per CPU", "Each host's 1-minute load average divided by its CPUs",
                   (Query(f"node_load1{{{hosts}}} / on (node) count by (node) "
                          f'(node_cpu_seconds_total{{mode="idle",{hosts}}})', "{{node}}"),),
                   interval=interval, width=8),
    ))


def variables() -> list[Json]:
    """The data source, picked at import; the hosts of the node exporter panels, all of them at first."""
    return [
        {"current": {}, "hide": 0, "includeAll": False, "label": "Prometheus", "multi": False,
         "name": grafana.DATASOURCE_VARIABLE, "options": [], "query": "prometheus", "refresh": 1, "regex": "",
         "type": "datasource"},
        {"allValue": ".+", "current": {"text": ["All"], "value": ["$__all"]}, "datasource": grafana.DATASOURCE,
         "definition": NODE_VARIABLE_QUERY, "hide": 0, "includeAll": True, "label": "Host", "multi": True,
         "name": NODE_VARIABLE, "options": [],
         "query": {"qryType": 1, "query": NODE_VARIABLE_QUERY, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
         "refresh": 2, "regex": "", "sort": 1, "type": "query"},
    ]


def sections(valid: ValidCluster) -> tuple[Section, ...]:
    assert valid.monitoring is not None
    # No step finer than a scrape: it would only repeat samples. It also makes $__rate_interval four scrapes.
    interval = f"{valid.monitoring.scrape_interval}s"
    gpus_of = {node.name: node.profile.gpu_count for node in valid.nodes}
    return (
        cluster_section(valid, interval),
        *(partition_section(part, sum(gpus_of[n] for n in part.nodes), interval) for part in valid.partitions),
        *(profile_section(hardware, interval) for hardware in valid.gpu_hardware if hardware.profile.gpu_count),
        *((links_section(interval),) if reads_ib_counters(valid) else ()),
        scheduler_section(interval),
        hosts_section(interval),
    )


def dashboard(valid: ValidCluster) -> Json:
    assert valid.monitoring is not None
    return {
        "annotations": {"list": []},
        "description": f"Slurm cluster {valid.name} (Slurm {valid.version}), generated by clusterforge from its "
                       "inventory: do not edit, change the inventory and render again.",
        "editable": True,
        "graphTooltip": 1,  # one crosshair across every panel
        "id": None,  # a new dashboard to Grafana; the uid is what an import matches
        "links": [],
        "panels": grafana.layout(sections(valid)),
        "refresh": grafana.refresh(valid.monitoring.scrape_interval),
        "schemaVersion": grafana.SCHEMA_VERSION,
        "tags": ["clusterforge", "slurm"],
        "templating": {"list": variables()},
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {"refresh_intervals": [name for name, _ in grafana.REFRESH_CHOICES]},
        "timezone": "browser",
        "title": f"Slurm cluster {valid.name}",
        "uid": uid(valid.name),
    }


def render(valid: ValidCluster) -> str | None:
    """The dashboard's JSON; None for a cluster without Monitoring, which has no Prometheus to read."""
    if valid.monitoring is None:
        return None
    return grafana.text(dashboard(valid))
