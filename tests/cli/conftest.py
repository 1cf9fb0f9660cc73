"""What the CLI tests share."""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def execs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """What `apply` would replace itself with (the program, then its arguments), caught instead of run, the command
    then ending with status 0: apply execs pyinfra in its own place, so an apply that let a mistake through would
    otherwise replace pytest with a deploy and end the run with pyinfra's status."""
    caught: list[list[str]] = []

    def execv(program: str, argv: list[str]) -> None:
        caught.append([program, *argv[1:]])
        raise SystemExit(0)

    monkeypatch.setattr(os, "execv", execv)
    return caught
