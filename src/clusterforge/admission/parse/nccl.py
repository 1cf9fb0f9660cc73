"""nccl-tests' text output (all_reduce_perf and its siblings): the rows of the results table, each with its bus
bandwidth per placement, and the footer.

The number a floor is held to is the bus bandwidth of one row (the largest, or the size asked for), never the
footer's "# Avg bus bandwidth": that is the mean over every size and both placements (nccl-tests' common.cu),
small sizes included. Header forms read: 2.13 and later (``redop root ... #wrong``), and before (``redop time ...
error``, no root); lines of NCCL_DEBUG or of a launcher between the rows are skipped, a task prefix (srun -l, Open
MPI's --tag-output) is removed. A table without its footer is a run cut short, and refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ParseError, number, shown, without_task_prefix

_FIRST_COLUMNS = ("size", "count", "type")
_PLACEMENTS = ("out-of-place", "in-place")


@dataclass(frozen=True, slots=True)
class Row:
    """One size of the table: bytes, and per placement (out-of-place, in-place) the bus bandwidth in GB/s and the
    count of wrong values (None where the build does not check: ``N/A``, or the old ``error`` column)."""

    size: int
    busbw: tuple[float, float]
    algbw: tuple[float, float]
    wrong: tuple[int | None, int | None]

    @property
    def lowest_busbw(self) -> float:
        """The bus bandwidth the node holds in both placements."""
        return min(self.busbw)


@dataclass(frozen=True, slots=True)
class Table:
    rows: tuple[Row, ...]
    ranks: int                      # "# Using devices" lines: one per GPU taking part
    out_of_bounds: int | None       # "# Out of bounds values : N", where printed
    avg_busbw: float                # the footer's mean, kept only to show; never held to a floor

    def row(self, size: int | None = None) -> Row:
        """The row of ``size`` bytes (the last printed of that size), or the largest; ParseError where absent."""
        if size is None:
            return max(self.rows, key=lambda r: r.size)
        found = [r for r in self.rows if r.size == size]
        if not found:
            sizes = ", ".join(str(r.size) for r in self.rows)
            raise ParseError(f"no row of {size} bytes in the table (sizes: {sizes})")
        return found[-1]

    @property
    def wrong(self) -> int:
        """Wrong values over every row and placement (0 where the build did not check)."""
        return sum(w or 0 for r in self.rows for w in r.wrong)


@dataclass(frozen=True, slots=True)
class _Layout:
    width: int
    busbw: tuple[int, int]
    algbw: tuple[int, int]
    wrong: tuple[int, int]
    checked: bool  # "#wrong" counts; the old "error" column is a magnitude


def _layout(names: list[str], line: str) -> _Layout:
    if tuple(names[:3]) != _FIRST_COLUMNS or names.count("busbw") != 2 or names.count("algbw") != 2:
        raise ParseError(f"not an nccl-tests table header: {shown(line)}")
    check = "#wrong" if "#wrong" in names else "error"
    if names.count(check) != 2:
        raise ParseError(f"no '#wrong' or 'error' column per placement in the header: {shown(line)}")

    def both(name: str) -> tuple[int, int]:
        first = names.index(name)
        return first, names.index(name, first + 1)

    return _Layout(len(names), both("busbw"), both("algbw"), both(check), check == "#wrong")


def _wrong(text: str, checked: bool, where: str) -> int | None:
    if text == "N/A" or not checked:
        return None
    if not text.isdigit():
        raise ParseError(f"{where}: #wrong {text!r} is not a count")
    return int(text)


def parse(output: str) -> Table:
    """The table of one nccl-tests run; ParseError where it is not one, or was cut before its footer."""
    layout: _Layout | None = None
    rows: list[Row] = []
    ranks = 0
    out_of_bounds: int | None = None
    average: float | None = None
    for number_, raw in enumerate(output.splitlines(), 1):
        line = without_task_prefix(raw).rstrip()
        where = f"line {number_}"
        if line.startswith("#"):
            body = line.lstrip("#").strip()
            names = body.split()
            if names[:1] == ["Rank"]:
                ranks += 1
            elif names[:1] == ["size"]:
                layout = _layout(names, line)
            elif body.startswith("Out of bounds values"):
                count = body.split(":", 1)[1].split()[:1] if ":" in body else []
                if not count or not count[0].isdigit():
                    raise ParseError(f"{where}: unreadable out-of-bounds count: {shown(line)}")
                out_of_bounds = int(count[0])
            elif body.startswith("Avg bus bandwidth"):
                value = body.split(":", 1)[1].split()[:1] if ":" in body else []
                if not value:
                    raise ParseError(f"{where}: unreadable average: {shown(line)}")
                average = number(value[0], f"{where}, Avg bus bandwidth")
            continue
        fields = line.split()
        if not fields or not fields[0].isdigit():
            continue  # NCCL_DEBUG lines, a launcher's words: not the table's
        if layout is None:
            raise ParseError(f"{where}: a row before any table header: {shown(line)}")
        if average is not None:
            raise ParseError(f"{where}: a row after the footer (two runs in one output?): {shown(line)}")
        if len(fields) != layout.width:
            raise ParseError(f"{where}: {len(fields)} fields where the header has {layout.width}: {shown(line)}")
        if not fields[1].isdigit():
            raise ParseError(f"{where}: count {fields[1]!r} is not a number: {shown(line)}")
        rows.append(Row(
            size=int(fields[0]),
            busbw=(number(fields[layout.busbw[0]], f"{where}, busbw"),
                   number(fields[layout.busbw[1]], f"{where}, busbw")),
            algbw=(number(fields[layout.algbw[0]], f"{where}, algbw"),
                   number(fields[layout.algbw[1]], f"{where}, algbw")),
            wrong=(_wrong(fields[layout.wrong[0]], layout.checked, where),
                   _wrong(fields[layout.wrong[1]], layout.checked, where)),
        ))
    if layout is None:
        raise ParseError("no nccl-tests results table (no '#  size  count  type ...' header)")
    if not rows:
        raise ParseError("the results table has no row: the run stopped before its first size")
    if average is None:
        raise ParseError(f"no '# Avg bus bandwidth' footer after {len(rows)} rows: the run was cut short")
    return Table(tuple(rows), ranks, out_of_bounds, average)
