"""The probes' reads of this node: each runs its commands (bounded, commands.py) or reads its files, and hands what
it read to probes.py, which compares it with the node's expectations; a probe that cannot read is itself a finding.
findings_of runs them all at once, with the kernel log's Xid events (kernel.py) and the HCAs' port counters against the
last reading (links.py)."""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from . import ibsysfs, links, parse, probes
from ..slurm.parse import ParseError
from ..slurm.commands import NOT_FOUND, TIMED_OUT, Run
from .expect import SITE_DIR, Expectations
from .kernel import XidRead, read_xids, root_only
from .probes import Finding

T = TypeVar("T")


def parsed(probe: str, argv: list[str], expect: Expectations, run: Run, parser: Callable[[str], T],
           optional: bool = False) -> tuple[T | None, list[Finding]]:
    """What a command printed, parsed; or None and the finding that it could not be read (none where the command
    is ``optional`` and not there)."""
    answer = run(argv, expect.probe_timeout_s)
    if answer.rc == NOT_FOUND and optional:
        return None, []
    if answer.rc != 0:
        return None, [probes.probe_failed(probe, f"{' '.join(argv)} {answer.why}")]
    try:
        return parser(answer.out), []
    except ParseError as error:
        return None, [probes.probe_failed(probe, str(error))]


def probe_gpus(expect: Expectations, run: Run) -> tuple[list[Finding], list[parse.Gpu]]:
    listing = {}
    for path in expect.device_files:
        try:
            listing[path] = "char" if stat.S_ISCHR(os.stat(path).st_mode) else "other"
        except OSError:
            listing[path] = "missing"
    findings = probes.device_files(expect, listing)
    found, failed = parsed("gpus", ["nvidia-smi", "-q"], expect, run, parse.nvidia_smi_query)
    if found is None:
        return findings + failed, []
    return findings + probes.gpus(expect, found), found


def probe_hardware(expect: Expectations, run: Run) -> list[Finding]:
    found, failed = parsed("hardware", ["slurmd", "-C"], expect, run, parse.slurmd_config)
    return failed if found is None else probes.hardware(expect, found)


def probe_infiniband(expect: Expectations, run: Run) -> list[Finding]:
    # No InfiniBand expected of this node, and no tool to look with: nothing to find.
    optional = not expect.hcas and expect.ib_rate is None
    found, failed = parsed("infiniband", ["ibstat"], expect, run, parse.ibstat, optional)
    if found is None:
        return failed
    sysfs = ibsysfs.where(expect)
    return probes.infiniband(expect, found, lambda hca, port: ibsysfs.width(sysfs, hca, port))


def read_links(expect: Expectations) -> tuple[list[ibsysfs.Port] | None, list[str]]:
    """The watched counters of the ports links.py judges (None: no answer within the probe's bound), and what the
    reader noted."""
    sysfs = ibsysfs.where(expect)
    read = ibsysfs.bounded(sysfs, expect.probe_timeout_s, [h.name for h in expect.hcas], expect.link_errors)
    return read, list(sysfs.notes)


def probe_mounts(expect: Expectations, run: Run) -> list[Finding]:
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as file:
        return probes.mounts(expect, probes.mount_points(file.read()))


def probe_daemons(expect: Expectations, run: Run) -> list[Finding]:
    units = expect.units
    if not units:
        return []
    answer = run(["systemctl", "is-active", *units], expect.probe_timeout_s)
    if answer.rc == TIMED_OUT or not answer.out.strip():
        return [probes.probe_failed("daemons", f"systemctl is-active {answer.why}")]
    return probes.daemons(expect, dict(zip(units, answer.out.split())))


def probe_site(expect: Expectations, run: Run) -> list[Finding]:
    """Every executable of the site's probe directory, in name order, all of them within one probe bound; one
    that anyone but root could have written is not run, and says so."""
    directory = os.environ.get("CLUSTERFORGE_HEALTH_SITE_DIR", SITE_DIR)
    deadline = time.monotonic() + expect.probe_timeout_s
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    findings = []
    for name in names:
        path = os.path.join(directory, name)
        if not os.path.isfile(path) or not os.access(path, os.X_OK):
            continue
        if not root_only(path):
            findings.append(probes.probe_failed("site", f"{name} not run: not root's alone"))
            continue
        answer = run([path], max(1.0, deadline - time.monotonic()))
        findings += probes.site(name, answer.rc, answer.out + answer.err)
    return findings


_JOB_CGROUP = re.compile(r"/job_(\d+)(?:/|$)", re.MULTILINE)


def job_of(pid: int) -> str | None:
    """The Slurm job a process runs in, from its cgroup (proctrack/cgroup puts every process of a job under
    .../job_<id>/, in v1 and v2 alike), or None: outside any job, or gone. From 26.05, cgroup/v2 names that directory
    by the job's SLUID instead unless cgroup.conf says CgroupJobIdPaths=yes, which clusterforge renders there."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as file:
            found = _JOB_CGROUP.search(file.read())
    except OSError:
        return None
    return found.group(1) if found else None


def findings_of(expect: Expectations, run: Run, saved_cursors: dict[str, str], boot: str,
                saved_links: dict | None = None
                ) -> tuple[list[Finding], XidRead | None, int | None, links.LinkRead | None]:
    """The findings, the kernel log read, how many GPUs nvidia-smi listed (None: not asked), and the port counters
    against ``saved_links``, the last reading (None: the infiniband probe not asked)."""
    wanted = set(expect.probes)
    simple = {"hardware": probe_hardware, "infiniband": probe_infiniband, "mounts": probe_mounts,
              "daemons": probe_daemons, "site": probe_site}
    findings: list[Finding] = []
    # One worker each: no probe waits for another's bound before its own starts.
    with ThreadPoolExecutor(max_workers=len(simple) + 3) as pool:
        gpus = pool.submit(probe_gpus, expect, run) if "gpus" in wanted and expect.device_files else None
        others = [pool.submit(probe, expect, run) for name, probe in simple.items() if name in wanted]
        xids = pool.submit(read_xids, expect, saved_cursors, boot) if "xid" in wanted else None
        counters = pool.submit(read_links, expect) if "infiniband" in wanted else None
        listed: list[parse.Gpu] = []
        if gpus is not None:
            gpu_findings, listed = gpus.result()
            findings += gpu_findings
        for future in others:
            findings += future.result()
        read = xids.result() if xids is not None else None
        ports, notes = counters.result() if counters is not None else ([], [])
    if read is not None:
        findings += probes.xids(expect, read.events, listed)
    link = None
    if counters is not None and ports is None:
        findings.append(probes.probe_failed("infiniband", f"the port counters under {ibsysfs.where(expect).path} "
                                                          f"gave no answer in {expect.probe_timeout_s} s"))
    elif counters is not None:
        link = links.judge(expect, ports, saved_links, boot)
        findings += link.findings
        link.notes.extend(notes)
    findings += probes.leftover(expect, listed, None, job_of, None)
    return findings, read, len(listed) if gpus is not None else None, link
