"""The one error every reader of a command's text raises, and the reader of Slurm's ``Key=value`` records that
``scontrol show`` prints. The node health program, the gate, the exporter and the admin's commands all catch this
one ``ParseError``: a reader that raised another would slip past every one of them."""

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
