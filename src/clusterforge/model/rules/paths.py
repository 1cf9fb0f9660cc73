"""A path of the inventory that reaches root's shell on a host: absolute, and nothing in it the shell reads as more
than a name (a space, a quote, ``;``, ``$``, ``|``, ``&``, a redirection, a glob, a newline). The deploy's commands
name paths as they are written, so ``/srv/home; rm -rf /`` as an export would be two commands for root."""

from __future__ import annotations

import re

_PLAIN = re.compile(r"/[A-Za-z0-9._+@%:=,/~-]*")
_WORD = re.compile(r"[A-Za-z0-9._+@%:=,/~-]+")
WHAT = "an absolute path of letters, digits and . _ + @ % : = , / ~ - only (the deploy hands it to root's shell)"


def plain_path(path: str) -> bool:
    return _PLAIN.fullmatch(path) is not None


def plain_command(command: str) -> bool:
    """A program given with its arguments: a plain path, then plain words separated by spaces."""
    words = command.split(" ")
    return plain_path(words[0]) and all(_WORD.fullmatch(word) for word in words[1:])
