"""Prometheus' alert rules, written from the inventory: what a node or a partition should have is what the
inventory declares (the GPUs of each profile, the nodes of each partition), so an alert says what the cluster
lacks against its own description.

The metrics are the Slurm exporter's (``slurm_*``, on the controller, with the admission gate's records), the node
health check's (``clusterforge_*``, through node exporter's textfile collector) and Prometheus' own ``up`` (of node
exporter, the Slurm exporter and the DCGM exporter where a GPU stack has it); docs/inventory/monitoring.md says what
each alert means for an admin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..health.metrics import IB_COUNTER
from ..model import Machine, ValidCluster
from .stack import gpu_stack
from .text import fill, header

Severity = Literal["critical", "warning", "info"]
# The scrape jobs of prometheus.yml whose targets' ``up`` the rules read.
NODE_JOB = "node"
SLURM_JOB = "slurm"
DCGM_JOB = "dcgm"
# Minutes each condition holds before it is an alert: long enough that a restart or a reboot does not page anyone.
HOST_DOWN_MINUTES = 2
DAEMON_DOWN_MINUTES = 2
NODE_DOWN_MINUTES = 5
PARTITION_DEGRADED_MINUTES = 15
# Prometheus' template text in a summary: the alert's labels and the value of its expression, filled in as it fires.
NODE = "{{ $labels.node }}"
PARTITION = "{{ $labels.partition }}"
VALUE = "{{ $value }}"


def dcgm_exporter_machines(valid: ValidCluster) -> tuple[Machine, ...]:
    """The nodes whose GPU stack has the DCGM exporter."""
    return tuple(m for m in valid.machines if (found := gpu_stack(valid, m)) is not None and found.dcgm_exporter)


@dataclass(frozen=True, slots=True)
class Alert:
    """One alerting rule. ``summary`` is Prometheus' template text ({{ $labels.node }}, {{ $value }})."""

    name: str
    expr: str
    severity: Severity
    summary: str
    minutes: int = 0  # how long the condition holds before the alert fires; 0: at the first evaluation
    # Labels the rule sets besides its severity: the profile or partition of a rule written for one, as its series
    # already carry them. Two rules of one name need them to differ, or promtool refuses the file as duplicates.
    labels: tuple[tuple[str, str], ...] = ()

    @property
    def wait(self) -> str | None:
        """``for:`` of the rule, a Prometheus duration; None where it fires at once."""
        return f"{self.minutes}m" if self.minutes else None


def clusterforge_drained() -> Alert:
    # The exporter marks clusterforge's own drains (reason "cf:..."); an admin's drain is the admin's business.
    return Alert("ClusterforgeDrained", 'slurm_node_drain_info{owner="clusterforge"} == 1', "warning",
                 f"Node {NODE} drained by clusterforge: {{{{ $labels.reason }}}}")


def slurm_node_down() -> Alert:
    # One series per node whatever its flag: a node going from down* to down keeps its alert and its wait.
    return Alert("SlurmNodeDown", 'max by (node) (slurm_node_state{state=~"down[*]?"}) == 1', "warning",
                 f"Slurm node {NODE} has been down for {NODE_DOWN_MINUTES} minutes or more",
                 NODE_DOWN_MINUTES)


def gpus_missing(valid: ValidCluster) -> list[Alert]:
    """One rule per profile with GPUs, holding its nodes to the profile's count; a profile without GPUs has none."""
    return [Alert("NodeGpusMissing", f'clusterforge_health_gpus{{profile="{hardware.name}"}} < {count}', "warning",
                  f"Node {NODE} sees {VALUE} of the {count} GPUs its profile {hardware.name} declares",
                  labels=(("profile", hardware.name),))
            for hardware in valid.gpu_hardware if (count := hardware.profile.gpu_count)]


# How far back a rise of an InfiniBand port's error counter is alerted: six checks at the default interval.
IB_RISING_MINUTES = 30


def reads_ib_counters(valid: ValidCluster) -> bool:
    """Whether the nodes' health check exports their HCAs' port counters (IB_COUNTER) to a Prometheus: the
    infiniband probe reads them (health/links.py), and monitoring scrapes them."""
    return valid.health is not None and "infiniband" in valid.health.spec.probes and valid.monitoring is not None


def ib_port_errors_rising(valid: ValidCluster) -> list[Alert]:
    """A watched counter of an HCA's port that rose lately (health/links.py): most of them drain the node only past a
    limit, or never, and a link that starts to degrade is worth a look before that. Its rise past the limit drains
    the node (ClusterforgeDrained); a counter reset (a reboot, perfquery -R) is no rise to increase()."""
    if not reads_ib_counters(valid):
        return []
    port = "{{ $labels.hca }} port {{ $labels.port }}"
    return [Alert("InfinibandPortErrorsRising", f"increase({IB_COUNTER}[{IB_RISING_MINUTES}m]) > 0", "warning",
                  f"Node {NODE}'s InfiniBand {port} counted {{{{ $labels.counter }}}} in the last {IB_RISING_MINUTES} "
                  "minutes")]


def partitions_degraded(valid: ValidCluster) -> list[Alert]:
    """One rule per partition, holding it to the nodes the inventory gives it."""
    return [Alert("PartitionDegraded",
                  f'slurm_partition_nodes{{partition="{part.name}",state="usable"}} < {len(part.nodes)}', "warning",
                  f"Partition {part.name} has {VALUE} usable nodes of the {len(part.nodes)} the inventory "
                  f"declares, for {PARTITION_DEGRADED_MINUTES} minutes or more",
                  PARTITION_DEGRADED_MINUTES, labels=(("partition", part.name),))
            for part in valid.partitions if part.nodes]


def daemons_down(valid: ValidCluster) -> list[Alert]:
    # The exporter unreachable is no news of either daemon: that fires too, rather than silence. Both sides carry
    # the exporter target's labels only, so the alert is the same one whichever side says it.
    unreachable = f'up{{job="{SLURM_JOB}"}} == 0'
    controller = valid.controller.name
    return [
        Alert("SlurmctldDown", f"slurm_slurmctld_up == 0 or {unreachable}", "critical",
              f"slurmctld on {controller} is down, or the Slurm exporter there cannot be reached, for "
              f"{DAEMON_DOWN_MINUTES} minutes or more", DAEMON_DOWN_MINUTES),
        Alert("SlurmdbdDown", f"slurm_slurmdbd_up == 0 or {unreachable}", "warning",
              f"slurmdbd on {valid.database.name} is down, or the Slurm exporter on {controller} cannot be reached, "
              f"for {DAEMON_DOWN_MINUTES} minutes or more", DAEMON_DOWN_MINUTES),
    ]


def jobs_wait_while_gpus_idle(valid: ValidCluster) -> list[Alert]:
    """Jobs pending on Resources while GPUs of their partition sit idle, for long: GPUs scattered over nodes
    where each job wants them on one, a reservation, or a limit holding them. None on a cluster without GPUs."""
    if not valid.gpu_hardware or valid.monitoring is None:
        return []
    minutes = valid.monitoring.pending_minutes
    return [Alert("JobsWaitWhileGpusIdle",
                  '(sum by (partition) (slurm_jobs_pending{reason="Resources"}) > 0) and on (partition) '
                  '(sum by (partition) (slurm_partition_gpus{state="idle"}) > 0)', "warning",
                  f"{VALUE} jobs of partition {PARTITION} wait for resources while GPUs of "
                  f"the partition sit idle, for {minutes} minutes or more", minutes)]


def node_tests_falling(valid: ValidCluster) -> list[Alert]:
    """One rule per profile with admission: a node whose last number in a test (the gate's records, the Slurm
    exporter's slurm_node_test_*) is more than the profile's falling_percent below its baseline or its profile's
    median; fired at once, as a new number comes only with a new test."""
    percents = {plan.profile: plan.spec.falling_percent for plan in valid.admission.values()}
    rules = []
    for profile, percent in sorted(percents.items()):
        last, share = f'slurm_node_test_last{{profile="{profile}"}}', f"{1 - percent / 100:g}"
        rules.append(Alert(
            "NodeTestFalling",
            f'({last} < {share} * slurm_node_test_baseline{{profile="{profile}"}}) or '
            f'({last} < {share} * slurm_node_test_median{{profile="{profile}"}})', "warning",
            f"Node {NODE}'s last {{{{ $labels.test }}}} is {VALUE} {{{{ $labels.unit }}}}, more than {percent:g} % "
            f"below its baseline or the median of profile {profile}", labels=(("profile", profile),)))
    return rules


# The admission gate's drain of a node whose test cannot run where the gate sends it (gate/passes.py, cannot_run).
GATE_CANNOT_RUN = "cf:gate:cannot run"


def gate_cannot_run(valid: ValidCluster) -> list[Alert]:
    """Where a profile has admission: a node the gate holds and drained because its test cannot run (no partition
    of the node lets it, sbatch refused it, it waited past its bound). No pass of the gate changes that, and the node
    stays out of service until an admin does: named apart from ClusterforgeDrained, which fires for it too."""
    if not valid.admission:
        return []
    return [Alert("GateCannotRun",
                  f'slurm_node_drain_info{{owner="clusterforge",reason=~"{GATE_CANNOT_RUN}.*"}} == 1', "warning",
                  f"Node {NODE} is held by the admission gate and its test cannot run: {{{{ $labels.reason }}}}")]


def repair(valid: ValidCluster) -> list[Alert]:
    """Automatic repair's own (repair/metrics.py, node exporter's textfile on the controller): a node quarantined
    (its attempts ran out: an admin's now), the breaker open (too many nodes faulted at once: no new repair until an
    admin closes it), and what observe mode would repair."""
    if valid.repair is None:
        return []
    return [Alert("RepairQuarantined", "clusterforge_repair_quarantined == 1", "warning",
                  f"Node {NODE} is quarantined by automatic repair: its attempts ran out, and nothing automatic "
                  "touches it until an admin lifts its drain"),
            Alert("RepairBreakerOpen", "clusterforge_repair_breaker_open == 1", "critical",
                  "Automatic repair's breaker is open: more nodes faulted at once than the inventory allows (the "
                  "fabric, power or a driver?); no new repair until an admin runs clusterforge repair "
                  "--close-breaker"),
            Alert("RepairWouldAct", "clusterforge_repair_observed == 1", "info",
                  f"Automatic repair (observe mode) would repair node {NODE}")]


def host_down() -> Alert:
    return Alert("HostDown", f'up{{job="{NODE_JOB}"}} == 0', "critical",
                 f"Host {NODE} ({{{{ $labels.groups }}}}) has not answered the node exporter scrape for "
                 f"{HOST_DOWN_MINUTES} minutes or more", HOST_DOWN_MINUTES)


def dcgm_exporter_down(valid: ValidCluster) -> list[Alert]:
    """Only where a GPU stack of the cluster has the DCGM exporter (scraped as its own job)."""
    if not dcgm_exporter_machines(valid):
        return []
    return [Alert("DcgmExporterDown", f'up{{job="{DCGM_JOB}"}} == 0', "warning",
                  f"The DCGM exporter on {NODE} has not answered for {DAEMON_DOWN_MINUTES} minutes or more: no GPU "
                  "metrics from that node", DAEMON_DOWN_MINUTES)]


def alerts(valid: ValidCluster) -> tuple[Alert, ...]:
    """Every alerting rule of the cluster, in a fixed order."""
    return (clusterforge_drained(), slurm_node_down(), *gpus_missing(valid), *ib_port_errors_rising(valid),
            *partitions_degraded(valid),
            *daemons_down(valid), *jobs_wait_while_gpus_idle(valid), *node_tests_falling(valid),
            *gate_cannot_run(valid), *repair(valid), host_down(),
            *dcgm_exporter_down(valid))


def render(valid: ValidCluster) -> str:
    """The rules file prometheus.yml names (PROMETHEUS_RULES)."""
    return fill("prometheus-alerts.yml.j2", header=header(valid, "Prometheus' alert rules, from the inventory"),
                alerts=alerts(valid))
