"""What automatic repair took, from the loop's own history on a cluster's controller (repair/store.py's
history.jsonl): per fault class, the repairs ended, how many ended in service with no command typed, and the median
and longest time from the loop's first sight of the fault to its first action and to the node back in service.
Prints figures, asserts nothing.

    .venv/bin/python benchmarks/repair_figures.py                # the test cluster's controller (testbed/ssh.sh)
    .venv/bin/python benchmarks/repair_figures.py history.jsonl  # a copy of a controller's file

The time from the fault itself to the loop's sight of it is the health check's: within HealthCheckInterval (and the
loop's interval, 10 s) of the Xid, or at the job's prolog; the e2e repair tests print it from the kernel record on.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HISTORY = "/var/lib/clusterforge/repair/history.jsonl"


def history(argv: list[str]) -> list[dict]:
    text = Path(argv[0]).read_text() if argv else subprocess.run(
        ["bash", str(REPO / "testbed" / "ssh.sh"), "ctl", f"sudo cat {HISTORY}"], capture_output=True, text=True,
        check=True, timeout=60).stdout
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def seconds(values: list[float]) -> str:
    return f"{statistics.median(values):6.0f} s median, {max(values):6.0f} s longest" if values else "-"


def main(argv: list[str]) -> int:
    by_class: dict[str, list[dict]] = defaultdict(list)
    for entry in history(argv):
        if entry.get("outcome") != "observed":
            by_class[entry.get("class") or "?"].append(entry)
    print(f"{'class':8} {'ended':>5} {'in service':>10}  to first action                    to service")
    for klass, entries in sorted(by_class.items()):
        served = [e for e in entries if e.get("in_service")]
        acted = [e["acted"][0]["at"] - e["seen_at"] for e in entries if e.get("acted")]
        print(f"{klass:8} {len(entries):5} {len(served):10}  {seconds(acted):34} "
              f"{seconds([e['ended_at'] - e['seen_at'] for e in served])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
