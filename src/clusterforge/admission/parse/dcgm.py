"""DCGM's ``dcgmi diag`` output: each test's result, and each GPU's, as JSON (``-j``; DCGM 4.x and 3.x) or as the
text table.

What counts: a test is Pass, Fail, Warn, Skip or Not Run. ``-j`` reports a warning as ``Fail`` (DCGM's Diag.cpp);
only the text table's test line says ``Warn``. DCGM 4.x prints ``{"DCGM Diagnostic": ...}`` with per-entity results
and a ``test_summary``; 3.x ``{"DCGM GPU Diagnostic": ...}`` with ``gpu_ids``/``gpu_id``. A run that could not start
is kept as its ``runtime_error`` (JSON) or its ``Error: Unable to complete diagnostic`` line (text), with no test.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from . import ParseError, shown

PASS, FAIL, WARN, SKIP, NOT_RUN = "Pass", "Fail", "Warn", "Skip", "Not Run"
_STATUSES = {"pass": PASS, "fail": FAIL, "warn": WARN, "warning": WARN, "skip": SKIP, "skipped": SKIP,
             "not run": NOT_RUN, "notrun": NOT_RUN}
ROOTS = ("DCGM Diagnostic", "DCGM GPU Diagnostic")  # 4.x, 3.x


@dataclass(frozen=True, slots=True)
class Test:
    name: str
    category: str
    status: str
    gpus: tuple[tuple[int, str], ...] = ()   # (GPU index, status), where the output gives them
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Diag:
    tests: tuple[Test, ...]
    version: str | None = None
    runtime_error: str | None = None


def status(word: str, where: str) -> str:
    found = _STATUSES.get(word.strip().lower())
    if found is None:
        raise ParseError(f"{where}: unknown result {word!r} (Pass, Fail, Warn, Skip, Not Run)")
    return found


def parse(output: str) -> Diag:
    """The JSON or the text table, whichever ``output`` is."""
    text = output.strip()
    if text.startswith("{"):
        return parse_json(text)
    return parse_text(output)


# -- JSON ---------------------------------------------------------------------------------------------------------


def _warnings(items: Any, where: str) -> tuple[str, ...]:
    if items is None:
        return ()
    if not isinstance(items, list):
        raise ParseError(f"{where}: warnings is not a list")
    # 4.x: objects with "warning"; 3.x: the same, or plain strings in old releases.
    return tuple(str(w.get("warning", "")) if isinstance(w, dict) else str(w) for w in items)


def _gpu(result: dict[str, Any]) -> int | None:
    if result.get("entity_group", "GPU") == "GPU" and isinstance(result.get("entity_id"), int):
        return result["entity_id"]
    ids = str(result.get("gpu_id", result.get("gpu_ids", "")))
    return int(ids) if ids.isdigit() else None  # the 3.x software test gives "0,1,2,3": the node as a whole


def _worst(statuses: list[str]) -> str:
    for candidate in (FAIL, WARN, PASS, SKIP, NOT_RUN):
        if candidate in statuses:
            return candidate
    return NOT_RUN


def _test(item: Any, category: str, where: str) -> Test:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        raise ParseError(f"{where}: a test without a name")
    where = f"{where} {item['name']!r}"
    results = item.get("results", [])
    if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        raise ParseError(f"{where}: results is not a list of objects")
    gpus, warnings, statuses = [], [], []
    for result in results:
        if "status" not in result:
            raise ParseError(f"{where}: a result without a status")
        found = status(str(result["status"]), where)
        statuses.append(found)
        gpu = _gpu(result)
        if gpu is not None:
            gpus.append((gpu, found))
        warnings.extend(_warnings(result.get("warnings"), where))
    summary = item.get("test_summary")
    if isinstance(summary, dict) and "status" in summary:
        overall = status(str(summary["status"]), f"{where} test_summary")
    elif statuses:
        overall = _worst(statuses)
    else:
        raise ParseError(f"{where}: neither results nor test_summary")
    return Test(item["name"], category, overall, tuple(gpus), tuple(warnings))


def parse_json(text: str) -> Diag:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ParseError(f"not JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    if not isinstance(document, dict):
        raise ParseError("the JSON is not an object")
    root_name = next((name for name in ROOTS if name in document), None)
    if root_name is None:
        keys = ", ".join(sorted(map(str, document))) or "none"
        raise ParseError(f"no 'DCGM Diagnostic' (4.x) or 'DCGM GPU Diagnostic' (3.x) object; keys: {keys}")
    root = document[root_name]
    if not isinstance(root, dict):
        raise ParseError(f"{root_name!r} is not an object")
    metadata = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
    version = root.get("version") or metadata.get("version")
    if "runtime_error" in root:
        return Diag((), str(version) if version else None, str(root["runtime_error"]))
    categories = root.get("test_categories")
    if not isinstance(categories, list) or not categories:
        raise ParseError(f"{root_name!r} has no test_categories: no test result to read")
    tests = []
    for index, category in enumerate(categories):
        if not isinstance(category, dict) or not isinstance(category.get("tests"), list):
            raise ParseError(f"test_categories[{index}] has no list of tests")
        name = str(category.get("category", ""))
        tests.extend(_test(item, name, f"category {name!r}") for item in category["tests"])
    if not tests:
        raise ParseError("no test in any category")
    return Diag(tuple(tests), str(version) if version else None)


# -- text ---------------------------------------------------------------------------------------------------------

_SECTION = re.compile(r"^[|+]-+\s+(?P<name>\w[\w ]*?)\s+-+[+|]")
_GPU = re.compile(r"^GPU\s*(?P<index>\d+)\s*:\s*(?P<status>.+)$")
_RULE = re.compile(r"^\+-+\+-+\+$")
_HEADER_RULE = re.compile(r"^\+=+\+=+\+$")
_ERROR = re.compile(r"^Error: Unable to complete diagnostic")
_NOTE = re.compile(r"^(?P<kind>Warning|Info)\b")  # "Warning: GPU0", "Info"; never a test such as "Inforom"


def _cells(line: str) -> tuple[str, str] | None:
    if not (line.startswith("|") and line.endswith("|")) or line.count("|") != 3:
        return None
    left, right = line[1:-1].split("|")
    return left.strip(), right.strip()


def _result_word(text: str) -> str:
    # 3.x appends the GPUs it means: "Pass - All", "Fail - GPU: 0, 1".
    return text.split(" - ", 1)[0].strip()


def parse_text(output: str) -> Diag:
    lines = [line.rstrip() for line in output.splitlines()]
    for line in lines:
        if _ERROR.match(line.strip()):
            return Diag((), None, line.strip())
    header = next((i for i, line in enumerate(lines) if (_cells(line) or ("",))[0] == "Diagnostic"), None)
    if header is None:
        raise ParseError("no dcgmi diag table ('| Diagnostic | Result |' header) and no error line")
    section, version = "", None
    tests: list[Test] = []
    current: dict[str, Any] | None = None
    closed = False

    def finish() -> None:
        if current is not None:
            tests.append(Test(current["name"], current["category"], current["status"], tuple(current["gpus"]),
                              tuple(current["warnings"])))

    for number_, line in enumerate(lines[header + 1:], header + 2):
        where = f"line {number_}"
        stripped = line.strip()
        if not stripped:
            continue
        found = _SECTION.match(stripped)
        if found:
            section = found.group("name").strip()
            continue
        if _HEADER_RULE.match(stripped):
            continue
        if _RULE.match(stripped):
            closed = True
            continue
        cells = _cells(stripped)
        if cells is None:
            if closed:
                break  # what follows the table (a shell prompt, another command's output) is not ours
            raise ParseError(f"{where}: not a row of the table: {shown(line)}")
        if closed:
            raise ParseError(f"{where}: a row after the table's closing rule: {shown(line)}")
        left, right = cells
        if section == "Metadata":
            if left == "DCGM Version":
                version = right
            continue
        note = _NOTE.match(left)
        if note:
            if current is None:
                raise ParseError(f"{where}: a {note.group('kind').lower()} before any test: {shown(line)}")
            if note.group("kind") == "Warning":
                current["warnings"].append(right)
            current["last"] = note.group("kind")
            continue
        if not left:
            gpu = _GPU.match(right)
            if gpu and current is not None:
                current["gpus"].append((int(gpu.group("index")), status(gpu.group("status"), where)))
                current["last"] = "GPU"
            elif current is not None and current.get("last") in ("Warning", "Info"):
                if current["last"] == "Warning":
                    current["warnings"][-1] += " " + right  # a message cut into 45-character pieces
            else:
                raise ParseError(f"{where}: a row that belongs to no test: {shown(line)}")
            continue
        finish()
        current = {"name": left, "category": section, "status": status(_result_word(right), where), "gpus": [],
                   "warnings": [], "last": "test"}
    finish()
    if not closed:
        raise ParseError("the table has no closing rule: the output was cut short")
    if not tests:
        raise ParseError("the table holds no test result")
    return Diag(tuple(tests), version)
