"""nvbandwidth: NVIDIA's copy bandwidths, host to GPU, GPU to host and GPU to GPU, each cell of each matrix held to
its floor (the lowest cell is the one reported)."""

from __future__ import annotations

from ..parse import nvbandwidth
from ..verdict import Result, figure
from .base import AcceptanceTest, Entry, Floor, number_result

# nvbandwidth's tests, each with the floor its every cell is held to and the short name a reason gives it.
NVBANDWIDTH = {"host_to_device_memcpy_ce": ("host_to_device", "h2d"),
               "device_to_host_memcpy_ce": ("host_to_device", "d2h"),
               "device_to_device_memcpy_read_ce": ("device_to_device", "d2d_read")}
FLOORS = (Floor("host_to_device", "GB/s: every cell of nvbandwidth's host_to_device_memcpy_ce and "
                "device_to_host_memcpy_ce (48: PCIe Gen5 x16)", {"h100": 48, "h200": 48}),
          Floor("device_to_device", "GB/s: every GPU pair of nvbandwidth's device_to_device_memcpy_read_ce (335 over "
                "NVLink 4)", {"h100": 335, "h200": 335}))


def judge(entry: Entry, node: str, output: str, exit_status: int) -> list[Result]:
    if exit_status != 0:
        # 1: bad arguments or a CUDA/NVML call failed; whatever was measured before is not a whole run.
        return [Result(node, "nvbandwidth", False, detail=f"exit status {exit_status}")]
    run = nvbandwidth.parse(output)
    floors, unit = entry["floors"], entry["unit"]
    results = []
    for full, (floor_key, short) in NVBANDWIDTH.items():
        name = f"nvbandwidth:{short}"
        matrix = run.test(full)
        if matrix is None or matrix.status != nvbandwidth.PASSED:
            why = "not run (waived?)" if matrix is None else f"{matrix.status}: {matrix.error}".rstrip(": ")
            results.append(Result(node, name, False, detail=f"{full} {why}"))
            continue
        cells = [(value, row, column) for row, values in enumerate(matrix.cells)
                 for column, value in enumerate(values) if value is not None]
        if not cells:
            results.append(Result(node, name, False, detail=f"{full}: no measured cell"))
            continue
        value, row, column = min(cells)
        source = "GPU" if full.startswith("device_to_device") else "CPU"
        results.append(number_result(node, name, value, floors[floor_key], unit,
                                     f"{full} lowest {source}{row}->GPU{column}, SUM {figure(matrix.sum or 0)}"))
    return results


TEST = AcceptanceTest(name="nvbandwidth", program="nvbandwidth", unit="GB/s", floors=FLOORS,
                      expected_s=lambda setup: 120, arguments=lambda setup: ["-t", *NVBANDWIDTH], judge=judge)
