"""The gate for node states: every drain, undrain, resume and reboot clusterforge asks of Slurm is built here, under
one reason format and one owner rule (tests/test_architecture.py fails if any other module composes one).

Every drain clusterforge sets carries a reason ``cf:<cause>[:<code>] <detail>`` (e.g. ``cf:removed from the
inventory``, ``cf:gpu:xid79 gpu3 0000:9b:00.0``), which ``sinfo -R`` shows whole. Ownership is that reason: Slurm
keeps who set a reason and when (``sinfo -R``'s USER and TIMESTAMP, ``scontrol show node``'s ``[user@time]``), but
clusterforge and an admin are both root, so only the prefix and the cause tell them apart. A node is resumed or
rebooted by clusterforge only while its reason still carries that prefix and one of the causes the caller owns,
read again on the controller (or the node) just before the command: a drain set by an admin (any other reason) or
by Slurm itself (``Not responding``, ``Kill task failed``, ...) is never lifted nor its reason replaced, and neither
is a node that is also down, failing or in maintenance. A drain is never set over anyone else's either.

A reboot matters most: ``scontrol reboot ASAP nextstate=resume`` has slurmctld lift every drain and clear the reason
when the node registers after it, whoever set them, so it is only ever asked for a node clusterforge itself holds.

Pure: the reasons, the reading of ``sinfo`` and ``scontrol show node``, the controller's shell commands and the
node's scontrol calls; the callers run them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from .parse import ParseError, key_values

PREFIX = "cf:"
# Set by clusterforge before the cf: format (up to 0641734): still its own.
LEGACY = {"removed": "clusterforge: removed from inventory"}
# sinfo's node states a resume may lift: drained, or draining (jobs still run), and nothing else about the node.
RESUMABLE_STATES = frozenset({"drained", "draining"})
# What in sinfo's long state (%T) says the node runs no new job now: a drain, Slurm's DOWN or FAIL, maintenance, a
# reboot, a node never registered, powered off or invalid; and the flag characters sinfo appends for the same
# (sinfo(1), NODE STATE CODES: * not responding, ~ powered off, # powering up, ! pending power down, % powering down,
# $ in a maintenance reservation, @ reboot pending, ^ reboot issued).
OUT_OF_SERVICE = ("drain", "down", "fail", "maint", "reboot", "unknown", "future", "power", "inval")
OUT_OF_SERVICE_SUFFIXES = ("*", "~", "#", "!", "%", "$", "@", "^")
REBOOTING_SUFFIXES = ("@", "^")
# What `sinfo --Node` prints per node for SINFO_FORMAT: name, long state, reason.
SINFO_FORMAT = "%N|%T|%E"
SINFO_TIMEOUT_S = 30
# What the controller-side callers (roll, accept) run to read every node's state for parse_sinfo.
STATES_COMMAND = f"sinfo --noheader --Node --format={shlex.quote(SINFO_FORMAT)}"
# What `squeue` prints per job for JOBS_FORMAT: the "job user nodes" that a run waiting for drained nodes names.
JOBS_FORMAT = "%i %u %N"


@dataclass(frozen=True, slots=True)
class Drain:
    cause: str       # what kind of finding: removed, gpu, ib, ...
    code: str = ""   # which one, where the cause has several: xid79
    detail: str = ""

    @property
    def reason(self) -> str:
        head = f"{PREFIX}{self.cause}" + (f":{self.code}" if self.code else "")
        return f"{head} {self.detail}" if self.detail else head


REMOVED = Drain("removed", detail="from the inventory")
# The causes of clusterforge's operations on nodes (the health check's are health/probes.py's CAUSES): the driver move
# of the deploy, and the roll, inside which the deploy runs on nodes the roll holds for it.
STACK = "stack"
ROLL = "roll"
# The admission gate's drain of a node that failed a test (gate/passes.py): lifted only by an admin.
GATE = "gate"


_SET_BY = re.compile(r" \[[^\]\s]+@[^\]\s]+\]$")  # what `scontrol show node` prints after a reason


def bare_reason(reason: str) -> str:
    """A reason as sinfo's %E prints it: without the " [user@time]" `scontrol show node` adds."""
    return _SET_BY.sub("", reason.strip()).strip()


def parse_reason(reason: str) -> Drain | None:
    """The drain a reason says clusterforge set, or None for anyone else's. The reason as sinfo's %E prints it, or
    as `scontrol show node` does, followed by " [user@time]"."""
    reason = bare_reason(reason)
    for cause, legacy in LEGACY.items():
        if reason == legacy:
            return Drain(cause, detail=legacy)
    if not reason.startswith(PREFIX):
        return None
    head, _, detail = reason[len(PREFIX):].partition(" ")
    cause, _, code = head.partition(":")
    return Drain(cause, code, detail) if cause else None


@dataclass(frozen=True, slots=True)
class NodeState:
    name: str
    state: str   # sinfo's long state: idle, drained, draining, down*, ...
    reason: str

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
        in maintenance, rebooting for someone else. Left as it is by every command built here. A node clusterforge
        drained for one of ``causes`` is its own while it is drained, draining or rebooting, though not responding now
        (``drained*``); down, failing or in maintenance besides, it is Slurm's or an admin's."""
        drain = self.drain
        if drain is not None and drain.cause in set(causes):
            return any(word in self.state for word in ("down", "fail", "maint"))
        return self.out_of_service


@dataclass(frozen=True, slots=True)
class SlurmState:
    """A node as `scontrol show node` gives it on the node itself (the health check's view; the controller's
    commands read sinfo): its state flags and its bare reason."""

    flags: frozenset[str]   # IDLE, MIXED, DRAIN, DOWN, ... from scontrol's State=IDLE+DRAIN
    reason: str

    @classmethod
    def parse(cls, text: str) -> SlurmState:
        values = key_values(text)
        if "State" not in values:
            raise ParseError(f"not the output of scontrol show node: {text.strip()[:200]!r}")
        flags = frozenset(f.rstrip("*~#!%$@^-") for f in values["State"].split("+"))
        return cls(flags, bare_reason(values.get("Reason", "")))

    @property
    def drained(self) -> bool:
        return "DRAIN" in self.flags

    @property
    def rebooting(self) -> bool:
        """Rebooted through Slurm and not registered since: its registration will lift any drain set now
        (node_mgr.c validate_node_specs clears DRAIN where a next state was asked for, as ASAP asks). A reboot only
        requested (REBOOT_REQUESTED: jobs still run) is not one yet: a drain set then is the node's until it reboots."""
        return "REBOOT_ISSUED" in self.flags

    def drained_for(self, causes: Iterable[str]) -> bool:
        """Drained by clusterforge for one of ``causes``."""
        drain = parse_reason(self.reason) if self.drained else None
        return drain is not None and drain.cause in causes

    @property
    def maintenance(self) -> bool:
        """In an active MAINT reservation: an admin's, or the admission gate's hold (slurm/reservations.py)."""
        return MAINTENANCE in self.flags

    def held_by_another(self, causes: Iterable[str], gate_held: bool = False) -> bool:
        """Drained for anyone else's reason, or down, failing or in maintenance: left as it is, whatever a caller
        finds. ``gate_held``: the maintenance is the admission gate's hold of the node and no one else's
        (reservations.gate_hold), inside which the health check drains and lifts its own as everywhere; the gate's
        own drain (``cf:gate``) is another's like any other cause not in ``causes``."""
        if self.drained:
            return not self.drained_for(causes)
        return bool((HELD_FLAGS - {MAINTENANCE} if gate_held else HELD_FLAGS) & self.flags)


# `scontrol show node`'s flags of a node out of service for its own reason, as both releases spell them
# (node_state_string_complete, slurm_protocol_defs.c, 22.05 and 24.11): down, failing, in a maintenance reservation.
MAINTENANCE = "MAINTENANCE"
HELD_FLAGS = frozenset({"DOWN", "FAIL", MAINTENANCE})


def show_argv(node: str) -> list[str]:
    return ["scontrol", "show", "node", "-o", node]


def drain_argv(node: str, reason: str) -> list[str]:
    return ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"]


def undrain_argv(node: str) -> list[str]:
    """UNDRAIN, not RESUME, as resume_command: a node Slurm set DOWN meanwhile stays down."""
    return ["scontrol", "update", f"NodeName={node}", "State=UNDRAIN"]


def parse_sinfo(lines: Iterable[str]) -> list[NodeState]:
    """``sinfo --noheader --Node --format=SINFO_FORMAT`` (one line per node and partition) as one state per node."""
    found: dict[str, NodeState] = {}
    for line in lines:
        name, _, rest = line.strip().partition("|")
        state, _, reason = rest.partition("|")
        if name and state:
            found.setdefault(name, NodeState(name, state, "" if reason == "none" else reason))
    return list(found.values())


def drained_command() -> str:
    """The nodes in a drain state, with their reasons; nothing where Slurm's commands are absent or do not answer."""
    return (f"command -v sinfo >/dev/null && timeout -k 5 {SINFO_TIMEOUT_S} sinfo --noheader --Node --states=drain "
            f"--format={shlex.quote(SINFO_FORMAT)} 2>/dev/null")


def jobs_command(nodes: str) -> str:
    """The controller's command that lists the jobs running on the hostlist ``nodes``, one JOBS_FORMAT a line."""
    return f"squeue --noheader --nodelist={shlex.quote(nodes)} --format={shlex.quote(JOBS_FORMAT)}"


# sinfo's long states (an awk pattern) of a node someone holds already: drained or draining, down, failing, in
# maintenance ($: a maintenance reservation), rebooting (sinfo prints "reboot" before "drain": a node drained with its
# reboot asked shows "reboot", "reboot^" once issued; @: asked), powered or powering down, invalid.
HELD_STATES = r"drain|down|fail|maint|reboot|power|inval|[$@^]$"


def drain_command(nodes: str, drain: Drain) -> str:
    """Drain the nodes of the hostlist ``nodes`` that are in no drain, down, fail, maintenance or reboot state of
    their own: those keep their state and reason, whoever set them. A drain slurmctld refuses is named on stderr and fails the
    command (exit 1, which ends a script it is part of) after the other nodes were tried; so does an sinfo that
    cannot list the nodes, which would otherwise drain none and say nothing."""
    listed = shlex.quote(nodes)
    return (f"rc=0; s=$(sinfo --noheader --Node --nodes={listed} --format='%N|%T') || "
            f"{{ echo sinfo could not list {listed} >&2; exit 1; }}; "
            f"for n in $(printf '%s\\n' \"$s\" | awk -F'|' '$2 !~ /{HELD_STATES}/ {{print $1}}' | sort -u); do "
            f"scontrol update NodeName=$n State=DRAIN Reason={shlex.quote(drain.reason)} || "
            "{ echo \"slurmctld refused to drain $n\" >&2; rc=1; }; done; [ $rc -eq 0 ] || exit 1")


def _ours(causes: Iterable[str]) -> str:
    """The shell ``case`` patterns of sinfo's "%T|%E" for a node drained (or draining) by clusterforge for one of
    ``causes`` and held by nothing else."""
    patterns = []
    for cause in causes:
        exact = [f"{PREFIX}{cause}", *([LEGACY[cause]] if cause in LEGACY else [])]
        prefixes = [f"{PREFIX}{cause}:", f"{PREFIX}{cause} "]
        patterns += ([shlex.quote(f"{state}|{reason}") for state in sorted(RESUMABLE_STATES) for reason in exact]
                     + [shlex.quote(f"{state}|{prefix}") + "*" for state in sorted(RESUMABLE_STATES)
                        for prefix in prefixes])
    return "|".join(patterns)


def _each_node(names: Iterable[str]) -> str:
    """The start of a loop over ``names`` that reads each node's "%T|%E" into $s just before acting on it."""
    return (f"rc=0; for n in {' '.join(shlex.quote(n) for n in names)}; do "
            "s=$(sinfo --noheader --Node --nodes=\"$n\" --format='%T|%E' | head -n 1); ")


def resume_command(names: Iterable[str], cause: str) -> str:
    """Resume each node whose state and reason, read again just before, still say that clusterforge drained it for
    ``cause`` and nothing else holds it: an admin who took the node over meanwhile keeps it. UNDRAIN, not RESUME:
    it clears only the drain, so a node slurmctld set DOWN in between stays down (RESUME would lift that too).
    A lift slurmctld refuses is named on stderr and fails the command, after the other nodes were tried."""
    return (_each_node(names) +
            f"case \"$s\" in {_ours([cause])}) scontrol update NodeName=\"$n\" State=UNDRAIN || "
            "{ echo \"slurmctld refused to lift the drain of $n\" >&2; rc=1; };; esac; done; [ $rc -eq 0 ]")


def reboot_command(names: Iterable[str], causes: Iterable[str], drain: Drain) -> str:
    """Have Slurm reboot each node once it is idle and return it to service when it registers again (``scontrol
    reboot ASAP nextstate=resume``, with ``drain``'s reason meanwhile), only where its state and reason, read again
    just before, say clusterforge drained it for one of ``causes`` and nothing else holds it. A node whose reboot is
    asked for or under way already is not asked again. Any other node is named on stdout (``left as it is``) and
    keeps its state and reason: the registration after such a reboot would lift its holder's drain. A reboot
    slurmctld refuses is named on stderr and fails the command, after the other nodes were tried."""
    rebooting = "|".join(f"*{shlex.quote(suffix + '|')}*" for suffix in REBOOTING_SUFFIXES) + "|reboot*"
    return (_each_node(names) +
            f"case \"$s\" in {rebooting}) ;; {_ours(causes)}) "
            f"scontrol reboot ASAP nextstate=resume reason={shlex.quote(drain.reason)} \"$n\" || "
            "{ echo \"slurmctld refused to reboot $n\" >&2; rc=1; };; "
            "*) echo \"$n left as it is: held by another ($s)\";; esac; done; [ $rc -eq 0 ]")
