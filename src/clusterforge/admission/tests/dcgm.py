"""dcgm: DCGM's diagnostic (`dcgmi diag -r LEVEL -j`) at the admission's level, judged by DCGM's own verdicts: every
result Pass or Skip, and dcgmi's exit status 0. No floor."""

from __future__ import annotations

from ..parse import dcgm
from ..verdict import Result
from .base import AcceptanceTest, Entry, Setup, exit_meaning

# Seconds a level takes on a healthy node (acceptance.md §1, level 3 "up to 20 minutes").
EXPECTED_S = {1: 60, 2: 300, 3: 1200, 4: 3600}
EXITS = {226: "a test failed or warned", 205: "an error of isolate priority: take the GPU out",
         203: "the diagnostic was killed", 235: "no connection to the host engine (nv-hostengine)",
         233: "the GPUs are not all alike", 250: "not supported by the driver", 245: "timeout"}


def arguments(level: int) -> list[str]:
    return ["diag", "-r", str(level), "-j"]


def judge(entry: Entry, node: str, output: str, exit_status: int) -> list[Result]:
    name = entry["name"]
    diag = dcgm.parse(output)
    if diag.runtime_error is not None:
        return [Result(node, name, False, detail=f"could not run: {diag.runtime_error}")]
    bad = [t for t in diag.tests if t.status not in (dcgm.PASS, dcgm.SKIP)]
    if bad:
        parts = []
        for t in bad:
            gpus = [f"GPU{i}" for i, status in t.gpus if status not in (dcgm.PASS, dcgm.SKIP)]
            parts.append(f"{t.name} {t.status}" + (f" ({', '.join(gpus)})" if gpus else ""))
        warning = next((w for t in bad for w in t.warnings if w), "")
        return [Result(node, name, False, detail="; ".join(parts) + (f": {warning}" if warning else ""))]
    if exit_status != 0:
        # Every result Pass but dcgmi says otherwise: its status decides (a warning counted, a GPU to isolate).
        return [Result(node, name, False, detail=exit_meaning(EXITS, exit_status))]
    skipped = [t.name for t in diag.tests if t.status == dcgm.SKIP]
    return [Result(node, name, True, detail=f"{len(diag.tests)} tests passed" +
                   (f", skipped: {', '.join(skipped)}" if skipped else ""))]


TEST = AcceptanceTest(name="dcgm", program="dcgmi", unit="", expected_s=lambda setup: EXPECTED_S[setup.dcgm_level],
                      arguments=lambda setup: arguments(setup.dcgm_level), judge=judge, exits=EXITS)
