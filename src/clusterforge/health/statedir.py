"""The health program's state between runs (the kernel-log cursors, the faults it holds, its last run), in a
directory root's alone: files replaced whole, never seen half written."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

EVENTS_MAX_BYTES = 1 << 20


def load(state_dir: str, name: str) -> str | None:
    try:
        with open(os.path.join(state_dir, name), encoding="utf-8") as file:
            return file.read()
    except FileNotFoundError:
        return None


def save(state_dir: str, name: str, text: str) -> None:
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    path = os.path.join(state_dir, name)
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
    os.replace(tmp, path)


def record(state_dir: str, lines: Sequence[str]) -> None:
    """Append to the events log, each line stamped; past its size, only its newer half is kept."""
    if not lines:
        return
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    path = os.path.join(state_dir, "events.log")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    with open(path, "a", encoding="utf-8") as file:
        file.writelines(f"{stamp} {line}\n" for line in lines)
    if os.path.getsize(path) > EVENTS_MAX_BYTES:
        with open(path, encoding="utf-8") as file:
            kept = file.readlines()
        save(state_dir, "events.log", "".join(kept[len(kept) // 2:]))
