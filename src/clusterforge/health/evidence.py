"""Evidence kept on the node before a GPU reset or a reboot that clusterforge causes for a hardware finding: what the
reset or the reboot wipes, which NVIDIA's RMA process and an admin's diagnosis need afterwards (NVIDIA asks for
``nvidia-bug-report.sh``'s log with every RMA; the kernel's log of the boot holds the Xid lines; the HCAs' port
counters start again at zero).

One directory per event, ``/var/lib/clusterforge/evidence/<UTC time>-<cause>/``, its cause the drain's code and GPU
(``20261127T042100Z-xid79-gpu3-reboot``), so that the drain reason an admin reads names the directory to look in:

- ``reason.txt``: what is held and what follows (the reset or the reboot);
- ``nvidia-bug-report.log.gz``, where NVIDIA's script is installed: run under a bound (a wedged GPU can hang it),
  once more in its safe mode where the bound passed, and not kept past a size;
- ``kernel.log``: the kernel's messages since boot (``journalctl -k -b``; the kernel's own buffer where journald has
  none), and the test cluster's records file where the expectations name one; each its newest part past a size;
- ``ib-counters.txt``: every InfiniBand port counter, ``<hca>/<port>/<counters|hw_counters>/<name> <value>``,
  read as the check reads them (ibsysfs.py).

Bounded: in time (each command), in size (each file) and in number (the oldest directories go past a count). Never
an obstacle to what follows: a part that fails is named in ``reason.txt`` and the rest kept.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Sequence

from . import ibsysfs
from ..slurm.commands import Run
from .expect import Expectations
from .kernel import kernel_log, kernel_source, root_only
from .probes import Finding

EVIDENCE_DIR = "/var/lib/clusterforge/evidence"
BUG_REPORT = "nvidia-bug-report.sh"
BUG_REPORT_NAME = "nvidia-bug-report.log"   # the script appends .gz
# nvidia-bug-report.sh takes a minute or two on a healthy 8-GPU node; its safe mode skips what hangs on a sick one.
BUG_REPORT_TIMEOUT_S = 180
SAFE_MODE_TIMEOUT_S = 60
JOURNAL_TIMEOUT_S = 30
IB_COUNTERS_TIMEOUT_S = 10   # each read a firmware command; a wedged HCA answers none
# The most the evidence takes, every command at its bound (the reset's own bound adds it).
BOUND_S = BUG_REPORT_TIMEOUT_S + SAFE_MODE_TIMEOUT_S + JOURNAL_TIMEOUT_S + IB_COUNTERS_TIMEOUT_S + 10
MAX_BUG_REPORT_BYTES = 256 << 20
MAX_LOG_BYTES = 32 << 20
KEPT = 16   # directories; the oldest go first
_NAME = re.compile(r"^\d{8}T\d{6}Z-")


def slug(findings: Sequence[Finding], then: str) -> str:
    """A directory's cause: the first fault's code and GPU (``xid79-gpu3``), and what follows (``reboot``)."""
    words = []
    if findings:
        drain = findings[0].drain
        words = [drain.code or drain.cause, *drain.detail.split()[:1]]
    text = "-".join([*words, then])
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:80]


def root() -> str:
    """Where the evidence goes; the program's own tests name another directory (CLUSTERFORGE_HEALTH_EVIDENCE)."""
    return os.environ.get("CLUSTERFORGE_HEALTH_EVIDENCE", EVIDENCE_DIR)


def keep(expect: Expectations, run: Run, findings: Sequence[Finding], then: str) -> str:
    """The evidence of ``findings`` before ``then`` (a reset of a GPU, a reboot), in a new directory: its path."""
    base = root()
    os.makedirs(base, mode=0o700, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = _unused(os.path.join(base, f"{stamp}-{slug(findings, then)}"))
    os.makedirs(path, mode=0o700)
    notes = [_bug_report(run, path), *_kernel(expect, run, path), _ib_counters(expect, path)]
    lines = [f"node: {expect.node}", f"time: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
             f"before: {then}", *(f"held: {f.reason}" for f in findings), *(n for n in notes if n)]
    _write(os.path.join(path, "reason.txt"), "\n".join(lines) + "\n")
    _prune(base, path)
    return path


def _unused(path: str) -> str:
    """Two events in one second get two directories."""
    candidate, n = path, 1
    while os.path.exists(candidate):
        n += 1
        candidate = f"{path}.{n}"
    return candidate


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)


def _tail(text: str) -> str:
    """The newest part of a log: what led to the fault is at its end."""
    data = text.encode("utf-8", "replace")
    return text if len(data) <= MAX_LOG_BYTES else data[-MAX_LOG_BYTES:].decode("utf-8", "replace")


def _bug_report(run: Run, path: str) -> str:
    if shutil.which(BUG_REPORT) is None:
        return f"no {BUG_REPORT} on this node: no NVIDIA bug report"
    output = os.path.join(path, BUG_REPORT_NAME)
    answer = run([BUG_REPORT, "--output-file", output], BUG_REPORT_TIMEOUT_S)
    note = ""
    if not answer.ok:
        note = f"{BUG_REPORT} {answer.why}; then in its safe mode: "
        answer = run([BUG_REPORT, "--safe-mode", "--output-file", output], SAFE_MODE_TIMEOUT_S)
        note += "done" if answer.ok else answer.why
    report = f"{output}.gz"
    if os.path.isfile(report) and os.path.getsize(report) > MAX_BUG_REPORT_BYTES:
        os.remove(report)
        note += f"{'; ' if note else ''}{report} over {MAX_BUG_REPORT_BYTES >> 20} MiB, not kept"
    elif not os.path.isfile(report):
        note += f"{'; ' if note else ''}{BUG_REPORT} wrote no {report}"
    return note


def _kernel(expect: Expectations, run: Run, path: str) -> list[str]:
    notes = []
    answer = run(["journalctl", "-k", "-b", "--no-pager", "-o", "short-iso-precise"], JOURNAL_TIMEOUT_S)
    if answer.ok:
        text = answer.out
    else:
        notes.append(f"journalctl -k -b {answer.why}: the kernel's own buffer instead")
        try:
            text = "".join(f"{line}\n" for line in kernel_log(kernel_source()))
        except OSError as error:
            text = ""
            notes.append(f"{kernel_source()} unreadable: {error.strerror}")
    _write(os.path.join(path, "kernel.log"), _tail(text))
    extra = expect.kernel_log_extra
    if extra and os.path.isfile(extra) and root_only(extra):
        with open(extra, encoding="utf-8", errors="replace") as file:
            _write(os.path.join(path, "kernel-records.log"), _tail(file.read()))
    return notes


def _ib_counters(expect: Expectations, path: str) -> str:
    """Every HCA's, declared or not: the diagnosis may need the one the inventory forgot."""
    sysfs = ibsysfs.where(expect)
    read = ibsysfs.bounded(sysfs, IB_COUNTERS_TIMEOUT_S)
    lines = sorted(f"{port.hca}/{port.port}/{name} {value}\n" for port in read or []
                   for name, value in port.values.items())
    _write(os.path.join(path, "ib-counters.txt"), "".join(lines))
    if read is None:
        return f"the InfiniBand port counters under {sysfs.path} gave no answer in {IB_COUNTERS_TIMEOUT_S} s"
    notes = "; ".join(sysfs.notes)
    return notes or ("" if lines else f"no InfiniBand port counters under {sysfs.path}")


def _prune(base: str, keep_: str) -> None:
    """Past KEPT directories, the oldest go (their names begin with their time)."""
    ours = sorted(d for d in os.listdir(base) if _NAME.match(d) and os.path.isdir(os.path.join(base, d)))
    for name in ours[:max(0, len(ours) - KEPT)]:
        if os.path.join(base, name) != keep_:
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)

