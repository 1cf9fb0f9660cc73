"""What every inventory entry shares: immutability, no unknown fields, and the file:line it was written at."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr

_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])


def _relative(filename: str) -> str:
    try:
        return os.path.relpath(filename)
    except ValueError:
        return filename


def caller_origin() -> str | None:
    """``file:line`` of the first frame outside clusterforge and pydantic: the inventory line that made the entry."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        internal = filename.startswith(_PACKAGE_DIR) or f"{os.sep}pydantic" in filename or filename.startswith("<")
        if not internal:
            return f"{_relative(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return None


class Entry(BaseModel):
    """An inventory entry. Frozen; a misspelt field is an error, not silently ignored."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    _origin: str | None = PrivateAttr(default=None)

    def __init__(self, /, **data: Any) -> None:
        super().__init__(**data)
        self._origin = caller_origin()

    @property
    def origin(self) -> str | None:
        """Where in the inventory this entry was written, as ``file:line``."""
        return self._origin


class Named(Entry):
    """An entry with a name, which may also be given first and positionally: ``Profile("dgx-h100", ...)``."""

    name: str

    def __init__(self, name: str | None = None, /, **data: Any) -> None:
        if name is not None:
            data["name"] = name
        super().__init__(**data)
