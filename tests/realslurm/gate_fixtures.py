"""What the tests of clusterforge's gates on the real Slurm share (the node-state gate, the admission gate, `accept`):
a slurm.conf whose nodes run jobs on this machine, the runners that hand clusterforge's code Slurm's real answers, the
stand-in tests (a script printing a number, a verdict holding it to a floor, as admission.tests' hold a tool's), and
the readers of a node and of the reservations as Slurm shows them."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from realslurm import harness

from clusterforge.admission.verdict import Result
from clusterforge.slurm import nodes, reservations
from clusterforge.slurm.commands import Answer

FLOOR = 460.0
ADMIN = "RMA: fan (admin)"  # an admin's drain reason, which no gate may lift or write over


def slurm_conf(scratch: Path, cluster: str, addresses: Mapping[str, str]) -> Path:
    """``etc/`` under ``scratch`` with a slurm.conf of the nodes of ``addresses`` (a hostlist: its address), in one
    partition ``all``; slurmd answers for the node at 127.0.0.1, the others never register. One CPU and 100 MB each:
    no more than this machine has, so slurmctld does not drain a node for its hardware."""
    return harness.bare_etc(scratch, cluster, "ReturnToService=2\nMinJobAge=300\n"
                            + "".join(f"NodeName={nodes} NodeAddr={address} CPUs=1 RealMemory=100 State=UNKNOWN\n"
                                      for nodes, address in addresses.items())
                            + f"PartitionName=all Nodes={','.join(addresses)} Default=YES State=UP\n")


def values(scratch: Path, **numbers: str) -> Path:
    """The directory the stand-in scripts read their numbers from, readable by the jobs' users: one file per test."""
    directory = scratch / "values"
    directory.mkdir(mode=0o755)
    for test, number in numbers.items():
        (directory / test).write_text(f"{number}\n")
    return directory


def stand_in_script(directory: Path) -> Callable[[dict, list[str]], str]:
    """A test's batch script that prints its number; the #SBATCH lines name the nodes as admission.tests' do (accept
    gives no --nodelist of its own; the gate's command line gives its, which sbatch puts before the script's)."""
    def script(test: dict, nodes: list[str]) -> str:
        return f"#!/bin/sh\n#SBATCH --nodelist={','.join(nodes)}\n#SBATCH --time=2\ncat {directory}/{test['name']}\n"
    return script


def judge(test: dict, node: str, output: str, exit_status: int) -> list[Result]:
    """The number against FLOOR; output that is not one number fails, as a real parser refuses it."""
    try:
        value = float(output.strip())
    except ValueError:
        return [Result(node, test["name"], False, detail=f"unreadable output: {output.strip()[:80]!r}")]
    return [Result(node, test["name"], exit_status == 0 and value >= FLOOR, value, "GB/s", FLOOR)]


def _answer(done: subprocess.CompletedProcess) -> Answer:
    return Answer(done.returncode, done.stdout, done.stderr)


def argv_runner(ctld: harness.Slurmctld) -> Callable[[Sequence[str], float], Answer]:
    """slurm.commands' Run (an argv and a bound): what the gate and the health check run their commands with."""
    return lambda argv, timeout: _answer(ctld.run(*argv, check=False, timeout=timeout))


def shell_runner(ctld: harness.Slurmctld,
                 watch: Callable[[str, Answer], None] | None = None) -> Callable[[str], Answer]:
    """accept's Run (a shell command, as it runs on the controller over SSH), each answer shown to ``watch``."""
    def run(command: str) -> Answer:
        answer = _answer(ctld.run("sh", "-c", command, check=False, timeout=60))
        if watch is not None:
            watch(command, answer)
        return answer
    return run


def node(ctld: harness.Slurmctld, name: str) -> dict[str, str]:
    """``scontrol -o show node``'s keys."""
    return harness.parse_oneliner(ctld.scontrol("-o", "show", "node", name))[0]


def slurm_state(ctld: harness.Slurmctld, name: str) -> nodes.Node:
    """The node as the node-state gate reads it (slurm/drains.py)."""
    return nodes.parse_node(ctld.run(*nodes.show_argv(name)).stdout)


def shown_reservations(ctld: harness.Slurmctld, *argv: str) -> list[reservations.Reservation]:
    """The reservations as clusterforge reads them, from ``argv`` (reservations.show_argv() where none is given)."""
    return reservations.parse_reservations(ctld.run(*(argv or reservations.show_argv())).stdout)


def passes_until(gate, done: Callable[[], bool], what: str, said: Sequence[str] = (), timeout: float = 90) -> None:
    """The gate's passes, one a second, until ``done``; failing after ``timeout`` with what it said so far."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"not {what} within {timeout:g} s" + (f": {list(said)}" if said else "")
        gate.one_pass()
        time.sleep(1)
