"""Slurm's nodes, read one way: one sinfo listing, with every field a caller reads, and `scontrol show node`'s
records, both into one ``Node``. The gate and the exporter run the argv on the controller, roll, accept and admit the
same command as shell text over SSH, the deploy through the engine; the node's health check reads its own node with
``show_argv``. Pure: the commands, and the reading of what they print (tests/slurm/captures/: the real 22.05, 24.11
and 26.05).

sinfo -O with ``Field:|`` (no width, a ``|`` after each field) neither pads nor truncates, on every release (the
JSON of the releases differs). One line per node and partition: a node in no partition is not listed. The reason is
last, as it may itself hold a ``|``. ``--all``: the nodes of hidden partitions too.

A node's state is read two ways, each for the callers that always read it so: sinfo's long state (``%T``,
StateLong: ``idle``, ``drained``, ``draining``, ``down*``, ``maint``, ``reboot^``, ``idle$``) for the controller's
commands (roll, accept, admit, the deploy), and the base state and its flags (sinfo's StateComplete
``idle+drain+maintenance``, scontrol's ``State=IDLE+DRAIN+MAINTENANCE``, node_state_string_complete on every release)
for the node's health check, the gate and the exporter. Whose a drain is stays drains.py's.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, replace

from .drains import RESUMABLE_STATES, SET_BY, Drain, bare_reason, parse_reason
from .parse import ParseError, key_values, seconds

# The fields of the one listing, in its order; the reason last.
FIELDS = ("NodeList", "Partition", "Time", "StateLong", "StateComplete", "Gres", "GresUsed", "Reason")
SINFO_TIMEOUT_S = 30
# What in sinfo's long state says the node runs no new job now: a drain, Slurm's DOWN or FAIL, maintenance, a
# reboot, a node never registered, powered off or invalid; and the flag characters sinfo appends for the same
# (sinfo(1), NODE STATE CODES: * not responding, ~ powered off, # powering up, ! pending power down, % powering down,
# $ in a maintenance reservation, @ reboot pending, ^ reboot issued).
OUT_OF_SERVICE = ("drain", "down", "fail", "maint", "reboot", "unknown", "future", "power", "inval")
OUT_OF_SERVICE_SUFFIXES = ("*", "~", "#", "!", "%", "$", "@", "^")
# The characters a release may append to a state word (the same codes, and "-" for planned).
_SUFFIXES = "*~#!%$@^-"
# scontrol's and sinfo's flags of a node out of service for its own reason, as every release spells them
# (node_state_string_complete, slurm_protocol_defs.c): down, failing, in a maintenance reservation.
MAINTENANCE = "MAINTENANCE"
HELD_FLAGS = frozenset({"DOWN", "FAIL", MAINTENANCE})
# One GRES of a node's Gres or GresUsed: name[:type]:count, then an optional "(S:0-1)" or "(IDX:0,2-3)" (which may
# hold commas, so the list is not split on them).
_GRES = re.compile(r"([^,():]+)(?::([^,():]+))?:(\d+)(?:\([^)]*\))?")
_NONE = ("", "none", "(null)")


def sinfo_argv(nodes: str = "", states: str = "") -> list[str]:
    """Every node (of the hostlist ``nodes``; in ``states``, sinfo's --states), a line per node and partition."""
    return ["sinfo", "--noheader", "--all", "--Node", *([f"--nodes={nodes}"] if nodes else []),
            *([f"--states={states}"] if states else []), "--Format=" + ",".join(f"{f}:|" for f in FIELDS)]


def sinfo_command(nodes: str = "") -> str:
    """sinfo_argv as the controller's shell runs it (roll, accept, admit, the deploy)."""
    return shlex.join(sinfo_argv(nodes))


def drained_command() -> str:
    """The nodes in a drain state, as sinfo_argv lists them; nothing where Slurm's commands are absent or do not
    answer."""
    return (f"command -v sinfo >/dev/null && timeout -k 5 {SINFO_TIMEOUT_S} {shlex.join(sinfo_argv(states='drain'))} "
            "2>/dev/null")


def show_argv(nodes: str = "") -> list[str]:
    """`scontrol show node`, one line a node: every node, or those of the hostlist ``nodes``."""
    return ["scontrol", "show", "node", "-o", *([nodes] if nodes else [])]


SLURMD_UNIT = "slurmd.service"
# The deploy's wait after slurmd (re)starts, run as root on the node itself with the node's name as $1 (exit 1 until
# then): slurmctld has heard from the slurmd of this start. sinfo alone cannot say so: slurmctld holds a node
# responding for up to SlurmdTimeout after its slurmd died, so a slurmd that exits a moment after its start (22.05's
# --conf-server refused: "ConfigLess mode is disabled") or whose registration slurmctld refuses passed it.
#
# slurmd stamps its registration with its own start: _fill_registration_msg sets slurmd_start_time = time(NULL) at
# the process's first registration and sends that on every later one (src/slurmd/slurmd/slurmd.c, 22.05.8 :774 and
# :808-810, 24.11.5 :990-992, 26.05.3 :991-993; a global of src/common/node_conf.c:101 from 24.11). slurmctld takes it
# from each registration (src/slurmctld/job_mgr.c validate_jobs_on_node, 22.05.8 :15164, 24.11.5 :15492, 26.05.3
# :15950) and keeps none across its own restart: 0 until the node registers, which scontrol prints as
# "SlurmdStartTime=None" (src/api/node_info.c, 22.05.8 :370-375, 24.11.5 :363-368, 26.05.3 :384-389). Under
# SLURM_TIME_FORMAT=%s scontrol prints the seconds since the epoch (strftime's %s; src/common/parse_time.c
# slurm_make_time_str, 22.05.8 :677, 26.05.3 :730): no time zone or DST fold to parse back.
#
# The start it is held to is systemd's InactiveExitTimestamp: when this start began, before the process was forked,
# so at or before slurmd's time(NULL); both on the node's clock, compared in whole seconds (systemd prints no more,
# slurmd keeps no more). Not ExecMainStartTimestamp: systemd moves that whenever the main PID changes
# (service_set_main_pid -> exec_status_start), which 24.11's reconfigure does as it re-executes slurmd (slurmd.c
# _try_to_reconfig :1547 sends MAINPID= for the new process after that process said it started, :483, and the new
# process then registers, :498): its stamp could fall in the second before systemd's, and the wait never pass. A
# reconfigure neither stops nor starts the unit, so InactiveExitTimestamp stays and the new process's later stamp
# still passes. LC_ALL and TZ fix the form systemctl prints it in ("Fri 2026-12-04 22:52:43 UTC"), which date reads.
# Left: an old slurmd registered in the very second this start began would pass as this start's.
_RESPONDING = "; ".join((
    f'[ "$(systemctl is-active {SLURMD_UNIT})" = active ] || exit 1',
    f"started=$(LC_ALL=C TZ=UTC0 systemctl show --property=InactiveExitTimestamp --value {SLURMD_UNIT})",
    '[ -n "$started" ] && since=$(date -d "$started" +%s) || exit 1',
    'registered=$(SLURM_TIME_FORMAT=%s scontrol show node -o "$1" | tr " " "\\n" '
    '| sed -n "s/^SlurmdStartTime=//p" | head -n 1)',
    'case $registered in ""|*[!0-9]*) exit 1;; esac',
    '[ "$registered" -ge "$since" ] || exit 1',
    # and slurmctld hears it now: sinfo marks a node it does not hear with '*', or shows it down or unknown
    'case $(sinfo --noheader --node="$1" --format=%T) in ""|*"*"|down*|unknown*) exit 1;; esac',
))


def responding_command(name: str) -> str:
    """Whether slurmctld hears the slurmd the node's systemd started last (the deploy's wait after slurmd starts;
    exit 1 until then): the unit is active, the node registered since that start, and slurmctld hears it."""
    return shlex.join(["sh", "-c", _RESPONDING, "sh", name])


def gpu_count(gres: str) -> int:
    """The GPUs of a Gres or GresUsed field, all types together: ``gpu:h100:8(S:0-1)`` 8,
    ``gpu:a100:1(IDX:0),gpu:h100:0(IDX:N/A)`` 1, ``gpu:8`` 8, ``gpu:0`` and ``(null)`` 0; other GRES are not GPUs."""
    return sum(int(m[3]) for m in _GRES.finditer(gres) if m[1].strip() == "gpu")


def gpu_indices(gres_used: str) -> frozenset[int]:
    """The GPUs jobs hold now, by gres index, from a GresUsed field: ``gpu:h100:3(IDX:0-2)`` {0, 1, 2},
    ``gpu:h100:2(IDX:0,3)`` {0, 3}, ``gpu:h100:0(IDX:N/A)`` and ``(null)`` none. The index is the GPU's place in
    gres.conf's File= order, which is the inventory's device files' (render/gres_conf.py), the health check's gpuN."""
    found: set[int] = set()
    for match in re.finditer(r"(?:^|,)gpu(?::[^,():]+)*:\d+\(IDX:([^)]*)\)", gres_used):
        for part in match[1].split(","):
            first, _, last = part.partition("-")
            if first.isdigit() and (not last or last.isdigit()):
                found.update(range(int(first), int(last or first) + 1))
    return frozenset(found)


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    state: str = ""       # sinfo's long state: idle, drained, draining, down*, maint, reboot^ ("" from scontrol)
    reason: str = ""      # bare: without scontrol's " [user@time]" (set_by); "" for none
    complete: str = ""    # the base state and its flags as printed: idle+drain (sinfo), IDLE+DRAIN (scontrol)
    partitions: tuple[str, ...] = ()      # in sinfo's order (scontrol's Partitions=), the default's "*" left off
    limits: tuple[int | None, ...] = ()   # each partition's TimeLimit in seconds, None for none (sinfo only)
    gpus: int = 0         # configured
    gpus_alloc: int = 0   # allocated to jobs (sinfo only)
    gpus_busy: frozenset[int] = frozenset()   # the GPUs allocated to jobs, by gres index (sinfo only)
    set_by: str = ""      # scontrol's user@time of the reason
    boot: str = ""        # scontrol's BootTime, ISO 8601 in the controller's time zone

    # -- the base state and its flags (StateComplete, scontrol's State=), upper case as Slurm spells them

    @property
    def flags(self) -> frozenset[str]:
        """The base state and every flag: IDLE, MIXED, DOWN, DRAIN, NOT_RESPONDING, MAINTENANCE, REBOOT_ISSUED, ..."""
        return frozenset(f.rstrip(_SUFFIXES).upper() for f in self.complete.split("+") if f)

    @property
    def base(self) -> str:
        return self.complete.split("+")[0].rstrip(_SUFFIXES).upper()

    @property
    def drained(self) -> bool:
        """Drained or draining: the drain flag, whatever else the node is."""
        return "DRAIN" in self.flags

    @property
    def rebooting(self) -> bool:
        """Rebooted through Slurm and not registered since: its registration will lift any drain set now where a
        next state is set (node_mgr.c validate_node_specs): nextstate=resume always; with none, 22.05 sets RESUME,
        24.11 and later UNDRAIN for a node not drained when asked, none for a drained one. A reboot only
        requested (REBOOT_REQUESTED: jobs still run) is not one yet: a drain set then is the node's until it reboots."""
        return "REBOOT_ISSUED" in self.flags

    @property
    def maintenance(self) -> bool:
        """In an active MAINT reservation: an admin's, or the admission gate's hold (slurm/reservations.py)."""
        return MAINTENANCE in self.flags

    def drained_for(self, causes: Iterable[str]) -> bool:
        """Drained by clusterforge for one of ``causes``."""
        drain = parse_reason(self.reason) if self.drained else None
        return drain is not None and drain.cause in causes

    def kept_by_another(self, causes: Iterable[str], gate_held: bool = False) -> bool:
        """As the node's flags say it just before the health check or the gate drains or lifts: drained for anyone
        else's reason, or down, failing or in maintenance; left as it is, whatever a caller finds (a node that does
        not respond now is not kept: the health check runs on it). ``gate_held``: the maintenance is the admission
        gate's hold of the node and no one else's (reservations.gate_hold), inside which the health check drains and
        lifts its own as everywhere; the gate's own drain (``cf:gate``) is another's like any other cause not in
        ``causes``."""
        if self.drained:
            return not self.drained_for(causes)
        return bool((HELD_FLAGS - {MAINTENANCE} if gate_held else HELD_FLAGS) & self.flags)

    # -- sinfo's long state: the controller's commands

    @property
    def drain(self) -> Drain | None:
        return parse_reason(self.reason)

    def resumable_for(self, cause: str) -> bool:
        """Drained by clusterforge for ``cause``, and nothing else is wrong with it that Slurm knows of."""
        drain = self.drain
        return drain is not None and drain.cause == cause and self.state in RESUMABLE_STATES

    @property
    def out_of_service(self) -> bool:
        """Runs no new job now, for whatever reason, whoever's."""
        state = self.state.lower()
        return any(word in state for word in OUT_OF_SERVICE) or state.endswith(OUT_OF_SERVICE_SUFFIXES)

    def held_by_another(self, causes: Iterable[str]) -> bool:
        """Out of service for anyone but clusterforge's ``causes``: drained for another's reason, down, failing,
        in maintenance, rebooting for someone else. Left as it is by every command drains.py builds. A node
        clusterforge drained for one of ``causes`` is its own while it is drained, draining or rebooting, though not
        responding now (``drained*``); down, failing or in maintenance besides, it is Slurm's or an admin's."""
        drain = self.drain
        if drain is not None and drain.cause in set(causes):
            return any(word in self.state for word in ("down", "fail", "maint"))
        return self.out_of_service

    # -- the partitions' time limits

    def fitting(self, seconds: int) -> tuple[str, ...]:
        """The node's partitions whose TimeLimit lets a job of ``seconds`` run: with EnforcePartLimits=ALL sbatch
        refuses a job whose partition list holds one that does not."""
        limits = self.limits or (None,) * len(self.partitions)
        return tuple(p for p, limit in zip(self.partitions, limits) if limit is None or limit >= seconds)

    def limits_said(self) -> str:
        """``debug 30 min, batch none``: each partition's TimeLimit, for a reason."""
        limits = self.limits or (None,) * len(self.partitions)
        return ", ".join(f"{p} {'none' if limit is None else f'{limit // 60} min'}"
                         for p, limit in zip(self.partitions, limits))


def limit_s(text: str) -> int | None:
    """A partition's TimeLimit as sinfo prints it (``30:00``, ``1-00:00:00``, ``infinite``) in seconds; None where
    it sets no bound (or one that cannot be read, which sbatch then refuses)."""
    total = seconds(text)
    return total if total > 0 else None


def parse_sinfo(text: str, fields: tuple[str, ...] = FIELDS) -> list[Node]:
    """sinfo_argv's output (or another -O listing of ``fields``, the reason last) as one Node per node, with every
    partition it is in, in sinfo's order. A line with fewer fields is not sinfo's and is skipped."""
    found: dict[str, Node] = {}
    for line in text.splitlines():
        # Each field ends with the "|" of its "Field:|": the last one too.
        parts = line.removesuffix("|").split("|", len(fields) - 1)
        if len(parts) != len(fields) or not parts[0].strip():
            continue
        values = dict(zip(fields, (p.strip() for p in parts)))
        name = values["NodeList"]
        partition = values.get("Partition", "").rstrip("*")  # "*" marks the default partition
        limit = limit_s(values.get("Time", ""))
        known = found.get(name)
        if known is not None:
            if partition and partition not in known.partitions:
                found[name] = replace(known, partitions=(*known.partitions, partition),
                                      limits=(*known.limits, limit))
            continue
        reason = values.get("Reason", "")
        found[name] = Node(name, values.get("StateLong", "").lower(), "" if reason in _NONE else reason,
                           values.get("StateComplete", "").lower(), (partition,) if partition else (),
                           (limit,) if partition else (), gpu_count(values.get("Gres", "")),
                           gpu_count(values.get("GresUsed", "")), gpu_indices(values.get("GresUsed", "")))
    return list(found.values())


def parse_show(text: str) -> list[Node]:
    """`scontrol show node -o`: one Node a line, in Slurm's order; lines that are not a node's are skipped."""
    found = []
    for line in text.splitlines():
        if not line.startswith("NodeName="):
            continue
        values = key_values(line)
        reason = values.get("Reason", "").strip()
        set_by = SET_BY.search(reason)
        partitions = values.get("Partitions", "")
        found.append(Node(values["NodeName"], reason="" if reason in _NONE else bare_reason(reason),
                          complete=values.get("State", ""),
                          partitions=() if partitions in _NONE else tuple(partitions.split(",")),
                          gpus=gpu_count(values.get("Gres", "")), set_by=set_by[1] if set_by else "",
                          boot=values.get("BootTime", "")))
    return found


def parse_node(text: str) -> Node:
    """One node as `scontrol show node -o <node>` gives it; ParseError where the text is not that."""
    shown = parse_show(text)
    if not shown or not shown[0].complete:
        raise ParseError(f"not the output of scontrol show node: {text.strip()[:200]!r}")
    return shown[0]
