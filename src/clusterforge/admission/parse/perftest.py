"""perftest's bandwidth tables (ib_write_bw and its siblings): per message size the peak and average bandwidth.

The number held to a floor is the BW average (the 4th field, as Azure's check reads it). ``--report_gbits`` prints
Gb/s (10^9 bit/s); without it the unit is MiB/s, printed ``MiB/sec`` from perftest 24.07 and ``MB/sec`` before (both
2^20 bytes/s). Server and client both print the table, so one job's output holds it twice; where the tables differ
the lower average is the one the link gave.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import ParseError, number, shown

GBITS, MIBS = "Gb/s", "MiB/s"
_HEADER = re.compile(r"^\s*#bytes\s+#iterations\s+BW peak\[(?P<peak>[^\]]+)\]\s+BW average\[(?P<unit>[^\]]+)\]")
_UNITS = {"Gb/sec": GBITS, "MiB/sec": MIBS, "MB/sec": MIBS}
_FIELDS = 5  # size, iterations, peak, average, message rate


@dataclass(frozen=True, slots=True)
class Row:
    size: int
    iterations: int
    peak: float
    average: float


@dataclass(frozen=True, slots=True)
class Bandwidth:
    rows: tuple[Row, ...]
    unit: str

    def average(self, size: int | None = None) -> float:
        """The lowest BW average printed for ``size`` bytes (the largest size where None), in ``unit``."""
        size = max(r.size for r in self.rows) if size is None else size
        found = [r.average for r in self.rows if r.size == size]
        if not found:
            raise ParseError(f"no row of {size} bytes (sizes: {', '.join(str(r.size) for r in self.rows)})")
        return min(found)

    def gbits(self, size: int | None = None) -> float:
        """``average`` in Gb/s, whatever the unit printed."""
        value = self.average(size)
        return value if self.unit == GBITS else value * 2**20 * 8 / 1e9


def parse(output: str) -> Bandwidth:
    """Every table of ``output``; ParseError where there is none, a row is garbled, or the output stops in one."""
    rows: list[Row] = []
    unit: str | None = None
    in_table = False
    lines = output.splitlines()
    for number_, line in enumerate(lines, 1):
        where = f"line {number_}"
        header = _HEADER.match(line)
        if header:
            found = _UNITS.get(header.group("unit"))
            if found is None or _UNITS.get(header.group("peak")) != found:
                raise ParseError(f"{where}: unknown bandwidth unit: {shown(line)}")
            if unit is not None and found != unit:
                raise ParseError(f"{where}: a table in {found} after one in {unit}")
            unit, in_table = found, True
            continue
        fields = line.split()
        if in_table and fields and fields[0].isdigit():
            if len(fields) != _FIELDS:
                raise ParseError(f"{where}: {len(fields)} fields where a row has {_FIELDS}: {shown(line)}")
            if not fields[1].isdigit():
                raise ParseError(f"{where}: iterations {fields[1]!r} is not a count: {shown(line)}")
            rows.append(Row(int(fields[0]), int(fields[1]), number(fields[2], f"{where}, BW peak"),
                            number(fields[3], f"{where}, BW average")))
            number(fields[4], f"{where}, MsgRate")
            continue
        in_table = False
    if unit is None:
        raise ParseError("no perftest bandwidth table ('#bytes  #iterations  BW peak[...]  BW average[...]')")
    if not rows:
        raise ParseError("the bandwidth table has no row: the test stopped before measuring")
    if in_table:
        raise ParseError("the output ends inside the table, with no closing rule: it was cut short")
    return Bandwidth(tuple(rows), unit)
