"""The gate's files on the controller, each replaced whole (written aside, then renamed), so a gate killed mid-write
leaves the old file or the new, never half of one:

- ``held/<node>.json``: a node the gate has seen held, and the round of tests under way: the judged result of each
  test that has run (slurmctld forgets an ended job after MinJobAge, the verdict must outlive that), the jobs of its
  own that ended without a verdict, and whether the node has passed (set before its hold is lifted, so that a gate
  killed in between still records a pass, not an admission by hand). A held file whose reservation is gone is how
  the gate sees an admin's admission by hand.
- ``admitted/<node>``: the node has been admitted, with how (passed, by hand, in service before the gate, released
  when its profile lost admission); the
  deploy holds as new every node of a profile with admission that has none.
- ``records/<node>.jsonl``: one JSON line per result, appended, in the format of admission/records.py (which writes
  and reads them, here as on the admin's machine); ``check`` reads them over SSH, the Slurm exporter as nobody.

Every file is one node's, and so is its temporary twin (``<file>.tmp``): the pass steps its nodes at once
(gate/passes.py), each node by one thread, so no two threads ever write the same file; a node's records are appended
in one write (O_APPEND), whole even beside another writer.

The directory itself is only passed through by others (0711): ``records/`` is readable by all (a result holds no
secret), ``held/`` and ``admitted/`` are root's.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..admission import records as node_records

PASSED = "passed"
BY_HAND = "admitted by hand"
BEFORE_THE_GATE = "in service before the gate"
NO_ADMISSION = "released: its profile has no admission"


@dataclass
class Round:
    """A node's hold as the gate keeps it: which reservation, the tests judged so far in this round."""

    reservation: str
    cause: str
    # Gate jobs of this node with an id up to this one belong to an earlier round (slurmctld lists ended jobs for a
    # while): set when a round starts, from the jobs Slurm lists then.
    after_job: int = 0
    results: dict[str, dict] = field(default_factory=dict)   # test -> {"job": id, "results": [record, ...]}
    discarded: list[int] = field(default_factory=list)        # jobs that ended without a verdict
    passed: bool = False

    @classmethod
    def from_json(cls, text: str) -> Round:
        data = json.loads(text)
        return cls(data["reservation"], data["cause"], int(data.get("after_job", 0)), dict(data.get("results", {})),
                   [int(j) for j in data.get("discarded", [])], bool(data.get("passed", False)))


class Store:
    def __init__(self, root: str):
        self.root = root

    def _path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def _write(self, path: str, text: str) -> None:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        os.chmod(os.path.dirname(path), 0o700)  # one made 0755 by an earlier gate: root's, now its parent is 0711
        tmp = f"{path}.tmp"
        with open(tmp, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(tmp, path)

    def held(self) -> dict[str, Round]:
        """Every node the gate holds a round for, by name; a file it cannot read is started again (a round lost is
        a round run again, never a node released)."""
        found = {}
        directory = self._path("held")
        for entry in sorted(os.listdir(directory)) if os.path.isdir(directory) else ():
            if entry.endswith(".json"):
                try:
                    with open(os.path.join(directory, entry), encoding="utf-8") as file:
                        found[entry[:-len(".json")]] = Round.from_json(file.read())
                except (OSError, ValueError, KeyError, TypeError):
                    continue
        return found

    def save(self, node: str, round_: Round) -> None:
        self._write(self._path("held", f"{node}.json"), json.dumps(asdict(round_), sort_keys=True) + "\n")

    def forget(self, node: str) -> None:
        try:
            os.remove(self._path("held", f"{node}.json"))
        except FileNotFoundError:
            pass

    def admitted(self, node: str) -> dict | None:
        try:
            with open(self._path("admitted", node), encoding="utf-8") as file:
                return json.loads(file.read())
        except FileNotFoundError:
            return None
        except ValueError:
            return {"how": "unreadable"}

    def admit(self, node: str, how: str, time: str, reservation: str = "") -> None:
        record = {"node": node, "how": how, "time": time, **({"reservation": reservation} if reservation else {})}
        self._write(self._path("admitted", node), json.dumps(record, sort_keys=True) + "\n")

    @property
    def records_dir(self) -> Path:
        return Path(self.root) / node_records.RECORDS

    def append(self, node: str, records: list[dict]) -> None:
        if records:
            node_records.append(self.records_dir, records)

    def records(self, node: str) -> list[dict]:
        return node_records.read(self.records_dir, node)
