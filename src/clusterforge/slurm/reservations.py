"""The admission gate's holds: a node new to the cluster, or back from a hardware fault, is kept from users' jobs
inside a Slurm MAINT reservation of its own, ``cf-gate-new-<node>`` or ``cf-gate-repaired-<node>``, until the gate's
tests pass (docs/development/admission-design.md). Every reservation command clusterforge asks of Slurm is built
here (tests/test_architecture.py fails if any other module composes one), as every drain is in drains.py.

The hold is the reservation, not a drain: a drained node runs no job, not even in a reservation, while an idle node
in a MAINT reservation with ``Users=root`` runs only root's jobs, the gate's tests. The reservation is the whole of
the gate's state: it survives slurmctld's restart, the node's reboot (``nextstate=resume`` lifts drains, not
reservations) and a killed gate, and ``scontrol show reservation`` shows it to admins. Deleting it is how an admin
admits a node by hand.

Pure: the names, the commands and the reading of ``scontrol show reservation`` (22.05, 24.11 and 26.05 print the
same keys, 26.05 adds ``AllowedPartitions`` and ``QOS``); the callers run them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from .parse import ParseError, key_values

GATE_PREFIX = "cf-gate-"
NEW = "new"
REPAIRED = "repaired"
CAUSES = (NEW, REPAIRED)
# MAINT: only the reservation's users start jobs there, and the node shows as "maint" to admins; IGNORE_JOBS: it can
# be created over a node that still runs a job (a repaired node's registration races nothing, but a deploy may).
FLAGS = "MAINT,IGNORE_JOBS"
# "infinite" is as long as Slurm lets a reservation last: a year (seen on all three releases: Duration=365-00:00:00).
# A node held that long is an admin's to look at; the gate's hold is never meant to expire on its own.
DURATION = "infinite"
NONE_TEXT = "No reservations in the system"
# A node name as slurm.conf takes one: no hostlist brackets, commas or spaces, which would make the reservation's
# Nodes= a list.
_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_DIGITS = re.compile(r"[0-9]+")


def name(cause: str, node: str) -> str:
    """The reservation that holds ``node`` for ``cause`` (new or repaired)."""
    if cause not in CAUSES:
        raise ValueError(f"the gate holds a node as {' or '.join(CAUSES)}, not {cause!r}")
    if not _NODE.fullmatch(node):
        raise ValueError(f"not one node's name: {node!r}")
    return f"{GATE_PREFIX}{cause}-{node}"


def parse_name(reservation: str) -> tuple[str, str] | None:
    """(cause, node) of a gate reservation's name, None for any other reservation."""
    if not reservation.startswith(GATE_PREFIX):
        return None
    cause, sep, node = reservation[len(GATE_PREFIX):].partition("-")
    if cause not in CAUSES or not sep or not _NODE.fullmatch(node):
        return None
    return cause, node


OWN_USERS = "root"  # Users= of a gate hold, as create_argv makes it and scontrol shows it


def create_argv(reservation: str, node: str) -> list[str]:
    """Hold ``node`` in ``reservation`` from now on. Users=root: the gate's jobs run as root; root and SlurmUser may use
    any reservation anyway, no one else this one. Fails (exit 1, "Duplicate reservation name") where it exists."""
    return ["scontrol", "create", "reservation", f"ReservationName={reservation}", "StartTime=now",
            f"Duration={DURATION}", "Users=root", f"Flags={FLAGS}", f"Nodes={node}"]


def delete_argv(reservation: str) -> list[str]:
    """Release the node: users' jobs may start on it from now on. Fails (exit 1, "Requested reservation is invalid")
    where it is gone already."""
    return ["scontrol", "delete", f"ReservationName={reservation}"]


# The repair loop's guard while it withdraws its reboot of a node an admin drained meanwhile: slurmctld's withdrawal
# lifts the drain (drains.cancel_reboot_argv) and queues its scheduler, which may start a waiting job on the node
# before the loop sets the admin's drain again; inside the guard only root's jobs may. Minutes, as Slurm reads a
# Duration: a loop killed before it deletes the guard leaves the node held that long, no longer.
GUARD_PREFIX = "cf-repair-guard-"
GUARD_MINUTES = 5


# slurmctld's words where a reservation of that name exists (slurm_errno.c, ESLURM_RESERVATION_NAME_DUP).
DUPLICATE = "Duplicate reservation name"


def guard_name(node: str) -> str:
    if not _NODE.fullmatch(node):
        raise ValueError(f"not one node's name: {node!r}")
    return f"{GUARD_PREFIX}{node}"


def guard_argv(node: str) -> list[str]:
    """Keep users' jobs off ``node`` from now on, for GUARD_MINUTES at most: MAINT and IGNORE_JOBS, as a gate hold
    (created over the jobs the node runs, which run on)."""
    return ["scontrol", "create", "reservation", f"ReservationName={guard_name(node)}", "StartTime=now",
            f"Duration={GUARD_MINUTES}", "Users=root", f"Flags={FLAGS}", f"Nodes={node}"]


def show_argv() -> list[str]:
    """Every reservation, one line each (``-o``); parse_reservations reads this and the multi-line form alike."""
    return ["scontrol", "-o", "show", "reservation"]


def create_command(reservation: str, node: str) -> str:
    """The controller's shell command that holds ``node`` unless ``reservation`` exists already: a deploy run again
    (or killed after the create and run again) creates nothing twice. A slurmctld that does not answer fails both
    scontrol calls, and so the command."""
    return (f"scontrol show reservation {shlex.quote(reservation)} >/dev/null 2>&1 || "
            f"{shlex.join(create_argv(reservation, node))}")


@dataclass(frozen=True, slots=True)
class Reservation:
    name: str
    nodes: str               # Slurm's hostlist, as it prints it: gpu01, gpu[01-04]
    flags: frozenset[str]    # MAINT, IGNORE_JOBS, SPEC_NODES, ...
    users: str
    state: str               # ACTIVE, INACTIVE (not started yet)

    @property
    def gate(self) -> tuple[str, str] | None:
        """(cause, node) where this is one of the gate's holds: its name, and what create_argv gives it that a name
        alone does not (issue 46): root its only user, MAINT, and the one node its name says. A reservation an admin
        named ``cf-gate-*`` for anything else (other users, other nodes) is theirs: the gate neither tests in it nor
        deletes it, nor does admission turned off."""
        found = parse_name(self.name)
        if found is None or self.users != OWN_USERS or MAINT not in self.flags or self.nodes != found[1]:
            return None
        return found


def parse_reservations(text: str) -> list[Reservation]:
    """``scontrol show reservation``, with or without ``-o``: one record from each ``ReservationName=`` to the next.
    Anything else (an error, another command's output) is refused rather than read as "no reservation": a gate that
    saw no holds would test nothing, but a check would call every held node in service."""
    stripped = text.strip()
    if stripped == NONE_TEXT:
        return []
    starts = [m.start() for m in re.finditer(r"(?:^|\s)ReservationName=", stripped)]
    if not starts or starts[0] != 0:
        raise ParseError(f"not the output of scontrol show reservation: {stripped[:200]!r}")
    found = []
    for start, end in zip(starts, [*starts[1:], len(stripped)]):
        values = key_values(stripped[start:end])
        if not values.get("ReservationName") or "Nodes" not in values or "Flags" not in values:
            raise ParseError(f"a reservation without its name, nodes or flags: {stripped[start:end][:200]!r}")
        found.append(Reservation(values["ReservationName"], values["Nodes"],
                                 frozenset(f for f in values["Flags"].split(",") if f and f != "(null)"),
                                 values.get("Users", ""), values.get("State", "")))
    return found


def held(reservations: Iterable[Reservation]) -> dict[str, str]:
    """The nodes the gate holds, each with its cause (new or repaired), by node name in order. A node held both ways
    (repaired while still new) is held as new: it has never passed."""
    found: dict[str, str] = {}
    for reservation in reservations:
        gate = reservation.gate
        if gate is not None:
            cause, node = gate
            if found.get(node) != NEW:
                found[node] = cause
    return dict(sorted(found.items()))


ACTIVE = "ACTIVE"
MAINT = "MAINT"


def _top_level(hostlist: str) -> list[str]:
    """A hostlist's entries: split at the commas outside brackets (``gpu[01-02,05],cpu1``)."""
    entries, depth, start = [], 0, 0
    for at, char in enumerate(hostlist):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth not in (0, 1):
            raise ParseError(f"not a hostlist: {hostlist!r}")
        if char == "," and depth == 0:
            entries.append(hostlist[start:at])
            start = at + 1
    if depth:
        raise ParseError(f"not a hostlist: {hostlist!r}")
    return [*entries, hostlist[start:]]


def _matches(entry: str, node: str) -> bool:
    """Whether one hostlist entry (``gpu[01-04,07]``, ``r[1-2]-gpu[01-08]``, ``gpu[1-2]-ib``) names ``node``, as Slurm
    expands it: each range padded to the width of its low bound (``[01-10]`` is 01 to 10, ``[1-10]`` 1 to 10)."""
    head, bracket, rest = entry.partition("[")
    if not bracket:
        return entry == node
    ranges, _, tail = rest.partition("]")
    bounds = []
    for part in ranges.split(","):
        low, dash, high = part.partition("-")
        if not _DIGITS.fullmatch(low) or (dash and not _DIGITS.fullmatch(high)):
            raise ParseError(f"not a hostlist range: {part!r} in {entry!r}")
        bounds.append((low, int(high if dash else low)))
    if not node.startswith(head):
        return False
    after = node[len(head):]
    digits = len(after) - len(after.lstrip("0123456789"))
    return any(int(low) <= int(after[:width]) <= high and after[:width] == str(int(after[:width])).zfill(len(low))
               and _matches(tail, after[width:]) for low, high in bounds for width in range(1, digits + 1))


def lists(hostlist: str, node: str) -> bool:
    """Whether Slurm's hostlist (a reservation's ``Nodes=``, as slurmctld prints it) names ``node``, without expanding
    it (stdlib: the node side has no python-hostlist). Refuses (ParseError) what is not a hostlist."""
    return any(_matches(entry, node) for entry in _top_level(hostlist))


def gate_hold(reservations: Iterable[Reservation], node: str) -> str | None:
    """The admission gate's hold of ``node`` where it is the whole of the maintenance the node shows: the name of its
    active ``cf-gate-*-<node>`` reservation, None where there is none, or where any other active MAINT reservation
    names the node too (an admin's maintenance: the node is theirs, and left to them), or one whose nodes cannot be
    read (it may). A MAINT reservation not started yet (``INACTIVE``) holds nothing yet, nor does one without MAINT."""
    active = [r for r in reservations if r.state == ACTIVE and MAINT in r.flags]
    holds = [r.name for r in active if r.gate is not None and r.gate[1] == node]
    for other in (r for r in active if r.name not in holds):
        try:
            if lists(other.nodes, node):
                return None
        except ParseError:
            return None
    return holds[0] if holds else None


# awk over ``scontrol -o show reservation``: the names of the gate's own holds, as Reservation.gate tells them (the
# name, Users=root alone, MAINT, Nodes= the node of the name); every other reservation, whatever its name, is left.
_OWN_HOLDS_AWK = (
    "{ n=\"\"; u=\"\"; f=\"\"; h=\"\"; "
    "for (i = 1; i <= NF; i++) { k = $i; sub(/=.*/, \"\", k); v = substr($i, length(k) + 2); "
    "if (k == \"ReservationName\") n = v; else if (k == \"Users\") u = v; else if (k == \"Flags\") f = v; "
    "else if (k == \"Nodes\") h = v } "
    "node = n; if (!sub(/^" + GATE_PREFIX + "(" + "|".join(CAUSES) + ")-/, \"\", node)) next; "
    "if (u == \"" + OWN_USERS + "\" && (\",\" f \",\") ~ /," + MAINT + ",/ && h == node) print n }")


def release_all_command() -> str:
    """The controller's shell command that deletes every gate hold (admission turned off: no gate will test them, and
    a hold no one lifts keeps its node from users for good), and only those: a reservation someone else named
    ``cf-gate-*`` stays (Reservation.gate). slurmctld refuses to delete a hold a job still runs in: that one is named
    on stderr and fails the command, after the others were deleted. A listing that fails fails the command."""
    listing = shlex.join(show_argv())
    own = f"printf '%s\\n' \"$s\" | awk {shlex.quote(_OWN_HOLDS_AWK)}"
    return (f"rc=0; s=$({listing}) || exit 1; for r in $({own}); do "
            f"scontrol delete ReservationName=\"$r\" || {{ echo \"slurmctld refused to delete $r\" >&2; rc=1; }}; "
            "done; [ $rc -eq 0 ]")


ADMIT_WAIT_S = 30  # how long admitting waits for the jobs it cancelled in a hold to end (slurmctld keeps them a while)


GATE_JOBS = "cf-gate:"  # the gate's job names (gate/slurm.py's JOB_PREFIX)


def admit_command(reservation: str) -> str:
    """The controller's shell command that admits a held node by hand (`clusterforge admit`): cancel the gate's jobs
    in its hold (root's jobs named ``cf-gate:``, queued or running: slurmctld refuses to delete a reservation a job
    waits or runs in), then delete the hold once those jobs have ended, trying again each second for ADMIT_WAIT_S. A
    job of anyone else's in the hold (an admin's, as root: the hold admits root alone) is never cancelled: slurmctld
    then refuses the delete, and the command names those jobs on stderr (exit 1). A hold gone already is admitted
    already (exit 0). Only the gate's holds."""
    if parse_name(reservation) is None:
        raise ValueError(f"not a hold of the admission gate: {reservation!r}")
    quoted = shlex.quote(reservation)
    listing = shlex.join(show_argv())
    jobs = f"squeue --noheader --reservation={quoted} --format='%i %u %j'"
    return (f"{listing} | grep -q \"^ReservationName={quoted} \" || exit 0; "
            f"ids=$({jobs} --user=root | awk '$3 ~ /^{GATE_JOBS}/ {{print $1}}') || exit 1; "
            "[ -z \"$ids\" ] || scancel $ids; "
            f"for _ in $(seq {ADMIT_WAIT_S}); do scontrol delete ReservationName={quoted} 2>/dev/null && exit 0; "
            f"sleep 1; done; scontrol delete ReservationName={quoted} || "
            f"{{ echo \"slurmctld kept {reservation}, jobs not the gate's in it: "
            f"$({jobs} | tr '\\n' ';')\" >&2; exit 1; }}")
