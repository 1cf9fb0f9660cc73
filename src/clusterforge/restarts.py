"""What a change to the Slurm files asks of the daemons, for the cluster's Slurm release: decided here, once.

The roles compare each host's installed files with the rendered ones before anything is uploaded and act on the
Plan this module returns. The rules come from SchedMD's documentation of each release:

- Adding or removing nodes (any NodeName line changes): up to 24.05 the FAQ's procedure is stop slurmctld, update
  slurm.conf everywhere, restart every slurmd, start slurmctld; from 24.11, update everywhere and `scontrol
  reconfigure` (SchedMD moved the reconfigure-only procedure from "23.11" to "24.11 and newer", ticket 21502).
- Keys a reconfigure cannot apply need a restart of every daemon: before 23.11 the plugin and port keys the
  slurm.conf man page marks as such; from 23.11, where reconfigure re-executes the daemons, only listening ports
  and the authentication mechanism.
- gres.conf, cgroup.conf and the SPANK plugin stack (Pyxis) are read by slurmd at start before 23.11 (restart
  slurmd); from 23.11 a reconfigure re-executes slurmd, which reads them again.
- Turning configless on or off (SlurmctldParameters=enable_configless) restarts every daemon: every slurmd restarts
  for its drop-in anyway, and before 23.11 slurmctld sets configless up only when it starts.
- Everything else (partitions, topology.conf, scheduling keys) takes `scontrol reconfigure`. So does topology.yaml
  (25.05+), and the move from topology.conf to it: from 23.11 a reconfigure starts a new slurmctld, which reads
  topology.yaml where it exists (src/interfaces/topology.c, topology_g_init).
A host that had no slurm.conf yet is a new host: its daemons are started, nothing is restarted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .model.settings import CONFIGLESS
from .versions import NODES_BY_RECONFIGURE, RECONFIGURE_RESTARTS, SlurmVersion

# Reconfigure cannot change these in any release (scontrol(1) from 23.11: "cannot change listening TCP ports or
# the auth mechanism").
_RESTART_ALWAYS = frozenset({"SlurmctldPort", "SlurmdPort", "SlurmctldHost", "AuthType", "CredType", "AuthAltTypes"})
# slurm.conf(5), 22.05: changes to these "require restarting" the daemons.
_RESTART_BEFORE_23_11 = _RESTART_ALWAYS | frozenset({
    "SelectType", "SelectTypeParameters", "ProctrackType", "GresTypes", "SwitchType", "JobContainerType", "PluginDir",
    "MaxJobCount", "MaxNodeCount", "TaskPlugin", "TopologyPlugin", "SlurmdSpoolDir", "StateSaveLocation",
})


# Files slurmd reads when it starts (the SPANK plugin stack included: slurmd loads it then), which a reconfigure
# applies only from 23.11, where it re-executes slurmd.
_READ_AT_START = frozenset({"gres.conf", "cgroup.conf", "plugstack.conf.d/pyxis.conf"})


@dataclass(frozen=True)
class Plan:
    """What to do around the upload of new Slurm files on one host."""

    stop_slurmctld_first: bool = False  # before any host gets the new files
    restart_slurmctld: bool = False     # (start it again, after a stop)
    restart_slurmd: bool = False
    reconfigure: bool = False           # `scontrol reconfigure`, once the files are everywhere
    reasons: tuple[str, ...] = ()


def restart_keys(version: SlurmVersion) -> frozenset[str]:
    return _RESTART_ALWAYS if version >= RECONFIGURE_RESTARTS else _RESTART_BEFORE_23_11


def nodes_by_reconfigure(version: SlurmVersion) -> bool:
    """Whether nodes are added and removed with `scontrol reconfigure` alone."""
    return version >= NODES_BY_RECONFIGURE


@dataclass(frozen=True)
class _SlurmConf:
    keys: dict[str, str]
    node_lines: frozenset[str]
    other_lines: frozenset[str]


def _parse(text: str) -> _SlurmConf:
    keys: dict[str, str] = {}
    nodes: set[str] = set()
    other: set[str] = set()
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, _, value = line.partition("=")
        if key.lower() in ("nodename", "nodeset"):
            nodes.add(line)
        elif key.lower() in ("partitionname", "downnodes", "frontendname", "include", "slurmctldhost"):
            other.add(line)
            if key.lower() == "slurmctldhost":
                keys.setdefault("SlurmctldHost", "")
                keys["SlurmctldHost"] += value + ";"
        else:
            keys[key] = value
    return _SlurmConf(keys, frozenset(nodes), frozenset(other))


def _configless(conf: _SlurmConf) -> bool:
    return CONFIGLESS in conf.keys.get("SlurmctldParameters", "").lower().split(",")


def _meaning(name: str, text: str | None) -> tuple[str, ...] | None:
    """What Slurm reads from a file: its lines without comments, blanks and surrounding space (YAML keeps its
    indentation, which is its structure)."""
    if text is None:
        return None
    if name.endswith(".yaml"):
        return tuple(line for raw in text.splitlines() if (line := raw.split("#", 1)[0].rstrip()))
    return tuple(line for raw in text.splitlines() if (line := raw.split("#", 1)[0].strip()))


def plan(version: SlurmVersion, files: Mapping[str, tuple[str | None, str | None]]) -> Plan:
    """The plan for one host, from each Slurm file's (installed text or None, new text or None) by file name.
    A change only to comments or blank lines asks nothing of the daemons."""
    changed = {name for name, (old, new) in files.items() if _meaning(name, old) != _meaning(name, new)}
    if not changed:
        return Plan()
    old_conf, new_conf = files.get("slurm.conf", (None, None))
    if old_conf is None:
        return Plan(reasons=("new host: its daemons are started with the new files",))
    reasons: list[str] = []
    restart_all = stop_first = restart_slurmd = reconfigure = False
    if "slurm.conf" in changed and new_conf is not None:
        old, new = _parse(old_conf), _parse(new_conf)
        keys = {k for k in old.keys.keys() | new.keys.keys() if old.keys.get(k) != new.keys.get(k)}
        hard = sorted(keys & restart_keys(version))
        if hard:
            restart_all = True
            reasons.append(f"slurm.conf: {', '.join(hard)} changed, which only a restart applies")
        if _configless(old) != _configless(new):
            # Every slurmd restarts for its drop-in (--conf-server) that comes or goes with it, so no reconfigure:
            # - before 23.11 slurmctld sets up what it serves configless nodes only when it starts (proc_req.c,
            #   configless_setup; a reconfigure refreshes it only where it serves already);
            # - from 23.11 a reconfigure re-executes each slurmd, and the restart a moment later found systemd
            #   stopping the slurmd it knew while it handed over to its new self: the new one ran on, holding the
            #   port, and the restarted one failed (Debian 13's test cluster, configless turned off).
            restart_all = True
            reasons.append("slurm.conf: enable_configless changed: every slurmd restarts for its drop-in, and "
                           "slurmctld with them")
        if old.node_lines != new.node_lines:
            if nodes_by_reconfigure(version):
                reconfigure = True
                reasons.append(f"slurm.conf: nodes changed; Slurm {version} adds them with scontrol reconfigure")
            else:
                stop_first = restart_slurmd = True
                reasons.append(f"slurm.conf: nodes changed; Slurm {version} needs slurmctld stopped, every slurmd "
                               "restarted, then slurmctld started")
        if keys - set(hard) or old.other_lines != new.other_lines:
            reconfigure = True
            reasons.append("slurm.conf: settings or partitions changed")
    for name in sorted(changed & _READ_AT_START):
        if version >= RECONFIGURE_RESTARTS:
            reconfigure = True
            reasons.append(f"{name} changed; scontrol reconfigure re-executes slurmd, which reads it")
        else:
            restart_slurmd = True
            reasons.append(f"{name} changed; slurmd reads it only at start in Slurm {version}")
    for name in sorted(changed - {"slurm.conf", *_READ_AT_START}):
        reconfigure = True
        reasons.append(f"{name} changed")
    restart_ctld = restart_all or stop_first
    return Plan(
        stop_slurmctld_first=stop_first,
        restart_slurmctld=restart_ctld,
        restart_slurmd=restart_all or restart_slurmd,
        # A restart reads every file anew; a reconfigure on top of it would only repeat that.
        reconfigure=reconfigure and not restart_ctld,
        reasons=tuple(reasons),
    )
