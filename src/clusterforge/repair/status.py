"""What the loop says of itself (``--status``): the repairs under way with what each waits for and by when, the
quarantined nodes, the breaker, and the repairs that ended last. As text for an admin, and as JSON (``--status
--json``) for `clusterforge check`, which reads it through the controller instead of the files under the state dir
(root's) and so never parses the text. ``from_json`` is the one reader of that JSON, beside its writer.

The JSON is bounded whatever the history's length: each node's last ``PER_NODE`` repairs ended, ``OVERALL`` in all.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field

from ..slurm import drains
from .passes import BACK, WAIT_GPU, utc
from .plan import POWER_CYCLE, REBOOT, RESET
from .store import Store

VERSION = 1
PER_NODE = 5
OVERALL = 50
TEXT_ENDED = 10   # the text's last ended repairs: a screen, not the whole bound

# What a repair under way waits for in each step; past its deadline the loop takes the next action, or quarantines.
WAITS_FOR = {
    WAIT_GPU: "the jobs on {gpu} to end, then its reset",
    RESET: "the node's health check to reset {gpu}",
    REBOOT: "the node to register after Slurm's reboot (the node's jobs end first)",
    POWER_CYCLE: "the node to boot again after the BMC's power cycle",
    BACK: "the node back in service (the admission gate's tests, where its profile has admission)",
}


@dataclass(frozen=True)
class UnderWay:
    node: str
    fault: str       # the health check's drain that started it
    step: str        # passes.py's: wait-gpu, reset, reboot, power_cycle, back
    attempt: int
    gpu: str
    seen_at: float
    deadline: float  # 0: none (a wait for the GPU's jobs, which are never killed)

    @property
    def waits_for(self) -> str:
        return WAITS_FOR.get(self.step, self.step).format(gpu=self.gpu or "its GPU")


@dataclass(frozen=True)
class Quarantine:
    node: str
    reason: str      # the drain's: cf:repair:quarantined <fault> <attempts>


@dataclass(frozen=True)
class BreakerState:
    open_since: float = 0.0   # 0: closed
    why: str = ""
    closed_at: float = 0.0    # an admin's last close; 0: never

    @property
    def open(self) -> bool:
        return self.open_since > 0


@dataclass(frozen=True)
class Ended:
    node: str
    fault: str
    outcome: str
    actions: tuple[str, ...]
    would: str            # observe mode: the action it would have taken
    seen_at: float
    ended_at: float
    in_service: bool

    @property
    def seconds(self) -> int:
        """From the loop's first sight of the fault to the repair's end."""
        return max(0, int(self.ended_at - self.seen_at))


@dataclass(frozen=True)
class Status:
    now: float
    breaker: BreakerState = field(default_factory=BreakerState)
    under_way: tuple[UnderWay, ...] = ()
    quarantined: tuple[Quarantine, ...] = ()
    ended: tuple[Ended, ...] = ()    # oldest first


def read(store: Store, now: float) -> Status:
    """The loop's files as they are now, nodes in name order (Store.nodes sorts them). A state dir this process
    may not read raises PermissionError: Store would read a directory it cannot list as one with no node in repair."""
    try:
        os.listdir(store.root)
    except FileNotFoundError:
        pass   # the loop has not run yet: nothing under way
    breaker = store.breaker()
    under_way, quarantined = [], []
    for name, node in store.nodes().items():
        if node.repair is not None:
            r = node.repair
            under_way.append(UnderWay(name, r.fault, r.step, r.number, r.gpu, r.seen_at, r.deadline))
        if node.quarantined:
            quarantined.append(Quarantine(name, node.quarantined))
    ended = [e for e in (_ended(entry) for entry in store.history()) if e is not None]
    return Status(now, BreakerState(breaker.open_since, breaker.why, breaker.closed_at), tuple(under_way),
                  tuple(quarantined), bounded(ended))


def bounded(ended: list[Ended]) -> tuple[Ended, ...]:
    """Each node's last PER_NODE, then the last OVERALL of those, oldest first."""
    kept_per_node: dict[str, int] = {}
    kept: list[Ended] = []
    for entry in reversed(ended):
        if kept_per_node.get(entry.node, 0) < PER_NODE:
            kept_per_node[entry.node] = kept_per_node.get(entry.node, 0) + 1
            kept.append(entry)
    return tuple(reversed(kept[:OVERALL]))


def _ended(entry: object) -> Ended | None:
    """A line of history.jsonl; None where it is not one the loop wrote (history.jsonl is appended, never checked)."""
    if not isinstance(entry, dict):
        return None
    try:
        actions = entry.get("actions") or []
        return Ended(str(entry["node"]), str(entry.get("fault", "")), str(entry.get("outcome", "")),
                     tuple(str(a) for a in actions), str(entry.get("action", "")) if not actions else "",
                     float(entry["seen_at"]), float(entry["ended_at"]), bool(entry.get("in_service", False)))
    except (KeyError, TypeError, ValueError):
        return None


# -- JSON, for check

def to_json(status: Status) -> str:
    return json.dumps({"version": VERSION, **asdict(status)}, sort_keys=True) + "\n"


def from_json(text: str) -> Status:
    """The loop's ``--status --json``; ValueError where it is not (another version, cut, another program's)."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("version") != VERSION:
        found = data.get("version") if isinstance(data, dict) else None
        raise ValueError(f"the repair loop's status is version {found!r}, this reads {VERSION}")
    try:
        return Status(float(data["now"]), BreakerState(**data["breaker"]),
                      tuple(UnderWay(**u) for u in data["under_way"]),
                      tuple(Quarantine(**q) for q in data["quarantined"]),
                      tuple(Ended(**{**e, "actions": tuple(e["actions"])}) for e in data["ended"]))
    except (KeyError, TypeError) as error:
        raise ValueError(f"the repair loop's status lacks or garbles {error}") from None


# -- text, for an admin

def when(deadline: float, now: float) -> str:
    left = int(deadline - now)
    if left >= 0:
        return f"by {utc(deadline)} (in {left} s)"
    return f"by {utc(deadline)} (passed {-left} s ago: the loop acts at its next pass)"


def actions_text(ended: Ended) -> str:
    if ended.would:
        return f"would {ended.would.replace('_', ' ')}"
    return ", ".join(a.replace("_", " ") for a in ended.actions) or "no action"


def text(said: Status) -> str:
    b = said.breaker
    lines = [f"breaker: open since {utc(b.open_since)}: {b.why}; no new repair starts until an admin closes it "
             "(clusterforge repair --close-breaker INVENTORY)" if b.open else "breaker: closed"]
    if said.under_way:
        lines.append("under way:")
    for r in said.under_way:
        deadline = when(r.deadline, said.now) if r.deadline else "no deadline: jobs are never killed"
        lines.append(f"  {r.node}: {r.step.replace('_', ' ')} (attempt {r.attempt}) for {r.fault}; next: "
                     f"{r.waits_for}, {deadline}")
    if said.quarantined:
        lines.append("quarantined (nothing automatic touches them; an admin's resume lifts it):")
    lines += [f"  {q.node}: {q.reason}; {drains.admin_resume_command(q.node)}" for q in said.quarantined]
    ended = said.ended[-TEXT_ENDED:]
    if ended:
        # Last, oldest first: the newest is the last line on the admin's screen (and where the e2e tests read it).
        lines.append("last ended:")
        lines += [f"  {utc(e.ended_at)} {e.node}: {e.outcome} ({e.fault}; {actions_text(e)}; {e.seconds} s from "
                  "its fault)" for e in ended]
    return "\n".join(lines) + "\n"
