"""What the test cluster's acceptance stand-ins (all_reduce_perf, dcgmi, ib_write_bw, nvbandwidth, beside this file)
measure: the results a test sets per node in one JSON file on the cluster's shared /home, each missing value a healthy
8 x H100 SXM, 8 x NDR 400G node's. Testbed only: the testbed binds this directory into its GPU machines
(Vagrantfile); the deploy never installs it. Standard library only (Debian's python3 runs it).

/home/.clusterforge-testbed/accept.json (CLUSTERFORGE_TESTBED_ROOT, a prefix to the path, is for the tests alone):

    {"gpu03": {"allreduce": 300,                     all_reduce_perf's busbw on this node alone, GB/s, or a
                                                     list, one per run (below)
               "hca": {"mlx5_4": 190},               ib_write_bw's BW average per HCA, Gb/s (the others 392.77)
               "dcgm": {"memory": "Fail"},           a dcgmi diag test's result on GPU 0: Fail, Warn or Skip
               "nvbandwidth": {"device_to_device_memcpy_read_ce": 250},   every cell, one per GPU, Waived, Error
               "hang": 3600}}                        seconds all_reduce_perf waits before its table

An intermittent node: "allreduce": [478.52, 300] gives the node's first all_reduce_perf run (a job step, counted in
/home/.clusterforge-testbed/runs/<node>, which every rank of the step agrees on) 478.52, its second and every later
one 300. A node missing from the file, or a file missing, is healthy. A file that is not such JSON fails the stand-in
(exit 1, the file named), so a test's mistake is never read as a healthy node."""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import sys
from dataclasses import dataclass, field

ROOT = os.environ.get("CLUSTERFORGE_TESTBED_ROOT", "")
RESULTS = f"{ROOT}/home/.clusterforge-testbed/accept.json"

# The testbed's GPUs and HCAs: the captures its nvidia-smi and ibstat replay (tests/check/fixtures).
GPU_NAME = "NVIDIA H100 80GB HBM3"
GPU_DEVICE_ID = "2330"
GPU_BUSES = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")
DRIVER = "565.57.01"
HCAS = ("mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9")

# Healthy figures: all_reduce within a node ~476-480 GB/s, ib_write_bw ~392 Gb/s of NDR's 400, nvbandwidth
# ~55 GB/s over PCIe Gen5 x16 and ~370 GB/s over NVLink (acceptance.md, 1).
HEALTHY_ALLREDUCE = 478.52
HEALTHY_HCA = 392.77
HEALTHY_NVBANDWIDTH = {"host_to_device_memcpy_ce": 55.64, "device_to_host_memcpy_ce": 55.31,
                       "device_to_device_memcpy_read_ce": 376.43, "device_to_device_memcpy_write_ce": 371.85}
DCGM_RESULTS = ("Pass", "Fail", "Warn", "Skip")


@dataclass(frozen=True)
class Node:
    name: str
    allreduce: float | list[float] = HEALTHY_ALLREDUCE
    hca: dict[str, float] = field(default_factory=dict)
    dcgm: dict[str, str] = field(default_factory=dict)
    nvbandwidth: dict[str, object] = field(default_factory=dict)
    hang: float = 0

    def allreduce_now(self) -> float:
        """The node's all_reduce busbw in the calling job step: its value, or its run's of a list."""
        if not isinstance(self.allreduce, list):
            return float(self.allreduce)
        return float(self.allreduce[min(run_of_step(self.name), len(self.allreduce) - 1)])

    def hca_rate(self, name: str) -> float:
        return float(self.hca.get(name, HEALTHY_HCA))

    @property
    def hcas(self) -> tuple[str, ...]:
        """The node's HCAs: the capture's, and any other the test gave a rate."""
        return tuple(dict.fromkeys([*HCAS, *self.hca]))

    def cells(self, test: str) -> list[float]:
        """One value per GPU for an nvbandwidth test: the test's value for every GPU, or its list of eight."""
        value = self.nvbandwidth.get(test, HEALTHY_NVBANDWIDTH[test])
        return [float(v) for v in value] if isinstance(value, list) else [float(value)] * len(GPU_BUSES)


def fail(message: str) -> None:
    print(f"{os.path.basename(sys.argv[0])} (test cluster stand-in): {message}", file=sys.stderr)
    sys.exit(1)


def this_node() -> str:
    """The node as Slurm names it inside a job, else the machine's short host name."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def node(name: str | None = None) -> Node:
    name = name or this_node()
    try:
        with open(RESULTS, encoding="utf-8") as file:
            every = json.load(file)
    except FileNotFoundError:
        return Node(name)
    except ValueError as error:
        fail(f"{RESULTS} is not JSON: {error}")
    entry = every.get(name, {}) if isinstance(every, dict) else None
    known = {"allreduce", "hca", "dcgm", "nvbandwidth", "hang"}
    if not isinstance(entry, dict) or set(entry) - known:
        fail(f"{RESULTS}: {name}'s entry must be an object of {', '.join(sorted(known))}, not {entry!r}")
    if entry.get("allreduce") == []:
        fail(f"{RESULTS}: {name}'s allreduce list is empty: give one value per run, the last for every later run")
    bad = [r for r in entry.get("dcgm", {}).values() if r not in DCGM_RESULTS]
    if bad:
        fail(f"{RESULTS}: {name}'s dcgm results must be one of {', '.join(DCGM_RESULTS)}, not {bad[0]!r}")
    return Node(name, **entry)


def run_of_step(name: str) -> int:
    """Which all_reduce_perf run on the node the calling job step is, from 0: the step's id is noted once, under a
    lock, in the node's runs file on the shared /home, so every rank of a step, on any node, gets the same number."""
    step = f"{os.environ.get('SLURM_JOB_ID', '')}.{os.environ.get('SLURM_STEP_ID', '')}"
    path = f"{ROOT}/home/.clusterforge-testbed/runs/{name}"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a+", encoding="utf-8") as file:
            fcntl.flock(file, fcntl.LOCK_EX)
            file.seek(0)
            seen = file.read().split()
            if step not in seen:
                file.write(step + "\n")
                seen.append(step)
    except OSError as error:
        fail(f"{path}: cannot count this run ({error})")
    return seen.index(step)


def expand(hostlist: str) -> list[str]:
    """A Slurm hostlist ("gpu[01-03,07],ctl") as names, in order."""
    names: list[str] = []
    for prefix, ranges, plain in re.findall(r"([^,\[]*)\[([^\]]*)\][^,]*|([^,\[]+)", hostlist):
        if plain:
            names.append(plain)
            continue
        for part in ranges.split(","):
            low, _, high = part.partition("-")
            names += [f"{prefix}{n:0{len(low)}d}" for n in range(int(low), int(high or low) + 1)]
    return names


def tasks_per_node(value: str) -> list[int]:
    """SLURM_STEP_TASKS_PER_NODE ("8(x2),4") as one count per node."""
    counts: list[int] = []
    for part in value.split(","):
        count, _, times = part.partition("(x")
        counts += [int(count)] * int(times.rstrip(")") or 1)
    return counts
