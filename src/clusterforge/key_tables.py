"""The keys each Slurm release's slurm.conf and cgroup.conf parsers accept.

An unknown key makes slurmctld/slurmd exit at start, so an inventory override is checked against the table of the
cluster's release. The tables were extracted from ``slurm_conf_options[]`` and the cgroup.conf reader of each
release branch, every entry whatever its spacing or digits (an earlier extraction missed DefCPUPerGPU, DefMemPerGPU,
SlurmdPidFile and X11Parameters); a key Slurm keeps only to warn that it is defunct is marked so.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from .versions import SlurmVersion


@dataclass(frozen=True)
class KeyTable:
    file: str
    version: SlurmVersion
    canonical: dict[str, str]  # lower-case name -> name as Slurm spells it
    defunct: frozenset[str]

    def lookup(self, key: str) -> str | None:
        """The canonical spelling of a key (Slurm's keys are case-insensitive), or None if unknown."""
        return self.canonical.get(key.lower())

    def is_defunct(self, canonical: str) -> bool:
        return canonical in self.defunct


def _load(prefix: str, file: str, version: SlurmVersion) -> KeyTable:
    text = resources.files("clusterforge.slurm_keys").joinpath(f"{prefix}_{version}.txt").read_text()
    canonical: dict[str, str] = {}
    defunct: set[str] = set()
    for line in text.splitlines():
        name, _, mark = line.strip().partition("(")
        name = name.strip()
        if not name:
            continue
        canonical[name.lower()] = name
        if mark.startswith("defunct"):
            defunct.add(name)
    return KeyTable(file, version, canonical, frozenset(defunct))


@cache
def slurm_conf_keys(version: SlurmVersion) -> KeyTable:
    return _load("sc", "slurm.conf", version)


@cache
def cgroup_conf_keys(version: SlurmVersion) -> KeyTable:
    return _load("cg", "cgroup.conf", version)


# slurm.conf keys clusterforge derives from inventory fields: an override would contradict the inventory, so the
# inventory error names the field to change instead.
SLURM_CONF_OWNED: dict[str, str] = {
    "ClusterName": "name",
    "SlurmctldHost": "controller / backup_controller",
    "ControlMachine": "controller",
    "ControlAddr": "controller",
    "BackupController": "backup_controller",
    "BackupAddr": "backup_controller",
    "NodeName": "nodes",
    "NodeSet": "partitions",
    "PartitionName": "partitions",
    "DownNodes": "nodes",
    "FrontendName": "nodes",
    "GresTypes": "profiles[].gpus",
    "SelectType": "profiles (GPU scheduling needs select/cons_tres)",
    "TopologyPlugin": "fabric",
    "AccountingStorageType": "database",
    "AccountingStorageHost": "database",
    "AccountingStorageTRES": "profiles[].gpus",
    "AccountingStorageEnforce": "accounting.enforce",
    "PriorityType": "accounting",
    "PriorityDecayHalfLife": "accounting.decay_half_life",
    "PriorityWeightAge": "accounting.weights.age",
    "PriorityWeightFairshare": "accounting.weights.fairshare",
    "PriorityWeightJobSize": "accounting.weights.job_size",
    "PriorityWeightPartition": "accounting.weights.partition",
    "PriorityWeightQOS": "accounting.weights.qos",
    "PreemptType": "partitions[].preempts",
    "PreemptMode": "partitions[].preempts / preempt_mode",
    "AuthType": "auth",
    "CredType": "auth",
    "SlurmUser": "clusterforge (the daemons run as the slurm user the deploy creates)",
    "Include": "clusterforge (files are rendered whole)",
}
