"""The metric families of one scrape, from what the parsers read. Pure: records in, families out, each family's
series in a fixed order (sorted by their labels), so the same Slurm state gives the same text.

Cardinality is bounded by the cluster, never by its jobs: one series per node for its state and whether it can take
jobs, one more per GPU node for each of its GPU figures, drain info only for drained or draining nodes, and job
counts by partition, account, state and pending reason; no job id, user or node list.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from prometheus_client.core import GaugeMetricFamily

from ..slurm import reservations
from ..slurm.commands import Answer
from .jobs import Jobs
from ..slurm.nodes import Node
from .nodes import drain_owner, usable
from .records import Standing
from .sdiag import Figure


def _gauge(name: str, help: str, labels: list[str], series: Iterable[tuple[tuple[str, ...], float]]) \
        -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, help, labels=labels)
    for values, value in sorted(series):
        family.add_metric(list(values), value)
    return family


def node_families(nodes: list[Node]) -> list[GaugeMetricFamily]:
    gpu_nodes = [n for n in nodes if n.gpus]
    return [
        _gauge("slurm_node_state", "1 for each node, its state as sinfo's long form prints it (idle, mixed, "
               "drained, draining, down*, ...; a trailing * is a node that does not respond)",
               ["node", "state"], (((n.name, n.state), 1) for n in nodes)),
        _gauge("slurm_node_usable", "1 where the node can take jobs: it responds, and is not down, drained, "
               "draining, failing, rebooting, powering down or in maintenance", ["node"],
               (((n.name,), int(usable(n))) for n in nodes)),
        _gauge("slurm_node_drain_info", "1 for each drained or draining node, with its reason; owner is "
               "clusterforge for the drains clusterforge sets, other for anyone else's",
               ["node", "reason", "owner"], (((n.name, n.reason, drain_owner(n)), 1) for n in nodes if n.drained)),
        _gauge("slurm_node_gpus", "A GPU node's GPUs: total configured, alloc to jobs", ["node", "state"],
               [((n.name, "alloc"), n.gpus_alloc) for n in gpu_nodes]
               + [((n.name, "total"), n.gpus) for n in gpu_nodes]),
    ]


def hold_families(held: Mapping[str, str]) -> list[GaugeMetricFamily]:
    """The nodes the admission gate holds (slurm/reservations.py): one series per held node, none for the rest."""
    return [_gauge("slurm_node_gate_held", "1 for each node the admission gate holds out of service until its "
                   "tests pass, with why (cause: new or repaired) and its reservation (cf-gate-<cause>-<node>)",
                   ["node", "cause", "reservation"],
                   (((node, cause, reservations.name(cause, node)), 1) for node, cause in held.items()))]


def record_families(standings: list[Standing]) -> list[GaugeMetricFamily]:
    """Each node's record as the admission gate keeps it (records.py): per test with a number, its last, its
    baseline (none where it never passed) and its profile's median."""
    labels = ["node", "profile", "test", "unit"]

    def key(found: Standing) -> tuple[str, ...]:
        return found.standing.node, found.profile, found.standing.test, found.standing.unit

    return [
        _gauge("slurm_node_test_last", "A node's last number in an admission or acceptance test the gate ran "
               "(bus bandwidth and the like: lower is worse)", labels, ((key(f), f.standing.value) for f in standings)),
        _gauge("slurm_node_test_baseline", "A node's first passing number in the test: what it showed when it was "
               "admitted", labels, ((key(f), f.standing.baseline) for f in standings
                                    if f.standing.baseline is not None)),
        _gauge("slurm_node_test_median", "The median of the last numbers in the test of the nodes of the node's "
               "profile", labels, ((key(f), f.standing.median) for f in standings if f.standing.median is not None)),
    ]


def partition_families(nodes: list[Node]) -> list[GaugeMetricFamily]:
    """A node in several partitions counts in each."""
    counts: Counter[tuple[str, str]] = Counter()
    gpus: Counter[tuple[str, str]] = Counter()
    for node in nodes:
        up = usable(node)
        idle = max(node.gpus - node.gpus_alloc, 0) if up else 0
        for partition in node.partitions:
            counts[partition, "total"] += 1
            counts[partition, "usable"] += up
            gpus[partition, "total"] += node.gpus
            gpus[partition, "alloc"] += node.gpus_alloc
            gpus[partition, "idle"] += idle
    partitions = {p for p, _ in counts}
    return [
        _gauge("slurm_partition_nodes", "A partition's nodes: total, and usable (those that can take jobs)",
               ["partition", "state"], (((p, s), counts[p, s]) for p in partitions for s in ("total", "usable"))),
        _gauge("slurm_partition_gpus", "A partition's GPUs: total configured, alloc to jobs, idle (free on "
               "usable nodes)", ["partition", "state"],
               (((p, s), gpus[p, s]) for p in partitions for s in ("total", "alloc", "idle"))),
    ]


def job_families(jobs: Jobs) -> list[GaugeMetricFamily]:
    return [
        _gauge("slurm_jobs", "Jobs (each array task one) by partition, account and state (pending, running, "
               "completing, ...)", ["partition", "account", "state"], jobs.by_state.items()),
        _gauge("slurm_jobs_pending", "Pending jobs (each array task one) by partition and the reason they wait "
               "(Resources, Priority, ...)", ["partition", "reason"], jobs.pending.items()),
    ]


def scheduler_families(figures: Mapping[Figure, float]) -> list[GaugeMetricFamily]:
    return [_gauge(f.metric, f"{f.help} (sdiag)", [], [((), value)]) for f, value in figures.items()]


def up_families(slurmctld: bool, slurmdbd: bool) -> list[GaugeMetricFamily]:
    return [
        _gauge("slurm_slurmctld_up", "1 when slurmctld answered this scrape (sinfo, squeue or sdiag)", [],
               [((), int(slurmctld))]),
        _gauge("slurm_slurmdbd_up", "1 when slurmdbd answered this scrape (sacctmgr show cluster)", [],
               [((), int(slurmdbd))]),
    ]


def command_families(results: Mapping[str, Answer], ok: Mapping[str, bool]) -> list[GaugeMetricFamily]:
    return [
        _gauge("slurm_exporter_command_seconds", "How long each Slurm command of this scrape took", ["command"],
               (((name,), result.seconds) for name, result in results.items())),
        _gauge("slurm_exporter_command_ok", "1 when the command answered in time and its output was read; 0 "
               "leaves its metrics out of this scrape", ["command"], (((name,), int(ok[name])) for name in results)),
    ]
