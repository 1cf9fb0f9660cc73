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
The repair loop's reboot (reboot_argv) asks no next state: the registration keeps the drain, whoever's it is then.

Pure: the reasons, the controller's shell commands (each reading sinfo again just before it acts) and the node's
scontrol calls; the callers run them. A node's state as Slurm lists it, and whose it is, is read by nodes.py.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

PREFIX = "cf:"
# Set by clusterforge before the cf: format (up to 0641734): still its own.
LEGACY = {"removed": "clusterforge: removed from inventory"}
# sinfo's node states a resume may lift: drained, or draining (jobs still run), and nothing else about the node.
RESUMABLE_STATES = frozenset({"drained", "draining"})
REBOOTING_SUFFIXES = ("@", "^")


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


SET_BY = re.compile(r" \[([^\]\s]+@[^\]\s]+)\]$")  # what `scontrol show node` prints after a reason: user@time


def bare_reason(reason: str) -> str:
    """A reason as sinfo's %E prints it: without the " [user@time]" `scontrol show node` adds."""
    return SET_BY.sub("", reason.strip()).strip()


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


def drain_argv(node: str, reason: str) -> list[str]:
    return ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"]


def undrain_argv(node: str) -> list[str]:
    """UNDRAIN, not RESUME, as resume_command: a node Slurm set DOWN meanwhile stays down."""
    return ["scontrol", "update", f"NodeName={node}", "State=UNDRAIN"]


def admin_resume_command(node: str) -> str:
    """What an admin types to lift a drain clusterforge leaves to them (a quarantine): said to them, never run."""
    return f"scontrol update nodename={shlex.quote(node)} state=resume"


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


def reboot_argv(node: str, drain: Drain) -> list[str]:
    """``scontrol reboot`` of one node, with ``drain``'s reason, for a program that runs argv on the controller (the
    repair loop). Neither ``ASAP`` nor ``nextstate``: the node is drained already (the caller has read it again just
    before and found it drained by clusterforge and held by no one else), so slurmctld reboots it once its jobs have
    ended, as ASAP would, and its next state stays none (NO_VAL; ASAP makes it RESUME on 22.05, proc_req.c
    _slurm_rpc_reboot_nodes). Its registration after the reboot then keeps the drain and whatever reason it has
    (node_mgr.c, validate_node_specs lifts DRAIN only where there is a next state): the loop's own, lifted by the
    node's health check that owns it (health/program.py's gate), or an admin's set meanwhile, which stays."""
    return ["scontrol", "reboot", f"reason={drain.reason}", node]


def cancel_reboot_argv(node: str) -> list[str]:
    """Withdraw a reboot asked and not yet issued (the node's jobs still run). Where the reboot's next state has the
    UNDRAIN bit, slurmctld lifts the node's drain and clears its reason with it (node_mgr.c _undo_reboot_asap): so it
    does for the loop's reboot, whose next state is none (NO_VAL has every flag bit), on every release; the caller
    sets again the drain it means to keep. Refused, node by node, once issued ("Invalid node state specified", 26.05:
    "... transition"): REBOOT_REQUESTED is gone then."""
    return ["scontrol", "cancel_reboot", node]
