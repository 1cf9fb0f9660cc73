"""What unreachable hosts cost each command: every host of a generated inventory at an address that never answers
(a network namespace whose route to them leads to a second namespace that forwards nothing: a TCP SYN is dropped
without a word, the connection times out), for a few cluster sizes. Prints, per command and size, the seconds to its first line and to its end; asserts nothing.
Run as root:

    python benchmarks/unreachable.py [--sizes 4,37,200]

A command that connects to every host at once costs one connection timeout (10 s, pyinfra's and the operations')
whatever the number of hosts; one that connects in waves costs one per wave. `roll` and `admit` connect to the
controller alone first (`accept` too, left out here: it needs GPU nodes with admission).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLUSTERFORGE = str(REPO / ".venv" / "bin" / "clusterforge")

INVENTORY = """\
from clusterforge.inventory import host_groups
from clusterforge.model import Cluster, Host, Nodes, Partition, Profile

cluster = Cluster(
    "far", slurm_version="22.05",
    controller=Host("ctl", address="10.254.1.1"), database=Host("db", address="10.254.1.2", memory=4096),
    profiles=(Profile("cpu", sockets=1, cores_per_socket=2, threads_per_core=1, real_memory=1000),),
    nodes=(Nodes("node[{first:04d}-{last:04d}]", address="10.254.{net}.[1-{count}]", profile="cpu"),),
    partitions=(Partition("batch", profiles=("cpu",), default=True),),
)
controller, compute, login, database, nfs = host_groups(cluster, ssh_user="root")
"""

# What each command is asked: the commands that connect, as an admin types them.
COMMANDS = {
    "check": ["check"],
    "plan": ["plan"],
    "roll --dry-run": ["roll", "--reboot", "--dry-run"],
    "admit": ["admit", "{inventory}", "node0001"],
}


def namespaces(name: str) -> None:
    """``name``, where the commands run, and ``name``-sink behind it: the hosts' /16 is routed there, and the sink
    forwards nothing (no ICMP either), so every connection waits for its timeout."""
    sink = f"{name}-sink"
    for command in (["ip", "netns", "add", name], ["ip", "netns", "add", sink],
                    ["ip", "-n", name, "link", "set", "lo", "up"],
                    ["ip", "-n", name, "link", "add", "near", "type", "veth", "peer", "name", "far", "netns", sink],
                    ["ip", "-n", name, "addr", "add", "10.253.0.1/24", "dev", "near"],
                    ["ip", "-n", sink, "addr", "add", "10.253.0.2/24", "dev", "far"],
                    ["ip", "-n", name, "link", "set", "near", "up"], ["ip", "-n", sink, "link", "set", "far", "up"],
                    ["ip", "-n", name, "route", "add", "10.254.0.0/16", "via", "10.253.0.2"]):
        subprocess.run(command, check=True)


def inventory(directory: Path, nodes: int) -> Path:
    # Two service hosts and the nodes, in one /16 that the dummy interface swallows.
    path = directory / f"far{nodes}.py"
    path.write_text(INVENTORY.format(first=1, last=nodes, net=2, count=nodes))
    return path


def timed(ns: str, args: list[str], path: Path) -> tuple[float, float, int]:
    """Seconds to the first line on stdout or stderr, to the end, and the exit status."""
    argv = [a.replace("{inventory}", str(path)) for a in args]
    if "{inventory}" not in " ".join(args):
        argv.append(str(path))
    start = time.monotonic()
    process = subprocess.Popen(["ip", "netns", "exec", ns, CLUSTERFORGE, *argv], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, cwd=path.parent,
                               env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert process.stdout is not None
    first = None
    for _ in process.stdout:
        if first is None:
            first = time.monotonic() - start
    process.wait()
    end = time.monotonic() - start
    return first if first is not None else end, end, process.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4,37,200", help="compute nodes per inventory, comma-separated (≤ 250)")
    sizes = [int(n) for n in parser.parse_args().sizes.split(",")]
    if os.geteuid() != 0:
        sys.exit("run as root: it makes a network namespace")
    ns = f"cf-unreachable-{os.getpid()}"
    namespaces(ns)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            print(f"{'command':<18} {'hosts':>5} {'first line s':>12} {'end s':>7} {'exit':>4}")
            for nodes in sizes:
                path = inventory(Path(scratch), nodes)
                for name, args in COMMANDS.items():
                    first, end, code = timed(ns, args, path)
                    print(f"{name:<18} {nodes + 2:>5} {first:>12.1f} {end:>7.1f} {code:>4}", flush=True)
    finally:
        for name in (ns, f"{ns}-sink"):
            subprocess.run(["ip", "netns", "delete", name], check=False)


if __name__ == "__main__":
    main()
