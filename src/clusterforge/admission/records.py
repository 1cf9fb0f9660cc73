"""Each node's record of admission and acceptance results: one JSON line per result (verdict.Result.record()), in one
file per node, appended to and never rewritten, so a record is its node's history in the order it was measured.

Where: ``$XDG_STATE_HOME/clusterforge/<cluster>/records/<node>.jsonl`` on the machine that runs `clusterforge accept`
(``~/.local/state`` without XDG_STATE_HOME, as the XDG base directory specification says); the gate writes and reads
the same files with this module on the controller (``/var/lib/clusterforge/gate/records``, gate/store.py), where
`clusterforge check` reads them over SSH (``parse``) and the Slurm exporter, as nobody, reads them too: the files are
written readable by all (a result holds no secret: a test, its number, its floor). accept appends its records there
too (``append_commands``, over its connection to the controller), so that the monitoring sees every node's results,
not only the gate's; check, which reads both places, keeps a result found in both once (``merge``). A plain format
an admin reads with ``jq`` and keeps with the cluster's other state.

What is read from it: a node's baseline (its first passing result per test: what the node showed when it was
accepted), its last result per test, and the fleet's median of the last values per test; a node whose last value is a
set share below either is falling behind (a cable that degrades, a GPU that throttles) before it fails its floor.
Every number held to a floor is a bandwidth, so lower is worse.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

SUFFIX = ".jsonl"
RECORDS = "records"  # the directory's name, under the cluster's state here and under the gate's on the controller
ON_CONTROLLER = f"/var/lib/clusterforge/gate/{RECORDS}"  # the gate's (gate.STATE_DIR), read by check and the exporter
# What a record line must hold; the rest (value, unit, floor, detail, source) is kept as the result wrote it.
REQUIRED = ("node", "test", "passed", "time")
DIRECTORY_MODE, FILE_MODE = 0o755, 0o644  # readable by the exporter (nobody) where the gate writes them
# A node's or a cluster's name as a file name: what Slurm and the inventory allow, never a path.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# The end of append_commands' here-documents: a record line is one JSON object, "{...}", never this word.
_END = "CF_RECORDS_END"
# The most a command of append_commands holds: the command is one argument of ssh and of the shell on the other end,
# and Linux takes at most 128 KiB in one (MAX_ARG_STRLEN). accept's first round at 64 nodes kept more than that,
# and the command could not even start ("Argument list too long").
COMMAND_BYTES = 64 * 1024


class RecordError(ValueError):
    """A record that cannot be written or read: names the file and line."""


def state_home(environ: Mapping[str, str] | None = None) -> Path:
    """$XDG_STATE_HOME, or ~/.local/state where it is unset, empty or relative (the specification ignores those)."""
    environ = os.environ if environ is None else environ
    given = environ.get("XDG_STATE_HOME", "")
    if given and Path(given).is_absolute():
        return Path(given)
    return Path(environ.get("HOME") or Path.home()) / ".local" / "state"


def directory(cluster: str, environ: Mapping[str, str] | None = None) -> Path:
    """Where the records of ``cluster`` are kept on this machine."""
    return state_home(environ) / "clusterforge" / _checked(cluster, "cluster") / RECORDS


def _checked(name: str, what: str) -> str:
    if not _NAME.match(name):
        raise RecordError(f"{what} name {name!r} cannot name a record file (letters, digits, '.', '_', '-')")
    return name


def path(records: Path, node: str) -> Path:
    return records / f"{_checked(node, 'node')}{SUFFIX}"


def _lines(results: Iterable[Mapping[str, object]]) -> dict[str, list[str]]:
    """Each result (a record() dict) as its line, by node, in the order given, by node name."""
    by_node: dict[str, list[str]] = {}
    for result in results:
        missing = [key for key in REQUIRED if key not in result]
        if missing:
            raise RecordError(f"a result without {', '.join(missing)}: {dict(result)!r}")
        node = str(result["node"])
        by_node.setdefault(_checked(node, "node"), []).append(json.dumps(dict(result), sort_keys=True))
    return dict(sorted(by_node.items()))


def append(records: Path, results: Iterable[Mapping[str, object]]) -> list[Path]:
    """Add each result (a record() dict) to its node's file, in the order given; the files written, sorted."""
    by_node = _lines(results)
    records.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
    written = []
    for node, lines in by_node.items():
        target = path(records, node)
        # One write per node: appended lines stay whole even when the gate and accept write at once.
        descriptor = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        with open(descriptor, "a", encoding="utf-8") as file:
            file.write("".join(line + "\n" for line in lines))
        written.append(target)
    return written


def append_commands(results: Iterable[Mapping[str, object]], records: str = ON_CONTROLLER) -> list[str]:
    """The shell commands that, run one after another, do ``append`` in the directory ``records`` of another machine
    (accept's to the gate's on the controller, run as root): the same lines, the same modes (umask 022: the directory
    0755, the files 0644, as append makes them), lines added by ``cat >>`` (O_APPEND, as append opens them), each
    command at most COMMAND_BYTES but for a line longer than that alone. The gate writes the files of the nodes it
    holds, which accept leaves alone, so the two do not add to one file at once. Nothing to add: no command."""
    head = ["set -e", "umask 022", f"mkdir -p {shlex.quote(records)}"]
    head_size = sum(len(step) + 1 for step in head)
    commands: list[str] = []
    steps, size = list(head), head_size
    for node, lines in _lines(results).items():
        opening = f"cat >> {shlex.quote(f'{records}/{node}{SUFFIX}')} <<'{_END}'"
        chunk: list[str] = []
        for line in lines:
            if chunk and size + len(opening) + len(_END) + len(line) + 3 > COMMAND_BYTES:
                commands.append("\n".join([*steps, opening, *chunk, _END]))
                steps, size, chunk = list(head), head_size, []
            chunk.append(line)
            size += len(line) + 1
        steps += [opening, *chunk, _END]
        size += len(opening) + len(_END) + 2
    if len(steps) > len(head):
        commands.append("\n".join(steps))
    return commands


def parse(text: str, where: str, node: str | None = None) -> dict[str, list[dict]]:
    """The results in ``text`` (record lines, of one node's file or of several files one after the other), by node,
    each node's in the order of the text; ``where`` names the text in errors. With ``node``, every line must be
    that node's."""
    found: dict[str, list[dict]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as error:
            raise RecordError(f"{where}:{number}: not a JSON line ({error.msg})") from None
        if not isinstance(record, dict) or any(key not in record for key in REQUIRED):
            raise RecordError(f"{where}:{number}: not a result (it needs {', '.join(REQUIRED)})")
        if not isinstance(record["node"], str) or not _NAME.match(record["node"]):
            raise RecordError(f"{where}:{number}: not a node's name: {record['node']!r}")
        if node is not None and record["node"] != node:
            raise RecordError(f"{where}:{number}: a result of {record['node']!r} in {node}'s record")
        found.setdefault(record["node"], []).append(record)
    return found


def read(records: Path, node: str) -> list[dict]:
    """A node's results, oldest first; none where it has no record yet."""
    target = path(records, node)
    if not target.exists():
        return []
    return parse(target.read_text(encoding="utf-8"), str(target), node).get(node, [])


def read_all(records: Path) -> dict[str, list[dict]]:
    """Every node's results, by node name."""
    if not records.is_dir():
        return {}
    return {p.name[:-len(SUFFIX)]: read(records, p.name[:-len(SUFFIX)])
            for p in sorted(records.glob(f"*{SUFFIX}"))}


def merge(*fleets: Mapping[str, Iterable[Mapping[str, object]]]) -> dict[str, list[dict]]:
    """Several sources' records (the gate's on the controller, accept's here) as one fleet: each node's results by
    time, oldest first; results of one time keep the order of the sources given. A result found more than once, the
    same in every key (accept's, kept here and appended on the controller), is kept once, where it came first: a
    node's history lists each measurement once (its standing is the same either way: a copy is neither its first
    result nor a later one)."""
    merged: dict[str, list[dict]] = {}
    seen: set[str] = set()
    for fleet in fleets:
        for node, results in fleet.items():
            for result in results:
                key = json.dumps(dict(result), sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    merged.setdefault(node, []).append(dict(result))
    return {node: sorted(results, key=lambda r: str(r["time"])) for node, results in sorted(merged.items())}


def _number(record: Mapping[str, object]) -> float | None:
    value = record.get("value")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def baseline(results: Iterable[Mapping[str, object]]) -> dict[str, dict]:
    """Per test, the node's first passing result: what it showed when it was accepted."""
    first: dict[str, dict] = {}
    for record in results:
        if record["passed"] and record["test"] not in first:
            first[str(record["test"])] = dict(record)
    return first


def last(results: Iterable[Mapping[str, object]]) -> dict[str, dict]:
    """Per test, the node's most recent result, passing or not."""
    latest: dict[str, dict] = {}
    for record in results:
        latest[str(record["test"])] = dict(record)
    return latest


def fleet_median(fleet: Mapping[str, Iterable[Mapping[str, object]]]) -> dict[str, float]:
    """Per test, the median over the nodes of each node's last number (tests without a number, as dcgm's, left
    out)."""
    values: dict[str, list[float]] = {}
    for results in fleet.values():
        for test, record in last(results).items():
            number = _number(record)
            if number is not None:
                values.setdefault(test, []).append(number)
    return {test: statistics.median(numbers) for test, numbers in sorted(values.items())}


@dataclass(frozen=True, slots=True)
class Standing:
    """A node's last number for one test against its baseline and the fleet's median, and the share it is below
    each (0.1: 10 % below; negative: above; None where there is nothing to compare with)."""

    node: str
    test: str
    value: float
    unit: str
    baseline: float | None
    median: float | None

    @property
    def below_baseline(self) -> float | None:
        return _below(self.value, self.baseline)

    @property
    def below_median(self) -> float | None:
        return _below(self.value, self.median)

    def falls(self, share: float) -> bool:
        """More than ``share`` below its baseline or the median."""
        return any(b is not None and b > share for b in (self.below_baseline, self.below_median))


def _below(value: float, reference: float | None) -> float | None:
    return None if reference is None or reference <= 0 else (reference - value) / reference


def own(results: Iterable[Mapping[str, object]]) -> list[Mapping[str, object]]:
    """A node's own results: those of tests it ran alone. A group's result (accept's all_reduce across a leaf, the
    spine or a bisection's pair, which names its ``group``) is kept in each member's record as evidence, but it
    measures the group, its peers and the switches between them: a node's spine run held to its own leaf run, or to
    the fleet's pairs, would look like a node falling behind when it is the group that differs."""
    return [record for record in results if not record.get("group")]


def standings(fleet: Mapping[str, Iterable[Mapping[str, object]]]) -> list[Standing]:
    """Every node's last number per test it ran alone against its baseline and the median, by node then test."""
    fleet = {node: own(results) for node, results in fleet.items()}
    medians = fleet_median(fleet)
    found = []
    for node, results in sorted(fleet.items()):
        first = baseline(results)
        for test, record in sorted(last(results).items()):
            number = _number(record)
            if number is None:
                continue
            base = _number(first[test]) if test in first else None
            found.append(Standing(node, test, number, str(record.get("unit") or ""), base, medians.get(test)))
    return found


def falling(fleet: Mapping[str, Iterable[Mapping[str, object]]], share: float) -> list[Standing]:
    """The standings more than ``share`` (0.1 for 10 %) below the node's baseline or the fleet's median."""
    if not 0 < share < 1:
        raise RecordError(f"a share below the baseline is between 0 and 1 (0.1 for 10 %), not {share}")
    return [s for s in standings(fleet) if s.falls(share)]
