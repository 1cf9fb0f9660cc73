"""What every inventory entry shares: immutability, no unknown fields, and where in the inventory it was written.

A mistake in one entry is reported as an InventoryError naming the entry, the field, the value given and the
inventory line, both under ``clusterforge`` and under ``pyinfra`` (which prints an error of its own kind as one
line, anything else as a traceback).

Inside ``deferring(...)`` (what ``clusterforge validate`` runs an inventory in) a constructor does not raise: the
inventory is plain Python, and an exception would stop it at its first mistake. The entry is built from the fields
that are right (a wrong optional field at its default; ``complete`` is False where a required one is wrong), keeps
its problems in ``type_errors``, stays frozen, and is noted in the list ``deferring`` yields. ``resolve`` then
names each problem by where the entry sits in the cluster (``model/gather.py``) and runs the cross-entry rules on
the cluster less the entries holding a wrong value, reporting both at once. An inventory stays a plain Python file,
its entries frozen; outside ``deferring`` (pyinfra running the file) a constructor raises at the first mistake.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
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


# A field whose name says it holds a secret, or whose type is a reference to one: its value is never echoed.
_SECRET_NAME = re.compile(r"pass|secret|token|key|credential", re.IGNORECASE)


def _secret(model: type[BaseModel] | None, field: str) -> bool:
    info = model.model_fields.get(field) if model is not None else None
    return bool(_SECRET_NAME.search(field)) or (info is not None and "SecretRef" in repr(info.annotation))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def closest(name: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The one of ``candidates`` that ``name`` most likely misspells (difflib's likeness at least ``cutoff``), or
    None: what every "did you mean" of validation names."""
    found = get_close_matches(name, list(candidates), n=1, cutoff=cutoff)
    return found[0] if found else None


def type_problems(model: type[BaseModel] | None, title: str, error: pydantic.ValidationError,
                  origin: Origin | None) -> list[Problem]:
    """One problem per mistake pydantic found, with the value given (never a secret's); a misspelt field is one
    problem naming the field meant, not "Field required" plus "Extra inputs are not permitted"."""
    fields = model.model_fields if model is not None else {}
    kind = model.__name__ if model is not None else title
    items = error.errors(include_url=False)
    extra = [str(i["loc"][0]) for i in items if i["type"] == "extra_forbidden" and len(i["loc"]) == 1]
    missing = {str(i["loc"][0]) for i in items if i["type"] == "missing" and len(i["loc"]) == 1}
    given = {str(i["loc"][0]) for i in items if i["loc"]} - missing
    meant: dict[str, str] = {}
    for name in extra:
        # A field the entry has, not given or given wrong, is what a misspelling most likely meant.
        candidates = [f for f in fields if f not in given or f in missing]
        close = closest(name, candidates)
        if close is not None and close not in meant.values():
            meant[name] = close
    problems = []
    for item in items:
        field = ".".join(str(part) for part in item["loc"])
        name = str(item["loc"][0]) if item["loc"] else ""
        if item["type"] == "missing" and name in meant.values():
            continue
        message, value = item["msg"], None
        if item["type"] == "extra_forbidden":
            message = f"unknown field of {kind}" + (f"; did you mean {meant[name]}?" if name in meant else "")
        elif item["type"] != "missing" and not _secret(model, name):
            value = _shown(item["input"])
        where = origin.of(name) if origin is not None and name else (str(origin) if origin is not None else None)
        problems.append(Problem(f"{title}.{field}" if field else title, message, where, value))
    return problems


_deferred: ContextVar[list[Entry] | None] = ContextVar("clusterforge_deferred", default=None)


@contextmanager
def collecting_into(collector: ContextVar[list[Any] | None]) -> Iterator[list[Any]]:
    """A fresh list in ``collector`` while inside, yielded: what the code run inside adds to it, in order."""
    found: list[Any] = []
    token = collector.set(found)
    try:
        yield found
    finally:
        collector.reset(token)


def deferring() -> AbstractContextManager[list[Entry]]:
    """Entries built inside do not raise on a wrong field: they keep their problems (see the module's docstring);
    the list yielded fills with every such entry, in the order they were built."""
    return collecting_into(_deferred)


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
    # The entry's own type mistakes (where relative to the entry), kept only while deferring; () for a sound one.
    _type_errors: tuple[Problem, ...] = PrivateAttr(default=())
    _complete: bool = PrivateAttr(default=True)
    _whole: bool = PrivateAttr(default=True)

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except pydantic.ValidationError as error:
            broken = _deferred.get()
            if broken is None:
                problems = type_problems(type(self), type(self).__name__, error, caller_origin())
                raise for_pyinfra(InventoryError(problems)) from None
            self._build_without_mistakes(data, error)
            broken.append(self)
        self._origin = caller_origin()

    def _build_without_mistakes(self, data: dict[str, Any], error: pydantic.ValidationError) -> None:
        """This entry from the fields given right: a wrong optional one at its default, and where a required one
        is wrong or missing, the right ones as given (not validated again), marked incomplete."""
        problems = type_problems(type(self), "", error, caller_origin())
        wrong = {str(i["loc"][0]) for i in error.errors(include_url=False) if i["loc"]}
        right = {k: v for k, v in data.items() if k not in wrong and k in type(self).model_fields}
        complete = True
        try:
            super().__init__(**right)
        except pydantic.ValidationError:
            built = type(self).model_construct(**right)
            object.__setattr__(self, "__dict__", built.__dict__)
            object.__setattr__(self, "__pydantic_fields_set__", built.__pydantic_fields_set__)
            object.__setattr__(self, "__pydantic_extra__", None)
            object.__setattr__(self, "__pydantic_private__", dict(built.__pydantic_private__ or {}))
            complete = False
        self._type_errors = tuple(replace(p, where=p.where.lstrip(".")) for p in problems)
        self._complete = complete
        # Only an unknown field refused leaves every value as written; a wrong one stands at its default instead.
        self._whole = complete and all(i["type"] == "extra_forbidden" for i in error.errors(include_url=False))

    @property
    def type_errors(self) -> tuple[Problem, ...]:
        """The type mistakes this entry was built despite (inside ``deferring``), each ``where`` the field."""
        return self._type_errors

    @property
    def complete(self) -> bool:
        """Whether every required field was given right, so that the entry has every field."""
        return self._complete

    @property
    def whole(self) -> bool:
        """Whether every field holds what was written (no mistake but unknown fields): the rules may read it."""
        return self._whole

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
