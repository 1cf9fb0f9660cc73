"""NVIDIA nvbandwidth's output, text or ``-j`` JSON: each test's matrix of GB/s (a cell per CPU or GPU pair, None
where the tool prints N/A), its SUM, and whether it ran.

nvbandwidth exits 0 whatever it measured, also when a test is waived or fails (acceptance.md §5), so the only
evidence is here: a test asked for and not found complete (``Running`` without its ``SUM``, JSON status other than
``Passed``) did not pass. The text's ``Waived:`` line names no test; a waived test is simply not among those run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from . import ParseError, number, shown

PASSED, ERROR = "Passed", "Error"
_VERSION = re.compile(r"^nvbandwidth Version: (?P<version>\S+)")
_RUNNING = re.compile(r"^Running (?P<name>\w+)\.$")
_SUM = re.compile(r"^SUM (?P<name>\w+) (?P<value>\S+)$")
_STATS = re.compile(r"^(MIN|MAX|AVG) \w+ \S+$")  # with -v


@dataclass(frozen=True, slots=True)
class Matrix:
    name: str
    status: str                                       # Passed, Error, Waived, or Running (died inside)
    description: str = ""
    cells: tuple[tuple[float | None, ...], ...] = ()  # rows as printed; None: N/A
    sum: float | None = None
    error: str = ""

    def values(self) -> list[float]:
        return [v for row in self.cells for v in row if v is not None]


@dataclass(frozen=True, slots=True)
class Run:
    version: str
    tests: tuple[Matrix, ...]

    def test(self, name: str) -> Matrix | None:
        return next((t for t in self.tests if t.name == name), None)


def parse(output: str) -> Run:
    text = output.strip()
    return parse_json(text) if text.startswith("{") else parse_text(output)


def _cell(text: str, where: str) -> float | None:
    return None if text == "N/A" else number(text, where)


def parse_text(output: str) -> Run:
    lines = [line.rstrip() for line in output.splitlines()]
    version = next((m.group("version") for m in map(_VERSION.match, lines) if m), None)
    if version is None:
        raise ParseError("not nvbandwidth's output: no 'nvbandwidth Version:' line")
    tests: list[Matrix] = []
    index = 0
    while index < len(lines):
        running = _RUNNING.match(lines[index])
        index += 1
        if not running:
            continue
        name = running.group("name")
        # What the matrix measures ("memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)"); a test that fails at
        # once prints its error there instead.
        description = ""
        if index < len(lines) and lines[index].startswith(("memcpy", "memory")):
            description = lines[index]
            index += 1
        cells: list[tuple[float | None, ...]] = []
        columns: int | None = None
        finished: Matrix | None = None
        notes: list[str] = []
        while index < len(lines):
            line = lines[index]
            where = f"line {index + 1}"
            index += 1
            fields = line.split()
            summed = _SUM.match(line.strip())
            if summed:
                if summed.group("name") != name:
                    raise ParseError(f"{where}: SUM of {summed.group('name')} inside {name}: {shown(line)}")
                if not cells:
                    raise ParseError(f"{where}: {name} has a SUM but no matrix")
                finished = Matrix(name, PASSED, description, tuple(cells), number(summed.group("value"), where))
                break
            if _RUNNING.match(line):
                index -= 1
                break
            if columns is None and fields and all(f.isdigit() for f in fields):
                columns = len(fields)
                continue
            if columns is not None and fields and fields[0].isdigit() and len(fields) > 1:
                if len(fields) != columns + 1:
                    raise ParseError(f"{where}: {len(fields) - 1} cells where {name} has {columns} columns: "
                                     f"{shown(line)}")
                cells.append(tuple(_cell(f, f"{where}, {name}") for f in fields[1:]))
                continue
            if line.strip() and not _STATS.match(line.strip()):
                notes.append(line.strip())
        tests.append(finished or Matrix(name, ERROR, description, tuple(cells), None,
                                        " ".join(notes) or "ended before its SUM line"))
    return Run(version, tuple(tests))


def parse_json(text: str) -> Run:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ParseError(f"not JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    root = document.get("nvbandwidth") if isinstance(document, dict) else None
    if not isinstance(root, dict):
        raise ParseError("no 'nvbandwidth' object: not nvbandwidth's JSON")
    cases = root.get("testcases")
    if not isinstance(cases, list):
        raise ParseError("'nvbandwidth' has no list of testcases")
    tests = []
    for index, case in enumerate(cases):
        if not isinstance(case, dict) or not isinstance(case.get("name"), str) or "status" not in case:
            raise ParseError(f"testcases[{index}] has no name or status")
        name, state = case["name"], str(case["status"])
        matrix = case.get("bandwidth_matrix", [])
        if not isinstance(matrix, list) or not all(isinstance(row, list) for row in matrix):
            raise ParseError(f"{name}: bandwidth_matrix is not a list of rows")
        if state == PASSED and not matrix:
            raise ParseError(f"{name}: Passed without a bandwidth_matrix")
        cells = tuple(tuple(_cell(str(v), name) for v in row) for row in matrix)
        total = case.get("sum")
        tests.append(Matrix(name, state, str(case.get("bandwidth_description", "")), cells,
                            number(str(total), f"{name}, sum") if total is not None else None,
                            str(case.get("error", ""))))
    return Run(str(root.get("version", "")), tuple(tests))
