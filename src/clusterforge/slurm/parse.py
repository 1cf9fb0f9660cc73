"""The one error every reader of a command's text raises, the reader of Slurm's ``Key=value`` records that
``scontrol show`` prints, and of its durations. The node health program, the gate, the exporter and the admin's
commands all catch this one ``ParseError``: a reader that raised another would slip past every one of them."""

from __future__ import annotations

import re


class ParseError(ValueError):
    """The text is not what the command prints when it ran to its end (cut, garbled, or another program's): the
    caller says so instead of guessing, and output it cannot read is never taken for a pass."""


def key_values(text: str) -> dict[str, str]:
    """``Key=value`` pairs of Slurm's one-line records; a word without ``=`` continues the previous value (a reason
    with spaces)."""
    pairs: dict[str, str] = {}
    last = None
    for word in text.split():
        key, sep, value = word.partition("=")
        if sep and re.fullmatch(r"[A-Za-z][A-Za-z0-9_/:.]*", key):
            pairs[key] = value
            last = key
        elif last is not None:
            pairs[last] += " " + word
    return pairs


def seconds(duration: str) -> int:
    """Slurm's [D-]HH:MM:SS (or MM:SS) as seconds, as a job's RunTime and a partition's TimeLimit print it; 0 for
    anything else (INVALID, Unknown, infinite)."""
    days, _, clock = duration.rpartition("-")
    parts = clock.split(":")
    if not all(p.isdigit() for p in parts) or not 1 <= len(parts) <= 3 or (days and not days.isdigit()):
        return 0
    total = 0
    for part in parts:
        total = total * 60 + int(part)
    return total + int(days or 0) * 86400
