"""Where a deploy's time goes: with CLUSTERFORGE_PROFILE=FILE in its environment, the run times every operation on
every host (pyinfra's state callbacks) and writes them to FILE as JSON when it ends; ``summary`` reads them back.

pyinfra runs each operation on every host before the next starts, so a host that finishes an operation early waits
for the slowest: an operation's wall time is its slowest host's, and what a host spends not running its own
operations is waiting. The profile says both, per step (an operation is named "step | what", engine/run.py) and per
host, and the time before the first operation (connecting, reading each host's state, working out the operations).
"""

from __future__ import annotations

import atexit
import json
import os
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyinfra.api.state import BaseStateCallback

if TYPE_CHECKING:
    from pyinfra.api import Host as PyinfraHost
    from pyinfra.api import State as PyinfraState

PROFILE_FILE = "CLUSTERFORGE_PROFILE"


class Profile(BaseStateCallback):
    """Records, for each operation in the order it ran, its start and end and each host's own start and end."""

    def __init__(self, path: str, started: float) -> None:
        self.path, self.started = path, started
        self.ops: dict[str, dict[str, Any]] = {}
        atexit.register(self.write)

    def operation_start(self, state: PyinfraState, op_hash: str) -> None:  # type: ignore[override]
        names = state.get_op_meta(op_hash).names
        self.ops[op_hash] = {"name": ", ".join(sorted(names)), "start": time.monotonic(), "hosts": {}}

    def operation_host_start(self, state: PyinfraState, host: PyinfraHost,  # type: ignore[override]
                             op_hash: str) -> None:
        self.ops[op_hash]["hosts"][host.name] = [time.monotonic(), None]

    def _host_end(self, host: PyinfraHost, op_hash: str) -> None:
        self.ops[op_hash]["hosts"][host.name][1] = time.monotonic()

    def operation_host_success(self, state: PyinfraState, host: PyinfraHost, op_hash: str,  # type: ignore[override]
                               retry_count: int = 0) -> None:
        self._host_end(host, op_hash)

    def operation_host_error(self, state: PyinfraState, host: PyinfraHost, op_hash: str,  # type: ignore[override]
                             retry_count: int = 0, max_retries: int = 0) -> None:
        self._host_end(host, op_hash)

    def operation_end(self, state: PyinfraState, op_hash: str) -> None:  # type: ignore[override]
        op = self.ops[op_hash]
        op["end"] = time.monotonic()
        # pyinfra starts the operation on every host and skips it, with no end, where the host has none of it.
        op["hosts"] = {name: times for name, times in op["hosts"].items() if times[1] is not None}

    def write(self) -> None:
        """Seconds from the run's start; an operation cut short (Ctrl-C, a failure) ends where the run did."""
        now = time.monotonic()
        ops = [{"name": op["name"], "start": op["start"] - self.started,
                "end": op.get("end", now) - self.started,
                "hosts": {name: [start - self.started, (end or now) - self.started]
                          for name, (start, end) in op["hosts"].items()}}
               for op in self.ops.values()]
        Path(self.path).write_text(json.dumps({"ended": now - self.started, "operations": ops}, indent=1) + "\n")


def record(state: PyinfraState, path: str) -> None:
    """Times the run from the process's start (Linux's /proc), so that connecting to the hosts counts too."""
    stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(stat[19]) / os.sysconf("SC_CLK_TCK")
    state.add_callback_handler(Profile(path, time.monotonic() - age))


def step_of(name: str) -> str:
    return name.split(" | ", 1)[0] if " | " in name else "(no step)"


def summary(profile: Mapping[str, Any], top: int = 8) -> list[str]:
    """The profile as lines of text: the time before the first operation, then per step its wall time and its
    operations' count, then per host its busy and waiting time, then the ``top`` slowest operations with the host
    that held the others."""
    ops: list[Mapping[str, Any]] = profile["operations"]
    if not ops:
        return [f"no operation ran ({profile['ended']:.1f} s)"]
    first, last = ops[0]["start"], ops[-1]["end"]
    lines = [f"before the first operation (connect, read the hosts, work out the operations)  {first:6.1f} s",
             f"operations, {len(ops)} of them                                                  {last - first:6.1f} s",
             "", "per step (its operations' wall time: each lasts until its slowest host is done)"]
    steps: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    for op in ops:
        steps[step_of(op["name"])][0] += op["end"] - op["start"]
        steps[step_of(op["name"])][1] += 1
    width = max(len(s) for s in steps)
    lines += [f"  {name:<{width}}  {wall:6.1f} s  {int(count):3d} ops"
              for name, (wall, count) in sorted(steps.items(), key=lambda item: -item[1][0])]
    busy: dict[str, float] = defaultdict(float)
    for op in ops:
        for host, (start, end) in op["hosts"].items():
            busy[host] += end - start
    lines += ["", "per host (busy: running its own operations; waiting: for other hosts' operations)"]
    width = max(len(h) for h in busy)
    lines += [f"  {host:<{width}}  busy {seconds:6.1f} s  waiting {last - first - seconds:6.1f} s"
              for host, seconds in busy.items()]
    lines += ["", f"the {top} slowest operations"]
    for op in sorted(ops, key=lambda o: o["start"] - o["end"])[:top]:
        hosts = _slowest(op["hosts"].items())
        lines.append(f"  {op['end'] - op['start']:6.1f} s  {op['name']}" + (f"  (slowest: {hosts})" if hosts else ""))
    return lines


def _slowest(hosts: Iterable[tuple[str, list[float]]]) -> str:
    times = sorted(((end - start, name) for name, (start, end) in hosts), reverse=True)
    return f"{times[0][1]} {times[0][0]:.1f} s" if times else ""
