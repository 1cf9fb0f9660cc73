"""allreduce: nccl-tests' all_reduce_perf on one node, all its GPUs, 16 GiB, its bus bandwidth held to a floor
(Azure's). allreduce_multi (across nodes) is judged by the same code."""

from __future__ import annotations

from ..parse import nccl
from ..verdict import Result, figure
from .base import AcceptanceTest, Entry, Floor, exit_meaning, number_result

BYTES = 16 * 2**30  # Azure's size: large enough for the peak, one row, so no mean over small ones
SIZE = f"{BYTES // 2**30}G"
EXITS = {1: "internal error", 2: "CUDA error", 3: "NCCL error", 4: "timeout (-T)",
         5: "not implemented (more GPUs than present?)", 6: "invalid usage", 7: "wrong results"}
FLOOR = Floor("allreduce", "GB/s: all_reduce_perf's bus bandwidth at 16 GiB on one node, all its GPUs (H100 460, "
              "H200 431: Azure's floors)", {"h100": 460, "h200": 431})


def judge(entry: Entry, node: str, output: str, exit_status: int) -> list[Result]:
    """One result, the bus bandwidth of the 16 GiB row (allreduce) or of the largest (allreduce_multi), where the
    run used every GPU asked for and got no wrong value."""
    name = entry["name"]
    table = nccl.parse(output)
    if exit_status != 0:
        return [Result(node, name, False, detail=exit_meaning(EXITS, exit_status))]
    if table.wrong:
        return [Result(node, name, False, detail=f"{table.wrong} wrong values")]
    row = table.row(BYTES) if name == "allreduce" else table.row()
    expected = entry.get("ranks") or (entry["gpus"] if name == "allreduce" else 0)
    if expected and table.ranks != expected:
        return [Result(node, name, False, detail=f"ran on {table.ranks} GPUs where {expected} were asked for")]
    return [number_result(node, name, row.lowest_busbw, entry["floors"][name], entry["unit"],
                          f"busbw of {row.size} B, out-of-place {figure(row.busbw[0])}, "
                          f"in-place {figure(row.busbw[1])}; {table.ranks} ranks")]


TEST = AcceptanceTest(name="allreduce", program="all_reduce_perf", unit="GB/s", floors=(FLOOR,),
                      expected_s=lambda setup: 120, arguments=lambda setup: ["-b", SIZE, "-e", SIZE, "-g",
                                                                              str(setup.gpus)],
                      judge=judge, exits=EXITS)
