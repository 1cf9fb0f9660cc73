"""Readers of the acceptance tools' output: nccl-tests' all_reduce_perf, DCGM's dcgmi diag, perftest's ib_write_bw
and NVIDIA's nvbandwidth (formats: ../shared/reference/acceptance.md, read from each tool's source).

Each reader returns typed results or raises ParseError naming what it could not read. Output a reader does not
understand is never taken for a pass: a test whose output is unreadable fails.
"""

from __future__ import annotations

import re

from ...slurm.parse import ParseError

__all__ = ["ParseError", "number", "shown", "without_task_prefix"]


# What a launcher puts before each line of a task's output: Open MPI's --tag-output ("[1,0]<stdout>:") and
# srun -l ("0: "). A table row begins with spaces and digits but never with digits and a colon.
_TASK_PREFIX = re.compile(r"^(\[\d+,\d+\]<std(out|err)>:|\s*\d+: )")


def without_task_prefix(line: str) -> str:
    return _TASK_PREFIX.sub("", line, count=1)


def number(text: str, what: str) -> float:
    """A number as the tools print it (``476.21``, ``10094``, ``1.2e+04``); a ParseError naming ``what``."""
    try:
        value = float(text)
    except ValueError:
        raise ParseError(f"{what}: {text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ParseError(f"{what}: {text!r} is not a finite number")
    return value


def shown(line: str, limit: int = 80) -> str:
    """A line of output as an error message quotes it."""
    line = line.rstrip()
    return repr(line if len(line) <= limit else line[:limit - 3] + "...")
