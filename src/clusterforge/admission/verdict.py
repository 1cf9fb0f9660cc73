"""One judged result of an acceptance test on a node: what was measured, against which floor, and the words a drain
reason and a record give it.

The reason is what Slurm shows an admin (``cf:gate:allreduce 402 GB/s < 460``): the test, the number and the floor,
nothing more, since a drain reason is one short line; the detail (which GPU pair, which message size) goes to the
record. A result without a number (a DCGM test that failed, output nobody could read, a run cut at its bound) gives
its detail instead.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


# The most of a detail a reason shows: a drain reason is read in `sinfo -R`'s one line; the record keeps it whole.
REASON_DETAIL = 72


def figure(value: float) -> str:
    """A number as a reason shows it: at most two decimals, none where they are zeros (``402``, ``337.35``)."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def utc(seconds: float) -> str:
    """A time as a record keeps it: ISO 8601 in UTC to the second, sortable as text."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


@dataclass(frozen=True, slots=True)
class Result:
    node: str
    test: str                  # the test's name, with the part tested where one test gives several (ib_write_bw:mlx5_0)
    passed: bool
    value: float | None = None
    unit: str = ""
    floor: float | None = None
    detail: str = ""

    @property
    def reason(self) -> str:
        if self.value is None or self.floor is None:
            detail = self.detail or ("passed" if self.passed else "failed")
            return f"{self.test} {detail if len(detail) <= REASON_DETAIL else detail[:REASON_DETAIL - 3] + '...'}"
        unit = f" {self.unit}" if self.unit else ""
        relation = ">=" if self.value >= self.floor else "<"
        return f"{self.test} {figure(self.value)}{unit} {relation} {figure(self.floor)}"

    def record(self, source: str, when: float | None = None) -> dict[str, Any]:
        """One line of the node's record: this result, where it came from (``gate``, ``accept``) and when."""
        return {"node": self.node, "test": self.test, "passed": self.passed, "value": self.value, "unit": self.unit,
                "floor": self.floor, "detail": self.detail, "reason": self.reason, "source": source,
                "time": utc(time.time() if when is None else when)}
