"""What every inventory entry shares: immutability, no unknown fields, and where in the inventory it was written.

A mistake in one entry is reported as an InventoryError naming the entry, the field and the inventory line, both
under ``clusterforge`` and under ``pyinfra`` (which prints an error of its own kind as one line, anything else as a
traceback).
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from difflib import get_close_matches
from functools import lru_cache
from itertools import islice
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pydantic
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from ..errors import InventoryError, Problem, for_pyinfra

_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])


def _relative(filename: str) -> str:
    try:
        return os.path.relpath(filename)
    except ValueError:
        return filename


@lru_cache(maxsize=16)
def _calls_in(filename: str, mtime: float) -> dict[tuple[int, int, int, int], ast.Call]:
    """Every call expression of a source file, by its position."""
    try:
        with open(filename, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), filename)
    except (OSError, SyntaxError, ValueError):
        return {}
    return {(n.lineno, n.col_offset, n.end_lineno or n.lineno, n.end_col_offset or 0): n
            for n in ast.walk(tree) if isinstance(n, ast.Call)}


@dataclass(frozen=True, slots=True)
class Origin:
    """Where an entry was written: the file and line of its call, and the call instruction itself, to find the
    exact position in the source only when a problem needs it."""

    filename: str
    line: int
    code: CodeType | None
    instruction: int

    def __str__(self) -> str:
        return f"{_relative(self.filename)}:{self.line}"

    def of(self, field: str, key: str | None = None) -> str:
        """``file:line`` of ``field=`` in the entry's call (and of ``key`` in the dict literal given to it), or of
        the call itself where the source does not show them."""
        line = self.line
        position = _position(self.code, self.instruction) if self.code is not None else None
        try:
            calls = _calls_in(self.filename, os.path.getmtime(self.filename)) if position else {}
        except OSError:
            calls = {}
        call = calls.get(position) if position else None
        keyword = next((k for k in call.keywords if k.arg == field), None) if call is not None else None
        if keyword is not None:
            line = keyword.value.lineno
            if key is not None and isinstance(keyword.value, ast.Dict):
                for node in keyword.value.keys:
                    if isinstance(node, ast.Constant) and node.value == key:
                        line = node.lineno
        return f"{_relative(self.filename)}:{line}"


def _internal(filename: str) -> bool:
    return filename.startswith(_PACKAGE_DIR) or f"{os.sep}pydantic" in filename or filename.startswith("<")


def _position(code: CodeType, instruction: int) -> tuple[int, int, int, int] | None:
    """(line, column, end line, end column) of the call at that instruction, as ast gives a Call node."""
    found = next(islice(code.co_positions(), instruction // 2, None), None)
    if found is None or None in found:
        return None
    line, end_line, column, end_column = found
    return line, column, end_line, end_column  # type: ignore[return-value]


def caller_origin() -> Origin | None:
    """Where the first frame outside clusterforge and pydantic is: the inventory line that made the entry."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if not _internal(frame.f_code.co_filename):
            return Origin(frame.f_code.co_filename, frame.f_lineno, frame.f_code, frame.f_lasti)
        frame = frame.f_back
    return None


def type_problems(title: str, fields: Iterable[str], error: pydantic.ValidationError,
                  origin: Origin | None) -> list[Problem]:
    """One problem per mistake pydantic found; a misspelt field is one problem with a suggestion, not "Field
    required" plus "Extra inputs are not permitted"."""
    items = error.errors(include_url=False)
    extra = [str(i["loc"][0]) for i in items if i["type"] == "extra_forbidden" and len(i["loc"]) == 1]
    missing = {str(i["loc"][0]) for i in items if i["type"] == "missing" and len(i["loc"]) == 1}
    given = {str(i["loc"][0]) for i in items if i["loc"]} - missing
    meant: dict[str, str] = {}
    for name in extra:
        # A field the entry has, not given or given wrong, is what a misspelling most likely meant.
        candidates = [f for f in fields if f not in given or f in missing]
        close = get_close_matches(name, candidates, n=1, cutoff=0.6)
        if close and close[0] not in meant.values():
            meant[name] = close[0]
    problems = []
    for item in items:
        field = ".".join(str(part) for part in item["loc"])
        name = str(item["loc"][0]) if item["loc"] else ""
        if item["type"] == "missing" and name in meant.values():
            continue
        message = item["msg"]
        if name in meant:
            message = f"{message}; did you mean {meant[name]}?"
        where = origin.of(name) if origin is not None and name else (str(origin) if origin is not None else None)
        problems.append(Problem(f"{title}.{field}" if field else title, message, where))
    return problems


# The Slurm files whose keys a field may name with slurm_key(): the renderers write each of them.
SLURM_FILES = ("slurm.conf", "cgroup.conf", "gres.conf", "topology.conf", "slurmdbd.conf", "pyxis.conf")


def slurm_key(file: str, key: str, *, line: str | None = None) -> dict[str, Any]:
    """What a field becomes in a Slurm file, as a Field's json_schema_extra: the key of ``file`` (on each ``line``
    such as NodeName or PartitionName, for a key of a line). The inventory reference names it, with the releases
    whose key tables accept it, and tests/model/test_slurm_keys.py holds the renderers to it."""
    if file not in SLURM_FILES:
        raise ValueError(f"{file!r} is not one of the rendered Slurm files {SLURM_FILES}")
    return {"slurm_key": {"file": file, "key": key, "line": line}}


class Entry(BaseModel):
    """An inventory entry. Frozen; a misspelt field is an error, not silently ignored."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    _origin: Origin | None = PrivateAttr(default=None)

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except pydantic.ValidationError as error:
            problems = type_problems(type(self).__name__, type(self).model_fields, error, caller_origin())
            raise for_pyinfra(InventoryError(problems)) from None
        self._origin = caller_origin()

    @property
    def origin(self) -> str | None:
        """Where in the inventory this entry was written, as ``file:line``."""
        return str(self._origin) if self._origin is not None else None

    def origin_of(self, field: str, key: str | None = None) -> str | None:
        """Where ``field`` (and ``key`` of it, for a dict) was written, or the entry's own line."""
        return self._origin.of(field, key) if self._origin is not None else None


class Named(Entry):
    """An entry with a name, which may also be given first and positionally: ``Profile("dgx-h100", ...)``."""

    name: str = Field(description="the entry's name, by which other entries refer to it and Slurm knows it where it "
                                  "names it (ClusterName, SlurmctldHost, PartitionName, SwitchName, a QOS, account "
                                  "or user); may be given first, positionally")

    def __init__(self, name: str | None = None, /, **data: Any) -> None:
        if name is not None:
            data["name"] = name
        super().__init__(**data)
