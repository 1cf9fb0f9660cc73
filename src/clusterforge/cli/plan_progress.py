"""What `clusterforge plan` says while its planning deploy runs: a line per host on stderr as pyinfra connects to it
(its state is read next) and as its steps are planned, and for a host that cannot be reached one line naming it
and pyinfra's reason, never the SSH library's own lines. Read from pyinfra's output as it comes."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# "    [@fake/gpu01]  Connected": pyinfra's line about one host; a connector prefix (@fake/, @local/) is no part of
# the host's inventory name.
_HOST_LINE = re.compile(r"^\s*\[(?:@[\w-]+/)?(?P<host>[^\]]+)\]\s+(?P<said>.+?)\s*$")
_ERRNO = re.compile(r"\[Errno [^\]]*\]\s*")  # "[Errno None] Unable to connect ...": Python's, not the reason's


@dataclass
class PlanningRun:
    returncode: int
    output: str  # pyinfra's stdout and stderr together, for what a failed run says
    unreachable: dict[str, str] = field(default_factory=dict)  # host: why it could not be reached


def run_planning(command: list[str], env: dict[str, str], say: Callable[[str], None]) -> PlanningRun:
    """Run the planning deploy, saying each host's progress with ``say`` as pyinfra reports it."""
    lines: list[str] = []
    unreachable: dict[str, str] = {}
    phase = ""
    with subprocess.Popen(command, env={**env, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace") as process:
        assert process.stdout is not None
        for raw in process.stdout:
            line = _ANSI.sub("", raw.rstrip("\n"))
            lines.append(line)
            if line.startswith("--> "):
                phase = line
                continue
            found = _HOST_LINE.match(line)
            if found is None:
                continue
            host, said = found.group("host"), found.group("said")
            if phase.startswith("--> Connecting"):
                if said.startswith("Connected"):
                    say(f"{host}: connected, reading its state")
                else:
                    unreachable[host] = _ERRNO.sub("", said)
                    say(f"{host}: could not be reached: {unreachable[host]}")
            elif phase.startswith("--> Preparing") and said.startswith("Ready"):
                say(f"{host}: planned")
    return PlanningRun(process.returncode, "\n".join(lines), unreachable)
