"""allreduce_multi: all_reduce_perf across nodes, one MPI rank per GPU, NCCL's ring forced (tree and NVLS report
more than the NICs carry between two nodes), its largest row's bus bandwidth held to a floor bound by the NICs. Run
by `clusterforge accept` only, across each leaf and the spine; judged as allreduce is."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from . import allreduce
from .base import AcceptanceTest, Entry, Floor

FLOOR = Floor("allreduce_multi", "GB/s: all_reduce_perf's bus bandwidth of its largest row across nodes with "
              "NCCL_ALGO=Ring, bound by the NICs (350 for 8 × NDR 400G)", {"h100": 350, "h200": 350})


def launch(entry: Entry, nodes: Sequence[str], bound: list[str], srun: list[str], argv: list[str]) -> list[str]:
    return ["export NCCL_ALGO=Ring  # tree and NVLS report more than the NICs carry between 2 nodes",
            shlex.join(bound + srun + rank_per_gpu(int(entry["gpus"]), len(nodes), entry.get("cpus")) + argv)]


def rank_per_gpu(gpus: int, nodes: int, cpus: Any) -> list[str]:
    """srun's options that start one rank per GPU on each of ``nodes`` nodes, each rank with its GPU."""
    if cpus is None or int(cpus) >= gpus:
        return [f"--ntasks-per-node={gpus}", "--gpus-per-task=1"]
    # A node with fewer CPUs than GPUs (a test machine with stand-in GPUs, never an H100 node): srun refuses
    # --ntasks-per-node above a node's CPUs even with --overcommit, but takes the total overcommitted, which its
    # block distribution lays out evenly, GPUs-per-node ranks on each node (tests/realslurm/test_accept_eight.py
    # shows where each rank ran). Each rank sees its node's GPUs and takes the one of its local rank, as
    # all_reduce_perf does with -g 1.
    return [f"--ntasks={gpus * nodes}", "--overcommit", f"--gpus-per-node={gpus}"]


TEST = AcceptanceTest(name="allreduce_multi", program="all_reduce_perf", unit="GB/s", floors=(FLOOR,),
                      expected_s=lambda setup: 300,
                      # one task per GPU across the nodes: MPI ranks
                      arguments=lambda setup: ["-b", allreduce.SIZE, "-e", allreduce.SIZE, "-g", "1"],
                      judge=allreduce.judge, exits=allreduce.EXITS, launch=launch, across_nodes=True)
