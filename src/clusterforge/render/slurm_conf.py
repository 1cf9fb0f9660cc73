"""slurm.conf: the controller, daemons' paths and plugins, nodes grouped by hardware, partitions."""

from __future__ import annotations

from collections.abc import Sequence

from .. import hostlists
from ..hostlists import Numbered
from ..model import Node, ValidCluster
from ..model.hosts import Host
from ..versions import v
from .text import apply_overrides, fill, header, pairs, yes_no

SLURMCTLD_PORT = 6817
SLURMD_PORT = 6818
SLURMDBD_PORT = 6819


def topology_plugin(valid: ValidCluster) -> str:
    if valid.has_fabric:
        return "topology/tree"
    # The flat plugin was renamed twice; the old names are accepted later but not earlier.
    if valid.version >= v("25.05"):
        return "topology/flat"
    if valid.version >= v("23.11"):
        return "topology/default"
    return "topology/none"


def _controller(host: Host) -> str:
    return f"{host.name}({host.address})" if host.address else host.name


def _preemption(valid: ValidCluster) -> tuple[dict[str, str], dict[str, str]]:
    """Cluster-wide preemption keys, and each preemptable partition's PreemptMode."""
    preempted = {target for p in valid.spec.partitions for target in p.preempts}
    if not preempted:
        return {"PreemptType": "preempt/none"}, {}
    modes = {p.name: p.preempt_mode.upper() for p in valid.spec.partitions if p.name in preempted}
    # Suspending a job needs gang scheduling to resume it; requeue and cancel do not.
    cluster_mode = "SUSPEND,GANG" if "SUSPEND" in modes.values() else "REQUEUE"
    return {"PreemptType": "preempt/partition_prio", "PreemptMode": cluster_mode}, modes


def settings(valid: ValidCluster) -> list[tuple[str, str]]:
    """Every single-valued key, defaults and overrides applied, sorted."""
    spec = valid.spec
    modern = valid.version >= v("23.11")
    gpus = bool(valid.gpu_profiles)
    owned: dict[str, str] = {
        "ClusterName": spec.name,
        "SlurmUser": "slurm",
        "AuthType": f"auth/{spec.auth}",
        # GPUs are scheduled per core; cons_tres is also the only selector topology/tree accepts from 24.05 on.
        "SelectType": "select/cons_tres",
        "TopologyPlugin": topology_plugin(valid),
        "AccountingStorageType": "accounting_storage/slurmdbd",
        "AccountingStorageHost": spec.database.name if spec.database else "",
        "AccountingStorageEnforce": ",".join(spec.accounting.enforce),
        # 22.05 and older default to priority/basic; fairshare needs multifactor everywhere.
        "PriorityType": "priority/multifactor",
        "PriorityDecayHalfLife": spec.accounting.decay_half_life,
        "PriorityWeightFairshare": str(spec.accounting.weights.fairshare),
        "PriorityWeightAge": str(spec.accounting.weights.age),
        "PriorityWeightJobSize": str(spec.accounting.weights.job_size),
        "PriorityWeightPartition": str(spec.accounting.weights.partition),
        "PriorityWeightQOS": str(spec.accounting.weights.qos),
        **_preemption(valid)[0],
    }
    if spec.auth == "slurm":
        owned["CredType"] = "cred/slurm"
    if gpus:
        owned["GresTypes"] = "gpu"
        owned["AccountingStorageTRES"] = "gres/gpu"
    defaults: dict[str, str] = {
        "SlurmctldPort": str(SLURMCTLD_PORT),
        "SlurmdPort": str(SLURMD_PORT),
        "AccountingStoragePort": str(SLURMDBD_PORT),
        "StateSaveLocation": "/var/lib/slurm/slurmctld",
        "SlurmdSpoolDir": "/var/lib/slurm/slurmd",
        # From 23.11 the packaged slurmctld unit runs as the slurm user with RuntimeDirectory=slurmctld, which
        # cannot write /run/slurmctld.pid; older units run it as root and expect exactly that path.
        "SlurmctldPidFile": "/run/slurmctld/slurmctld.pid" if modern else "/run/slurmctld.pid",
        "SlurmdPidFile": "/run/slurmd.pid",
        "SlurmctldLogFile": "/var/log/slurm/slurmctld.log",
        "SlurmdLogFile": "/var/log/slurm/slurmd.log",
        "ProctrackType": "proctrack/cgroup",
        "TaskPlugin": "task/cgroup,task/affinity",
        "JobAcctGatherType": "jobacct_gather/cgroup",
        "PrologFlags": "Contain",
        "SelectTypeParameters": "CR_Core_Memory",
        "MpiDefault": "pmix",
        # Defaults that changed in 23.11, written out so a cluster behaves the same on every distribution.
        "TreeWidth": "16",
        "SchedulerType": "sched/backfill",
        "SchedulerParameters": "bf_continue,bf_max_job_test=1000",
        "ReturnToService": "2",
        "SlurmctldTimeout": "120",
        "SlurmdTimeout": "300",
        "UnkillableStepTimeout": "180",
        # A training step with a dead rank is wasted GPU time: end the whole step when one task fails.
        "KillOnBadExit": "1",
        "EnforcePartLimits": "ALL",
    }
    return apply_overrides({**defaults, **owned}, valid.slurm_conf_extra)


def setting(valid: ValidCluster, key: str) -> str:
    """One slurm.conf value as the cluster gets it (defaults and overrides applied); KeyError if it is not written."""
    return dict(settings(valid))[key]


def _hardware(node: Node) -> list[tuple[str, object | None]]:
    profile = node.profile
    gres = f"gpu:{profile.gpus.type}:{profile.gpus.count}" if profile.gpus else None
    return [
        ("CPUs", profile.cpus),
        ("Sockets", profile.sockets),
        ("CoresPerSocket", profile.cores_per_socket),
        ("ThreadsPerCore", profile.threads_per_core),
        ("RealMemory", profile.real_memory),
        ("Gres", gres),
        ("Features", ",".join(node.features) or None),
        ("State", "UNKNOWN"),
    ]


def _address_runs(nodes: Sequence[Node], valid: ValidCluster) -> list[tuple[str, str]]:
    """(NodeName, NodeAddr) hostlist pairs, each covering nodes whose names and addresses both count up by one."""
    allow_suffix = hostlists.suffix_allowed(valid.version)

    def numbered(text: str, is_address: bool) -> Numbered | None:
        if is_address and ":" in text:  # IPv6: colons are not hostlist syntax
            return None
        parts = hostlists.split(text)
        return None if parts is None or (parts.suffix and not allow_suffix and not is_address) else parts

    blocks: list[list[tuple[Node, Numbered | None, Numbered | None]]] = []
    for node in nodes:
        name, addr = numbered(node.name, False), numbered(node.address or "", True)
        if blocks and name and addr:
            start, last = blocks[-1][0], blocks[-1][-1]
            if (start[1] and start[2] and last[1] and last[2]
                    and hostlists.continues(start[1], last[1], name)
                    and hostlists.continues(start[2], last[2], addr)):
                blocks[-1].append((node, name, addr))
                continue
        blocks.append([(node, name, addr)])
    out = []
    for block in blocks:
        names = [n.name for n, _, _ in block]
        addresses = [n.address or "" for n, _, _ in block]
        if len(block) == 1:
            out.append((names[0], addresses[0]))
        else:
            out.append((hostlists.compress(names, valid.version), hostlists.compress(addresses, valid.version)))
    return out


def node_lines(valid: ValidCluster) -> list[str]:
    groups: dict[tuple[str, tuple[str, ...]], list[Node]] = {}
    for node in valid.nodes:
        groups.setdefault((node.profile.name, node.features), []).append(node)
    lines = []
    for (_, _), nodes in groups.items():
        hardware = _hardware(nodes[0])
        unaddressed = [n.name for n in nodes if n.address is None]
        if unaddressed:
            lines.append(pairs([("NodeName", hostlists.compress(unaddressed, valid.version)), *hardware]))
        for names, addresses in _address_runs([n for n in nodes if n.address is not None], valid):
            lines.append(pairs([("NodeName", names), ("NodeAddr", addresses), *hardware]))
    return lines


def partition_lines(valid: ValidCluster) -> list[str]:
    modes = _preemption(valid)[1]
    any_preemption = bool(modes)
    lines = []
    for member in valid.partitions:
        part = member.spec
        lines.append(pairs([
            ("PartitionName", part.name),
            ("Nodes", hostlists.compress(member.nodes, valid.version)),
            ("Default", yes_no(part.default)),
            ("MaxTime", part.max_time or "UNLIMITED"),
            ("DefaultTime", part.default_time),
            ("MaxNodes", part.max_nodes),
            ("PriorityTier", part.priority_tier),
            ("PreemptMode", modes.get(part.name, "OFF") if any_preemption else None),
            ("QOS", part.qos),
            ("AllowQos", ",".join(part.allow_qos) or None),
            ("AllowAccounts", ",".join(part.allow_accounts) or None),
            ("DefMemPerGPU", part.def_mem_per_gpu),
            ("DefCpuPerGPU", part.def_cpu_per_gpu),
            ("ExclusiveUser", "YES" if part.exclusive_user else None),
            ("State", "UP"),
        ]))
    return lines


def render(valid: ValidCluster) -> str:
    spec = valid.spec
    controllers = [_controller(h) for h in (spec.controller, spec.backup_controller) if h is not None]
    return fill(
        "slurm.conf.j2",
        header=header(valid),
        controllers=controllers,
        settings=settings(valid),
        nodes=node_lines(valid),
        partitions=partition_lines(valid),
    )
