"""What `check`'s commands cost this machine, the runner's way (testinfra: an ``ssh`` process a command) against a
session's (reach/ssh.py's ``Session``: one ``ssh`` process for all of a host's commands), on the tests' real sshd
(tests/reach/sshd.py: Debian's, on 127.0.0.1, in the cached root). Prints, for COMMANDS commands each way, the wall
time, the CPU of this process and its children (resource.getrusage, RUSAGE_SELF + RUSAGE_CHILDREN: the ``ssh``
processes, reaped) and that of the master connection both go through (a daemon, not a child: read from /proc),
medians of ROUNDS, the two ways interleaved; asserts nothing. The server's CPU is not counted (on a cluster it is
the host's, not the deploy host's). Run as root:

    python benchmarks/check_session.py [--commands 30] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "reach"), str(REPO / "src")]

from clusters import small_cluster  # noqa: E402  (the tests' own cluster and sshd)
from reach.sshd import running  # noqa: E402

from clusterforge.model import resolve  # noqa: E402
from clusterforge.reach.hosts import Target  # noqa: E402
from clusterforge.reach.ssh import Connections  # noqa: E402

# Commands like the checks' (reads of a file, a program looked up, a few words): what matters is their number.
KINDS = ["true", "cat /etc/hostname", "command -v sshd", "id -un", "uname -r", "ls /etc/ssh"]
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds() -> float:
    """This process's CPU and that of its reaped children, user and system."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def master_cpu_seconds(config: Path, name: str) -> float:
    """The master connection's CPU so far (it runs on after the ssh that started it, reparented: no child of ours)."""
    said = subprocess.run(["ssh", "-F", str(config), "-O", "check", name], capture_output=True, text=True).stderr
    pid = re.search(r"pid=(\d+)", said)
    if pid is None:
        return float("nan")
    fields = Path(f"/proc/{pid.group(1)}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def measured(connections: Connections, name: str, way: Callable[[list[str]], None], commands: list[str]) \
        -> tuple[float, float, float]:
    """Wall seconds, CPU seconds here, the master's CPU seconds, for ``commands`` run ``way``."""
    master, cpu, start = master_cpu_seconds(connections.config, name), cpu_seconds(), time.perf_counter()
    way(commands)
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    return wall, cpu, master_cpu_seconds(connections.config, name) - master


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    valid = resolve(small_cluster())
    machine = next(m for m in valid.machines if m.name == valid.controller.name)
    commands = [KINDS[i % len(KINDS)] for i in range(args.commands)]
    with tempfile.TemporaryDirectory() as directory, running(Path(directory)) as sshd:
        target = Target(machine, {"ssh_hostname": "127.0.0.1", "ssh_port": sshd.port, "ssh_user": "root",
                                  "ssh_key": str(sshd.key),
                                  "ssh_known_hosts_file": str(Path(directory) / "known_hosts")})
        with Connections([target]) as connections:
            runner = connections.runner(machine.name)

            def through_the_runner(commands: list[str]) -> None:
                for command in commands:
                    runner(command)

            def through_a_session(commands: list[str]) -> None:
                with connections.session(machine.name) as session:
                    for command in commands:
                        session(command)

            ways = {"runner": through_the_runner, "session": through_a_session}
            runner("true")  # the master connection up, and testinfra imported, before anything is counted
            figures: dict[str, list[tuple[float, float, float]]] = {way: [] for way in ways}
            for round_ in range(args.rounds):
                for way, run in ways.items():
                    figures[way].append(measured(connections, machine.name, run, commands))
                    wall, cpu, master = figures[way][-1]
                    print(f"round {round_ + 1} {way:8} wall {wall:6.3f} s  cpu here {cpu:6.3f} s  "
                          f"master {master:6.3f} s")
    print(f"\n{args.commands} commands, medians of {args.rounds}:")
    for way, rows in figures.items():
        wall, cpu, master = (statistics.median(column) for column in zip(*rows))
        print(f"{way:8} wall {wall:6.3f} s  cpu here {cpu:6.3f} s ({1000 * cpu / args.commands:5.1f} ms a command)"
              f"  master {master:6.3f} s")


if __name__ == "__main__":
    main()
