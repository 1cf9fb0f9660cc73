"""Shell completion, as docs/own-machines.md tells an admin to turn it on: click's, through the console script,
completing the lazily loaded commands and their subcommands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLUSTERFORGE = Path(sys.executable).with_name("clusterforge")


def completed(*words: str) -> list[str]:
    env = {**os.environ, "COMP_WORDS": " ".join(["clusterforge", *words]), "COMP_CWORD": str(len(words)),
           "_CLUSTERFORGE_COMPLETE": "bash_complete"}
    result = subprocess.run([CLUSTERFORGE], env=env, capture_output=True, text=True, timeout=60, check=True)
    return [line.split(",", 1)[1] for line in result.stdout.splitlines()]


def test_bash_gets_a_completion_script():
    env = {**os.environ, "_CLUSTERFORGE_COMPLETE": "bash_source"}
    script = subprocess.run([CLUSTERFORGE], env=env, capture_output=True, text=True, timeout=60, check=True).stdout
    assert "complete -o nosort -F _clusterforge_completion clusterforge" in script


def test_commands_subcommands_and_options_complete():
    assert completed("a") == ["accept", "admit", "apply"]
    assert completed("secrets", "r") == ["rotate"]
    assert "--limit" in completed("check", "--l")
