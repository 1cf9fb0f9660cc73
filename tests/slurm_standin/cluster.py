"""What slurmctld holds, for the stand-in: the nodes with their state and reason, the partitions, the reservations and
the jobs, and how a node's state is printed. Each rule says where in Slurm's source it comes from; the real-Slurm tier
(tests/realslurm/test_standin.py) runs the same steps on the real slurmctld of each release and compares.

A node's state is a base state and flags, as slurmctld keeps it (slurm.h NODE_STATE_*): ``scontrol`` prints them as
node_state_string_complete does (base, then each flag in slurm_protocol_defs.c's node_state_flags order), sinfo's
long state as node_state_string does. The flags MAINTENANCE and RESERVED are not kept: they follow from the active
reservations (slurmctld's reservation.c sets them while one holds the node), and ALLOCATED from the running jobs."""

from __future__ import annotations

from dataclasses import dataclass, field

import hostlist

# node_state_flags[] (slurm_protocol_defs.c): the order scontrol prints a node's flags in.
FLAG_ORDER = ("COMPLETING", "DRAIN", "FAIL", "MAINTENANCE", "REBOOT_REQUESTED", "REBOOT_ISSUED", "RESERVED",
              "NOT_RESPONDING")
START = 1_796_205_600    # 2026-12-02T10:00:00, the stand-in's clock at its start
RELEASES = ("22.05", "24.11", "26.05")


@dataclass
class Node:
    base: str = "IDLE"                       # IDLE, DOWN, UNKNOWN (never registered), FUTURE
    flags: set[str] = field(default_factory=set)   # DRAIN, FAIL, REBOOT_REQUESTED, REBOOT_ISSUED, NOT_RESPONDING
    reason: str = ""
    reason_by: str = ""                      # "root@2026-12-02T10:00:00", as scontrol prints it after the reason
    # slurmctld's next_state as scontrol prints it (NextState=, while a reboot is asked or issued): RESUME, DOWN,
    # UNDRAIN (24.11 on: an ASAP reboot without nextstate= of a node not drained), or "" (NO_VAL: none)
    next_state: str = ""
    undrain: bool = False                    # next_state's UNDRAIN bit: the node was not drained when asked ASAP
    boot: int | None = START                 # None: never registered (BootTime=None)
    # SlurmdStartTime: the start its slurmd reported when it last registered, on the node's clock (slurmd.c
    # _fill_registration_msg: the process's start, the same on each of its registrations); None: never registered
    slurmd_start: int | None = START
    gres: str = ""                           # slurm.conf's Gres=, e.g. gpu:h100:8
    cpus: int = 2
    issued_at: int = 0                       # when the reboot was sent to the node (boot_req_time)
    registers_at: int | None = None          # when its slurmd registers after that; None: Slurm.reboot_s after it
    booting: bool = False                    # its reboot issued, its slurmd not registered since
    sick_after_boot: str = ""                # a reason the node's own health check drains it with when it comes back
    registering: bool = False                # asked to register again (an undrain, a resume): NOT_RESPONDING until then

    def __post_init__(self) -> None:
        if self.base == "UNKNOWN":
            self.boot = self.slurmd_start = None


@dataclass
class Partition:
    nodes: list[str]
    default: bool = False
    max_minutes: int | None = None           # MaxTime; None: INFINITE


@dataclass
class Reservation:
    nodes: str                               # a hostlist, as given
    flags: str = ""
    users: str = "root"
    start: int = START
    minutes: int = 365 * 24 * 60
    partition: str = ""

    @property
    def names(self) -> list[str]:
        return hostlist.expand_hostlist(self.nodes)

    def active(self, now: int) -> bool:
        return self.start <= now < self.start + self.minutes * 60

    @property
    def maint(self) -> bool:
        return "MAINT" in self.flags.split(",")


@dataclass
class Job:
    job_id: int
    name: str
    user: str
    nodes: list[str]
    script: str = ""
    options: dict[str, str] = field(default_factory=dict)
    state: str = "PENDING"
    reason: str = "None"
    exit_code: str = "0:0"
    submitted: int = START
    started: int | None = None
    ended: int | None = None
    ends_at: int | None = None               # a running job's end, on the stand-in's clock (None: its script's)
    stdout: str = ""
    output: str = ""
    cpus: int | None = None                  # the CPUs it holds on each of its nodes; None: all of them
    gpus: tuple[int, ...] = ()               # the GPUs it holds on each of its nodes, by gres index

    @property
    def partition(self) -> str:
        return self.options.get("partition", "").split(",")[0]


def time_string(minutes: int | None) -> str:
    """A partition's MaxTime as sinfo prints it (mins2time_str, src/common/parse_time.c)."""
    if minutes is None:
        return "infinite"
    seconds = minutes * 60
    days, hours, mins, secs = seconds // 86400, seconds // 3600 % 24, seconds // 60 % 60, seconds % 60
    if days:
        return f"{days}-{hours:02d}:{mins:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{mins:02d}:{secs:02d}"
    return f"{mins}:{secs:02d}"


def clock(seconds: int) -> str:
    """A duration as scontrol's RunTime prints it: [D-]HH:MM:SS."""
    days, rest = divmod(seconds, 86400)
    text = f"{rest // 3600:02d}:{rest // 60 % 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def stamp(seconds: int) -> str:
    """A time as Slurm prints one (slurm_make_time_str, ISO format), in UTC."""
    import time
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def shown(seconds: int, time_format: str = "") -> str:
    """A time as scontrol prints one under SLURM_TIME_FORMAT (parse_time.c, slurm_make_time_str): the standard form
    where it is unset, "standard" or not a format (no %, 32 characters or more), else strftime's in the stand-in's
    time zone (UTC), whose %s is the seconds since the epoch."""
    import time
    if not time_format or time_format == "standard" or "%" not in time_format or len(time_format) >= 32:
        return stamp(seconds)
    assert time_format != "relative", "SLURM_TIME_FORMAT=relative is not simulated"
    return time.strftime(time_format.replace("%s", str(seconds)), time.gmtime(seconds))


def complete(base: str, flags: set[str]) -> str:
    """node_state_string_complete: BASE+FLAG+... in node_state_flags order."""
    return "+".join([base, *(f for f in FLAG_ORDER if f in flags)])


def long_state(base: str, flags: set[str]) -> str:
    """node_state_string (slurm_protocol_defs.c), for the states the stand-in holds, as sinfo prints it (lower case)."""
    maint, drain, fail = "MAINTENANCE" in flags, "DRAIN" in flags, "FAIL" in flags
    reboot, issued = "REBOOT_REQUESTED" in flags, "REBOOT_ISSUED" in flags
    no_resp, busy = "NOT_RESPONDING" in flags, base in ("ALLOCATED", "MIXED") or "COMPLETING" in flags
    suffix = ("$" if maint else "^" if issued else "@" if reboot else "*" if no_resp else "")
    if maint and not (drain or base in ("ALLOCATED", "DOWN", "MIXED")):
        return "maint*" if no_resp else "maint"
    if (reboot or issued) and base not in ("ALLOCATED", "MIXED"):
        return "reboot^" if issued else "reboot*" if no_resp else "reboot"
    if drain:
        return ("draining" if busy else "drained") + suffix
    if fail:
        return ("failing" if busy else "fail") + ("*" if no_resp else "")
    if base == "UNKNOWN":
        return "unknown*" if no_resp else "unknown"
    if base == "IDLE" and not suffix and "RESERVED" in flags:
        return "reserved"
    return base.lower() + suffix
