"""What the CLI tests share."""

from __future__ import annotations

import pytest


@pytest.fixture
def deploys(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The pyinfra commands `apply` would run its deploy with, caught instead of run, each run then ending with
    status 0: an apply that let a mistake through would otherwise deploy from the test."""
    from clusterforge.cli import apply_progress

    caught: list[list[str]] = []

    def deploy(command: list[str], deploy_file: str, hosts: int, shown: bool) -> int:
        caught.append(command)
        return 0

    monkeypatch.setattr(apply_progress, "deploy", deploy)
    return caught
