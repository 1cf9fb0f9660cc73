"""The loop's files on the controller, each replaced whole (written aside, then renamed), so a loop killed mid-write
leaves the old file or the new, never half of one; root's alone (0700):

- ``nodes/<node>.json``: the node's repair under way (its fault, its step, when it acted, its deadline), the actions
  taken for it within the window (the attempts), whether it is quarantined, and the fault observe mode said once;
- ``breaker.json``: the faults seen within the breaker's window, and whether it is open (since when, why) or when an
  admin last closed it;
- ``history.jsonl``: one line per repair that ended, the last HISTORY_KEPT of them (rewritten whole as one ends): the
  fault, the actions, the outcome, and the times from fault to service, read back by ``--status``;
- ``totals.json``: the totals of every repair ever ended (totals.py), the metrics' counters, which trimming the
  history must not lower.

A file that cannot be read is read as empty: a repair lost is a fault seen anew at the next pass (its node still
drained for it), never an action taken twice on a stale step; the attempts lost with it are said.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields

from ..health import statedir
from .totals import Totals

HISTORY = "history.jsonl"
TOTALS = "totals.json"
# The ended repairs history.jsonl keeps: --status shows the last ten, an admin reading the file has a thousand, and
# the file stays a few hundred KB, rewritten whole at each end.
HISTORY_KEPT = 1000


@dataclass
class Action:
    klass: str          # the fault class it was for
    action: str         # reset, reboot, power_cycle
    at: float
    outcome: str = ""   # "" while under way


@dataclass
class Repair:
    fault: str          # the drain's reason that started it
    code: str
    klass: str
    gpu: str
    bus: str
    seen_at: float
    step: str           # wait-gpu, reset, reboot, power_cycle, back
    acted_at: float = 0.0
    deadline: float = 0.0
    number: int = 0     # this action's attempt number
    admin: str = ""     # someone else's reason the loop keeps: its reboot withdrawn (or an earlier loop's nextstate=resume)
    boot: str = ""      # the node's BootTime before a power cycle: back once it differs
    asked: bool = False  # slurmctld took this step's command: the fault's own reason seen again is the node faulting
                         # again, not a command lost (a loop killed between the step's record and its command)


@dataclass
class NodeFile:
    repair: Repair | None = None
    attempts: list[Action] = field(default_factory=list)
    quarantined: str = ""   # the quarantine's reason, while the node holds it
    quarantined_boot: str = ""  # its BootTime where quarantined with the loop's reboot in flight: Slurm's registration
                                # after that boot lifted the drain (an earlier loop's nextstate=resume): no admin did
    observed: str = ""      # the fault observe mode has said it would repair
    counted: str = ""       # the fault last counted for the breaker (each fault once)
    counted_at: float = 0.0  # when the loop first saw it: a repair's start waits for budgets, the breaker, a mode

    @classmethod
    def from_json(cls, text: str) -> NodeFile:
        data = json.loads(text)
        repair = data.get("repair")
        return cls(repair=_build(Repair, repair) if repair else None,
                   attempts=[_build(Action, a) for a in data.get("attempts", [])],
                   quarantined=str(data.get("quarantined", "")),
                   quarantined_boot=str(data.get("quarantined_boot", "")),
                   observed=str(data.get("observed", "")), counted=str(data.get("counted", "")),
                   counted_at=float(data.get("counted_at", 0.0)))


def _build(kind, data: dict):
    names = {f.name for f in fields(kind)}
    return kind(**{k: v for k, v in data.items() if k in names})


@dataclass
class Breaker:
    faults: list[list] = field(default_factory=list)   # [node, at] of each fault seen, within the window
    open_since: float = 0.0                             # 0: closed
    why: str = ""
    closed_at: float = 0.0                              # an admin's close: faults before it do not count

    @property
    def open(self) -> bool:
        return self.open_since > 0


class Store:
    def __init__(self, root: str):
        self.root = root
        self._history: tuple[tuple, tuple[tuple[dict, ...], Totals]] | None = None   # (files' stamps, what they held)

    def _path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def _write(self, path: str, text: str) -> None:
        statedir.save(os.path.dirname(path), os.path.basename(path), text)

    def _read(self, path: str) -> str | None:
        return statedir.load(os.path.dirname(path), os.path.basename(path))

    def node(self, name: str) -> NodeFile:
        text = self._read(self._path("nodes", f"{name}.json"))
        try:
            return NodeFile.from_json(text) if text else NodeFile()
        except (ValueError, TypeError, KeyError, AttributeError):
            return NodeFile()

    def nodes(self) -> dict[str, NodeFile]:
        directory = self._path("nodes")
        names = sorted(e[:-len(".json")] for e in os.listdir(directory) if e.endswith(".json")) \
            if os.path.isdir(directory) else []
        return {name: self.node(name) for name in names}

    def save(self, name: str, node: NodeFile) -> None:
        self._write(self._path("nodes", f"{name}.json"), json.dumps(asdict(node), sort_keys=True) + "\n")

    def breaker(self) -> Breaker:
        text = self._read(self._path("breaker.json"))
        try:
            return _build(Breaker, json.loads(text)) if text else Breaker()
        except (ValueError, TypeError, AttributeError):
            return Breaker()

    def save_breaker(self, breaker: Breaker) -> None:
        self._write(self._path("breaker.json"), json.dumps(asdict(breaker), sort_keys=True) + "\n")

    def ended(self, entry: dict) -> None:
        """One more ended repair: the totals first, so that a loop killed between the two writes loses the entry's
        line, never its count."""
        history = self.history()
        self._write(self._path(TOTALS), history.totals.added(entry).to_json())
        kept = [*history, entry][-HISTORY_KEPT:]
        self._write(self._path(HISTORY), "".join(json.dumps(e, sort_keys=True) + "\n" for e in kept))

    def history(self) -> History:
        """Read again only where either file changed since the last read (each is replaced whole, so a new inode):
        the loop asks at every pass, and most passes end no repair."""
        stamp = (_stamp(self._path(HISTORY)), _stamp(self._path(TOTALS)))
        if self._history is None or self._history[0] != stamp:
            self._history = (stamp, self._read_history())
        entries, totals = self._history[1]
        return History(entries, totals)

    def _read_history(self) -> tuple[tuple[dict, ...], Totals]:
        entries = []
        for line in (self._read(self._path(HISTORY)) or "").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):   # a line the loop did not write is no entry
                entries.append(entry)
        text = self._read(self._path(TOTALS))
        try:
            totals = Totals.from_json(text) if text else Totals.of(entries)
        except (ValueError, TypeError, KeyError, AttributeError):
            # Counted again from the entries kept: a counter that goes down, which Prometheus reads as a reset.
            totals = Totals.of(entries)
        return tuple(entries), totals


class History(list):
    """The ended repairs kept, oldest first, as a list (--status reads the last ones), with ``totals``: those of every
    repair ever ended, the metrics' counters."""

    def __init__(self, entries: Iterable[dict], totals: Totals):
        super().__init__(entries)
        self.totals = totals


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_ino, found.st_mtime_ns, found.st_size
