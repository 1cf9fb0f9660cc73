"""The effective single-valued keys of slurm.conf and cgroup.conf for a cluster and a Slurm release: clusterforge's
choices, what the inventory decides, and the inventory's overrides, applied once (model/resolve.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from ..versions import (
    CGROUP_V2,
    DAEMONS_AS_SLURM,
    HEALTH_CHECK_TIMEOUT,
    NO_PMIX_PLUGIN,
    SLUID_CGROUPS,
    TOPOLOGY_DEFAULT,
    TOPOLOGY_FLAT,
    SlurmVersion,
)
from ..health.expect import BOUND_S
from .cluster import Cluster

SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818
SLURMDBD_PORT = 6819
# Every daemon's log file is here, slurmdbd's too; the deploy makes the directory the slurm user's.
SLURM_LOG_DIR = "/var/log/slurm"
# The node health check's launcher on every compute node (roles/health.py installs it).
HEALTH_PROGRAM = "/usr/sbin/clusterforge-health"
# The same program's checks at job boundaries: Slurm's Prolog and Epilog take no argument, so each has its launcher.
PROLOG_PROGRAM = "/usr/sbin/clusterforge-prolog"
EPILOG_PROGRAM = "/usr/sbin/clusterforge-epilog"
# Slurm's RebootProgram: the same program again, keeping a node's evidence of its hardware faults before it runs the
# inventory's reboot program (health/reboot.py).
REBOOT_PROGRAM = "/usr/sbin/clusterforge-reboot"
# What slurmd gives the health check from 26.05 (HealthCheckTimeout; 60 s and fixed before): the check bounds itself
# at BOUND_S, and Slurm logs an error where the timeout is not below HealthCheckInterval, whose least is 60.
HEALTH_CHECK_TIMEOUT_S = BOUND_S + 5

# The HS256 key of auth/jwt (Rest): read by slurmctld and slurmdbd only, which AuthAltParameters points at it (slurmdbd
# has no default); the deploy writes it 0600 slurm:slurm on the controllers and the database host alone.
SLURM_DIR = "/etc/slurm"
JWT_KEY = f"{SLURM_DIR}/jwt_hs256.key"

# slurmctld serves the Slurm files to every slurmd started with --conf-server (Cluster.configless).
CONFIGLESS = "enable_configless"

# Monitoring's ports, Debian's packages' own defaults: Prometheus scrapes what listens on them and the daemons' flags
# name them, both from here.
NODE_EXPORTER_PORT = 9100     # prometheus-node-exporter, on every machine of the cluster
SLURM_EXPORTER_PORT = 9341    # clusterforge's Slurm exporter, on the controller
PROMETHEUS_PORT = 9090        # on the monitoring host
ALERTMANAGER_PORT = 9093      # on the monitoring host
DCGM_EXPORTER_PORT = 9400     # NVIDIA's DCGM exporter, on the GPU nodes whose stack has one (GpuStack.dcgm_exporter)
# node exporter's textfile collector reads *.prom here (Debian's package default): the health check's metrics.
TEXTFILE_DIR = "/var/lib/prometheus/node-exporter"
# Where Debian's prometheus and prometheus-alertmanager read their configuration; the alert rules beside it.
PROMETHEUS_CONFIG = "/etc/prometheus/prometheus.yml"
PROMETHEUS_RULES = "/etc/prometheus/clusterforge-alerts.yml"
ALERTMANAGER_CONFIG = "/etc/prometheus/alertmanager.yml"
# Their command lines: the packages' units run the daemon with $ARGS from these files.
PROMETHEUS_DEFAULTS = "/etc/default/prometheus"
ALERTMANAGER_DEFAULTS = "/etc/default/prometheus-alertmanager"


def yes_no(flag: bool) -> str:
    """A boolean as Slurm's files spell it, for the keys clusterforge writes and the inventory's overrides alike."""
    return "YES" if flag else "NO"


def topology_plugin(version: SlurmVersion, fabric_plugin: str | None) -> str:
    """``fabric_plugin``: the inventory's choice ("tree" or "block"), None without a fabric."""
    if fabric_plugin is not None:
        return f"topology/{fabric_plugin}"
    # The flat plugin was renamed twice; the old names are accepted later but not earlier.
    if version >= TOPOLOGY_FLAT:
        return "topology/flat"
    if version >= TOPOLOGY_DEFAULT:
        return "topology/default"
    return "topology/none"


def preempt_settings(modes: Iterable[str]) -> dict[str, str]:
    """Cluster-wide preemption from the PreemptModes of the preemptable partitions."""
    modes = set(modes)
    if not modes:
        return {"PreemptType": "preempt/none"}
    # Suspending a job needs gang scheduling to resume it; requeue and cancel do not.
    return {"PreemptType": "preempt/partition_prio", "PreemptMode": "SUSPEND,GANG" if "SUSPEND" in modes else "REQUEUE"}


def slurm_conf(cluster: Cluster, version: SlurmVersion, fabric_plugin: str | None, gpu_types: Iterable[str],
               preempt_modes: Iterable[str], overrides: Mapping[str, str | None]) -> Mapping[str, str]:
    """Every single-valued slurm.conf key, sorted (case-insensitively) for stable diffs."""
    acct = cluster.accounting
    types = list(dict.fromkeys(gpu_types))
    owned: dict[str, str] = {
        "ClusterName": cluster.name,
        "SlurmUser": "slurm",
        "AuthType": f"auth/{cluster.auth}",
        # GPUs are scheduled per core; cons_tres is also the only selector topology/tree accepts from 24.05 on.
        "SelectType": "select/cons_tres",
        "TopologyPlugin": topology_plugin(version, fabric_plugin),
        "AccountingStorageType": "accounting_storage/slurmdbd",
        "AccountingStorageHost": cluster.database.name if cluster.database else "",
        "AccountingStorageEnforce": ",".join(acct.enforce),
        # 22.05 and older default to priority/basic; fairshare needs multifactor everywhere.
        "PriorityType": "priority/multifactor",
        "PriorityDecayHalfLife": acct.decay_half_life,
        "PriorityWeightFairshare": str(acct.weights.fairshare),
        "PriorityWeightAge": str(acct.weights.age),
        "PriorityWeightJobSize": str(acct.weights.job_size),
        "PriorityWeightPartition": str(acct.weights.partition),
        "PriorityWeightQOS": str(acct.weights.qos),
        **preempt_settings(preempt_modes),
    }
    if cluster.auth == "slurm":
        owned["CredType"] = "cred/slurm"
    if cluster.rest is not None:
        # A JWT is accepted besides the cluster's own authentication, by slurmctld alone (clients and slurmd never
        # load the alternative types); slurmrestd hands each caller's token on.
        owned["AuthAltTypes"] = "auth/jwt"
        owned["AuthAltParameters"] = f"jwt_key={JWT_KEY}"
    if cluster.health.enabled and cluster.nodes:
        owned["HealthCheckProgram"] = HEALTH_PROGRAM
        owned["HealthCheckInterval"] = str(cluster.health.interval)
        if version >= HEALTH_CHECK_TIMEOUT:
            owned["HealthCheckTimeout"] = str(HEALTH_CHECK_TIMEOUT_S)
        # ANY: drained nodes are checked too, so the check lifts its own drain once healthy (24.11's
        # NONDRAINED_IDLE would not); CYCLE spreads the checks over the interval instead of all nodes at once.
        owned["HealthCheckNodeState"] = "ANY,CYCLE"
        # The reboot gate: `scontrol reboot` works, and a node gets the time a real server needs to come back. The
        # inventory's reboot program runs through the wrapper, which keeps the evidence a reboot would wipe.
        owned["RebootProgram"] = REBOOT_PROGRAM
        owned["ResumeTimeout"] = str(cluster.health.reboot_timeout)
    job_checks = cluster.health.enabled and cluster.health.job_checks and bool(cluster.nodes)
    if job_checks:
        owned["Prolog"] = PROLOG_PROGRAM
        owned["Epilog"] = EPILOG_PROGRAM
    if types:
        owned["GresTypes"] = "gpu"
        # Each type is tracked too, so QOS and account limits may name gres/gpu:h100.
        owned["AccountingStorageTRES"] = ",".join(["gres/gpu", *(f"gres/gpu:{t}" for t in types)])
    defaults: dict[str, str] = {
        "SlurmctldPort": str(SLURMCTLD_PORT),
        "SlurmdPort": str(SLURMD_PORT),
        "AccountingStoragePort": str(SLURMDBD_PORT),
        "StateSaveLocation": "/var/lib/slurm/slurmctld",
        "SlurmdSpoolDir": "/var/lib/slurm/slurmd",
        # From 23.11 the packaged slurmctld unit runs as the slurm user with RuntimeDirectory=slurmctld, which
        # cannot write /run/slurmctld.pid; older units run it as root and expect exactly that path.
        "SlurmctldPidFile": "/run/slurmctld/slurmctld.pid" if version >= DAEMONS_AS_SLURM else "/run/slurmctld.pid",
        "SlurmdPidFile": "/run/slurmd.pid",
        "SlurmctldLogFile": f"{SLURM_LOG_DIR}/slurmctld.log",
        "SlurmdLogFile": f"{SLURM_LOG_DIR}/slurmd.log",
        "ProctrackType": "proctrack/cgroup",
        "TaskPlugin": "task/cgroup,task/affinity",
        "JobAcctGatherType": "jobacct_gather/cgroup",
        # Contain implies Alloc: the Prolog (clusterforge's GPU check) runs on every node at allocation, before the
        # batch script.
        "PrologFlags": "Contain",
        "SelectTypeParameters": "CR_Core_Memory",
        # PMIx where the release's packages have its plugin; Slurm's own default (no MPI set up) where they do not,
        # jobs asking for pmi2 with --mpi=pmi2.
        "MpiDefault": "pmix" if version < NO_PMIX_PLUGIN else "none",
        # Defaults that changed in 23.11, written out so a cluster behaves the same on every distribution.
        "TreeWidth": "16",
        "SchedulerType": "sched/backfill",
        # A job whose prolog fails (its node failed the GPU check) is requeued to run elsewhere, not held.
        "SchedulerParameters": "bf_continue,bf_max_job_test=1000" + (",nohold_on_prolog_fail" if job_checks else ""),
        "ReturnToService": "2",
        "SlurmctldTimeout": "120",
        "SlurmdTimeout": "300",
        "UnkillableStepTimeout": "180",
        # A training step with a dead rank is wasted GPU time: end the whole step when one task fails.
        "KillOnBadExit": "1",
        "EnforcePartLimits": "ALL",
    }
    if cluster.configless:
        # The site's own SlurmctldParameters are kept beside the one configless needs (model/rules/configless.py
        # refuses their removal).
        site = overrides.get("SlurmctldParameters")
        owned["SlurmctldParameters"] = with_configless(site)
        overrides = {key: value for key, value in overrides.items() if key != "SlurmctldParameters"}
    return _applied({**defaults, **owned}, overrides)


def with_configless(parameters: str | None) -> str:
    """SlurmctldParameters with enable_configless among them, once, after the site's own."""
    given = [p for p in (parameters or "").split(",") if p]
    return ",".join([*given, *([CONFIGLESS] if CONFIGLESS not in given else [])])


def cgroup_conf(version: SlurmVersion, overrides: Mapping[str, str | None]) -> Mapping[str, str]:
    """cgroup.conf: confine each job to its cores, memory and GPUs, with only keys the release accepts."""
    defaults = {
        "ConstrainCores": "YES",
        # Without it every job sees all eight GPUs of a node, whatever it asked for.
        "ConstrainDevices": "YES",
        "ConstrainRAMSpace": "YES",
        "ConstrainSwapSpace": "YES",
        "AllowedSwapSpace": "0",
    }
    if version < CGROUP_V2:
        # 21.08 has no cgroup/v2 plugin and defaults to v1 anyway; CgroupAutomount is defunct from 23.11.
        defaults["CgroupPlugin"] = "cgroup/v1"
        defaults["CgroupAutomount"] = "YES"
    else:
        defaults["CgroupPlugin"] = "autodetect"
    if version >= SLUID_CGROUPS:
        # The health check maps a GPU process to its job by the job_<id> directory of its cgroup (health/reads.py
        # job_of); from 26.05 cgroup/v2 names it by the job's SLUID unless asked not to (26.05.2 and later only:
        # a pinned 26.05.0 or .1 is refused, model/rules/stack.py).
        defaults["CgroupJobIdPaths"] = "yes"
    return _applied(defaults, overrides)


def _applied(defaults: Mapping[str, str], overrides: Mapping[str, str | None]) -> Mapping[str, str]:
    """Defaults with the inventory's overrides applied (None removes a key), sorted, read-only."""
    merged = dict(defaults)
    for key, value in overrides.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return MappingProxyType(dict(sorted(merged.items(), key=lambda item: item[0].lower())))
