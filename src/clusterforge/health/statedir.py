"""The health program's state between runs (the kernel-log cursors, the faults it holds, its last run), in a
directory root's alone: files replaced whole, never seen half written."""

from __future__ import annotations

import os


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
