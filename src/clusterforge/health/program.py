"""The node health program: Slurm's HealthCheckProgram on every compute node, run as root by slurmd at its start
and every HealthCheckInterval, with no PATH and no argument (gpu-ops.md, 1.1).

It runs the probes in parallel, each under its own bound, compares what they read with the node's expectations
(expect.py, rendered from the inventory), and then acts on the node's drain through scontrol:

- a finding that asks for a drain drains the node with clusterforge's reason (drains.py), unless the node is
  already drained or down by anyone else (an admin, Slurm, the deploy's removal): those are never touched;
- a check without such a finding lifts the program's own drain (UNDRAIN), except one for a hardware Xid, which
  waits for the node to boot again: the event is over but the GPU may still be broken;
- an application's Xid is recorded in the state directory's events log, and never drains.

The kernel log is read from a cursor (the boot and the last sequence number counted), which moves only once what
was read has been acted on, so an event counts once, even when the program is killed in between.

`report` (`clusterforge-health report`) runs the same probes, prints the findings as JSON and changes nothing: not
the node, not the cursor.

`prolog` and `epilog` are Slurm's Prolog and Epilog (launchers of their own: Slurm passes no argument): only the
GPUs, at a job's boundaries (job_boundary). `gate` waits, in the background, for a node rebooted through Slurm to
register before draining it for what the check at slurmd's start found (the registration lifts any earlier drain).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from . import faults as held_faults
from . import commands, metrics, parse, probes, statedir, xid
from .commands import NOT_FOUND, TIMED_OUT, Answer, Run
from .drains import SlurmState, drain_argv, parse_reason, show_argv, undrain_argv
from .expect import BOUND_S, EXPECTATIONS_PATH, SCONTROL_TIMEOUT_S, SITE_DIR, STATE_DIR, Expectations
from .probes import Finding, reason_of

# slurmd gives the program no PATH: root's usual one, where Debian's packages and a site's own tools are.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
KMSG = "/dev/kmsg"
EVENTS_MAX_BYTES = 1 << 20


T = TypeVar("T")


# The probes: each reads the node and returns its findings, a probe that cannot read being one itself.

def _parsed(probe: str, argv: list[str], expect: Expectations, run: Run, parser: Callable[[str], T],
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
    except parse.ParseError as error:
        return None, [probes.probe_failed(probe, str(error))]


def probe_gpus(expect: Expectations, run: Run) -> tuple[list[Finding], list[parse.Gpu]]:
    listing = {}
    for path in expect.device_files:
        try:
            listing[path] = "char" if stat.S_ISCHR(os.stat(path).st_mode) else "other"
        except OSError:
            listing[path] = "missing"
    findings = probes.device_files(expect, listing)
    found, failed = _parsed("gpus", ["nvidia-smi", "-q"], expect, run, parse.nvidia_smi_query)
    if found is None:
        return findings + failed, []
    return findings + probes.gpus(expect, found), found


def probe_hardware(expect: Expectations, run: Run) -> list[Finding]:
    found, failed = _parsed("hardware", ["slurmd", "-C"], expect, run, parse.slurmd_config)
    return failed if found is None else probes.hardware(expect, found)


def probe_infiniband(expect: Expectations, run: Run) -> list[Finding]:
    # No InfiniBand expected of this node, and no tool to look with: nothing to find.
    optional = not expect.hcas and expect.ib_rate is None
    found, failed = _parsed("infiniband", ["ibstat"], expect, run, parse.ibstat, optional)
    return failed if found is None else probes.infiniband(expect, found)


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
    .../job_<id>/, in v1 and v2 alike), or None: outside any job, or gone."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as file:
            found = _JOB_CGROUP.search(file.read())
    except OSError:
        return None
    return found.group(1) if found else None


# The kernel log, behind a cursor per source.

def kernel_log(path: str = KMSG, limit: int = 1_000_000) -> list[str]:
    """The first line of every record /dev/kmsg holds now, oldest first; reading stops at the end instead of
    waiting for the next record. Records overwritten while reading are skipped (the kernel says EPIPE)."""
    lines: list[str] = []
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        while len(lines) < limit:
            try:
                record = os.read(fd, 8192)
            except BlockingIOError:
                break
            except BrokenPipeError:
                continue
            if not record:
                break
            lines.append(record.decode("utf-8", "replace").split("\n", 1)[0])
    finally:
        os.close(fd)
    return lines


def root_only(path: str) -> bool:
    """A file only root can have written: root's, and writable by no one else."""
    info = os.stat(path)
    return info.st_uid == 0 and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


KERNEL_BOOT_ID = "/proc/sys/kernel/random/boot_id"


def boot_id(expect: Expectations) -> str:
    """This boot's id: the kernel's, or the test cluster's file standing in for it (expect.boot_id_file) where it
    is there and root's alone; the program's own tests name another file (CLUSTERFORGE_HEALTH_BOOT_ID)."""
    path = os.environ.get("CLUSTERFORGE_HEALTH_BOOT_ID", KERNEL_BOOT_ID)
    stand_in = expect.boot_id_file
    if stand_in and os.path.isfile(stand_in) and root_only(stand_in):
        path = stand_in
    with open(path, encoding="utf-8", errors="replace") as file:
        return file.read().strip()


@dataclass
class XidRead:
    events: list[xid.XidEvent]
    cursors: dict[str, str]    # source -> the cursor once these events are counted
    notes: list[str]


def kernel_source() -> str:
    """The kernel's log: /dev/kmsg, or for the program's own tests a root-owned file of records in its format, so
    that what the test machine's kernel happened to log never decides a test."""
    return os.environ.get("CLUSTERFORGE_HEALTH_KMSG", KMSG)


def read_xids(expect: Expectations, saved: dict[str, str], boot: str) -> XidRead:
    """The Xid events past each source's cursor: the kernel's log, then the inventory's extra source where set."""
    read = XidRead([], dict(saved), [])
    kernel = kernel_source()
    sources = [kernel] + ([expect.kernel_log_extra] if expect.kernel_log_extra else [])
    for source in sources:
        try:
            device = stat.S_ISCHR(os.stat(source).st_mode)
            if not device and not root_only(source):
                read.notes.append(f"{source} ignored: not root's alone")
                continue
            lines = kernel_log(source) if device else _file_lines(source)
        except OSError as error:
            read.notes.append(f"{source} unreadable: {error.strerror}")
            continue
        cursor = xid.Cursor.parse(saved.get(source, ""))
        after = cursor.after(boot) if cursor is not None else -1
        events = xid.xid_events(lines, after)
        last = max((seq for seq, _ in xid.kernel_records(lines)), default=after)
        read.events += events
        read.cursors[source] = str(xid.advance(cursor, boot, events, last))
    return read


def _file_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8", errors="replace") as file:
        return file.read().splitlines()


# What the node's drain is, and what to do about it.

@dataclass(frozen=True, slots=True)
class Decision:
    action: str          # "drain", "resume", "keep", "leave", "none", "wait" (a reboot gate)
    reason: str = ""
    why: str = ""


def decide(state: SlurmState, findings: Sequence[Finding], whole: bool = True) -> Decision:
    """What to do with the node's drain. ``findings`` hold the hardware faults the node keeps until it boots again
    (held_faults), sticky, whether seen now or earlier in this boot. A check that is not ``whole`` (a job
    boundary's) only adds a drain: one of clusterforge's already there keeps its reason (the epilog after a failed
    prolog finds the same process)."""
    draining = [f for f in findings if f.action == "drain" and not f.keeps_only]
    holding = {f.drain.cause: f for f in findings if f.action == "drain" and f.keeps_only}
    faults = [f for f in draining if f.sticky]
    ours = state.drained_for(probes.CAUSES)
    if state.held_by_another(probes.CAUSES):
        held = f"; held until {held_faults.until(faults)}: {reason_of(faults)}" if faults else ""
        return Decision("leave", why=f"held by another: {state.reason or '+'.join(sorted(state.flags))}{held}")
    if draining:
        if ours and (kept := [f for f in faults if reason_of([f]) == state.reason]):
            return Decision("keep", state.reason, f"drained for a hardware fault until {held_faults.until(kept)}")
        reason = reason_of(draining)
        if ours and (state.reason == reason or not whole):
            return Decision("keep", state.reason, "drained already")
        return Decision("drain", reason)
    if ours:
        drain = parse_reason(state.reason)
        if drain is not None and drain.cause in holding:
            return Decision("keep", state.reason, f"not clear yet: {holding[drain.cause].reason}")
        return Decision("resume", why=f"healthy again, was: {state.reason}")
    return Decision("none")


# State kept between runs, root's alone.

def _record(state_dir: str, lines: Sequence[str]) -> None:
    """Append to the events log; past its size, only its newer half is kept."""
    if not lines:
        return
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    path = os.path.join(state_dir, "events.log")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    with open(path, "a", encoding="utf-8") as file:
        file.writelines(f"{stamp} {line}\n" for line in lines)
    if os.path.getsize(path) > EVENTS_MAX_BYTES:
        with open(path, encoding="utf-8") as file:
            kept = file.readlines()
        statedir.save(state_dir, "events.log", "".join(kept[len(kept) // 2:]))


# The run.

def findings_of(expect: Expectations, run: Run, saved_cursors: dict[str, str], boot: str
                ) -> tuple[list[Finding], XidRead | None, int | None]:
    """The findings, the kernel log read, and how many GPUs nvidia-smi listed (None: not asked)."""
    wanted = set(expect.probes)
    simple = {"hardware": probe_hardware, "infiniband": probe_infiniband, "mounts": probe_mounts,
              "daemons": probe_daemons, "site": probe_site}
    findings: list[Finding] = []
    with ThreadPoolExecutor(max_workers=len(simple) + 2) as pool:
        gpus = pool.submit(probe_gpus, expect, run) if "gpus" in wanted and expect.device_files else None
        others = [pool.submit(probe, expect, run) for name, probe in simple.items() if name in wanted]
        xids = pool.submit(read_xids, expect, saved_cursors, boot) if "xid" in wanted else None
        listed: list[parse.Gpu] = []
        if gpus is not None:
            gpu_findings, listed = gpus.result()
            findings += gpu_findings
        for future in others:
            findings += future.result()
        read = xids.result() if xids is not None else None
    if read is not None:
        findings += probes.xids(expect, read.events, listed)
    findings += probes.leftover(expect, listed, None, job_of, None)
    return findings, read, len(listed) if gpus is not None else None


def _scontrol(run: Run, argv: list[str]) -> Answer:
    return run(argv, SCONTROL_TIMEOUT_S)


def _cursors(state_dir: str) -> dict[str, str]:
    return json.loads(statedir.load(state_dir, "xid-cursors.json") or "{}")


LOCK_WAIT_S = 20


def _locked(state_dir: str) -> bool:
    """One check at a time on a node (slurmd's at start and its periodic one, an admin's by hand): each reads the
    kernel log from the cursor the last one left, so an event is never counted by two. Held until the process ends."""
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    fd = os.open(os.path.join(state_dir, "lock"), os.O_WRONLY | os.O_CREAT, 0o600)
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)


def act(findings: Sequence[Finding], run: Run, state_dir: str, node: str, boot: str,
        gate: Callable[[], None] | None = None, whole: bool = True) -> tuple[Decision, list[Finding]] | None:
    """The node's drain made to agree with the findings and with the hardware faults held in this boot (decide);
    the decision and the held faults, now including those among ``findings`` (recorded only once the caller has
    acted on what it read: hold). None where the node's state could not be read or changed. A node back from a
    reboot through Slurm, not registered yet, cannot be drained for long (its registration lifts the drain):
    ``gate`` is called to drain it once registered. ``whole``: as decide."""
    shown = _scontrol(run, show_argv(node))
    if shown.rc != 0:
        print(f"scontrol show node {node} {shown.why}: nothing decided")
        return None
    state = SlurmState.parse(shown.out)
    kept = held_faults.held(state_dir, boot)
    faults = held_faults.not_among(held_faults.legacy(state_dir, state, boot) if kept is None else kept, findings)
    if state.rebooting and _draining([*findings, *faults]) and gate is not None:
        gate()
        print(f"wait {node}: back from a reboot through Slurm, it is drained once it has registered")
        return Decision("wait"), faults
    decision = decide(state, [*findings, *faults], whole)
    if decision.action == "drain":
        done = _scontrol(run, drain_argv(node, decision.reason))
        if done.rc != 0:
            print(f"could not drain {node}: scontrol {done.why}")
            return None
        print(f"drained {node}: {decision.reason}")
    elif decision.action == "resume":
        done = _scontrol(run, undrain_argv(node))
        if done.rc != 0:
            print(f"could not lift the drain of {node}: scontrol {done.why}")
            return None
        print(f"resumed {node}: {decision.why}")
    elif decision.action in ("keep", "leave"):
        print(f"{decision.action} {node}: {decision.why}")
    return decision, faults


def _draining(findings: Sequence[Finding]) -> bool:
    return any(f.action == "drain" and not f.keeps_only for f in findings)


def _show(findings: Sequence[Finding]) -> None:
    for finding in findings:
        print(f"{finding.action}: {finding.reason}")


def check(expect: Expectations, run: Run, state_dir: str, node: str, locked: bool = False) -> int:
    if not locked and not _locked(state_dir):
        print(f"another check has been running for over {LOCK_WAIT_S} s: this one stops")
        return 1
    boot = boot_id(expect)
    saved = _cursors(state_dir)
    findings, read, gpus = findings_of(expect, run, saved, boot)
    for note in read.notes if read else []:
        print(f"note: {note}")
    _show(findings)
    acted = act(findings, run, state_dir, node, boot, gate=start_gate)
    if acted is None or acted[0].action == "wait":
        # Not acted on (the gate acts once the node has registered): the gate's check reads these events again.
        print("the kernel log is read again next time")
        return 1
    decision, faults = acted
    # Acted on: from here on these events are counted, and the hardware faults among them held until what ends them
    # (a reboot, or a reset of their GPU), whoever holds the node now (recorded before the cursor moves past them).
    held_faults.hold(state_dir, boot, faults, findings)
    xids = [f for f in findings if f.drain.code.startswith("xid")]
    _record(state_dir, [f.reason for f in xids])
    if expect.metrics_dir:
        metrics.write(expect.metrics_dir, node, expect.profile, gpus, len(findings),
                      metrics.counted(state_dir, [f.drain.code for f in xids]))
    if read is not None and read.cursors != saved:
        statedir.save(state_dir, "xid-cursors.json", json.dumps(read.cursors, sort_keys=True) + "\n")
    # When the check last ran to its end, and what it found: for an admin, and for a test that waits for slurmd.
    statedir.save(state_dir, "last-check", f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {decision.action} "
                                   f"{len(findings)} finding(s)\n" + "".join(f"{f.action}: {f.reason}\n"
                                                                            for f in findings))
    return 1 if _draining([*findings, *faults]) else 0


def start_gate() -> None:
    """The reboot gate, in the background: slurmd waits for the check's output to end, and would kill it at 60 s."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(here)!r}); "
            f"from {os.path.basename(here)}.program import main; sys.exit(main(['gate']))")
    subprocess.Popen([sys.executable, "-I", "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)


GATE_POLL_S = 2.0


def gate(expect: Expectations, run: Run, state_dir: str, node: str) -> int:
    """After a reboot through Slurm (`scontrol reboot ASAP nextstate=resume`) the check at slurmd's start found
    the node sick; slurmd registers it next, which lifts every drain and puts it back in service. Wait for that,
    then check again: still sick, drained with the finding; healthy meanwhile, left in service."""
    deadline = time.monotonic() + expect.reboot_wait_s
    while time.monotonic() < deadline:
        shown = _scontrol(run, show_argv(node))
        if shown.rc == 0 and not SlurmState.parse(shown.out).rebooting:
            return check(expect, run, state_dir, node)
        time.sleep(GATE_POLL_S)
    print(f"{node} did not register within {expect.reboot_wait_s} s: Slurm sets it DOWN")
    return 1


def job_gpus(value: str | None) -> list[int] | None:
    """SLURM_JOB_GPUS, the job's GPUs on this node as gres indices ("0,1,3"); None where Slurm set none."""
    if not value or not value.strip():
        return None
    try:
        return [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        return None


def job_boundary(mode: str, expect: Expectations, run: Run, state_dir: str, node: str, job: str | None,
                 gpus: list[int] | None) -> int:
    """Slurm's Prolog (``prolog``) and Epilog (``epilog``): cheap, only the GPUs. Before a job: every GPU the node
    should have is there and the job's GPUs are free; a finding drains the node and fails the prolog, and Slurm
    requeues the job elsewhere. After it: nothing it started still holds its GPUs; a finding drains the node with
    clusterforge's reason (lifted by the periodic check once clear) and the epilog succeeds, so Slurm adds no drain
    of its own. Neither lifts a drain: that needs the whole check."""
    if not expect.device_files:
        return 0
    findings, listed = probe_gpus(expect, run)
    findings += (probes.foreign(expect, listed, gpus) if mode == "prolog"
                 else probes.leftover(expect, listed, gpus, job_of, job))
    boot = boot_id(expect)
    # A hardware fault the node holds in this boot drains it before a job can start there, though someone lifted
    # the drain since (the periodic check would, an interval later).
    if not _draining(findings) and not held_faults.held(state_dir, boot):
        return 0
    _show(findings)
    if not _locked(state_dir):
        print(f"a check has been running for over {LOCK_WAIT_S} s: the node is left to Slurm")
        return 1
    acted = act(findings, run, state_dir, node, boot, whole=False)
    decision = acted[0] if acted is not None else None
    if mode == "prolog":
        print(f"job {job} not started on {node}: Slurm requeues it")
        return 1
    # Drained by us, or held by another: either way out of service. Not drained: Slurm's "Epilog error" does it.
    return 0 if decision is not None and decision.action in ("drain", "keep", "leave") else 1


def report(expect: Expectations, run: Run, state_dir: str) -> int:
    """The findings, and the hardware faults held in this boot (``"held": true``), as JSON; changes nothing."""
    boot = boot_id(expect)
    findings, read, _ = findings_of(expect, run, _cursors(state_dir), boot)
    held = held_faults.not_among(held_faults.held(state_dir, boot) or [], findings)
    print(json.dumps({"node": expect.node, "notes": read.notes if read else [],
                      "findings": [{"action": f.action, "reason": f.reason, "sticky": f.sticky, "held": f in held}
                                   for f in [*findings, *held]]},
                     sort_keys=True))
    return 1 if any(f.action == "drain" for f in [*findings, *held]) else 0


def _stop(signum: int, frame: object) -> None:
    """Past the bound, or told to stop by slurmd: every probe still running goes, and the check fails."""
    commands.kill_all()
    print(f"check stopped ({signal.Signals(signum).name}) before it finished")
    sys.stdout.flush()
    os._exit(1)


RESET_TIMEOUT_S = 60  # nvidia-smi -r of one GPU


def reset(expect: Expectations, run: Run, state_dir: str, node: str, target: str) -> int:
    """``clusterforge-health reset gpuN|BUS``, by an admin: NVIDIA's reset of one GPU (``nvidia-smi -r``, which
    refuses while a process uses it), then the end of the faults of that GPU that a reset ends (xid.py's "reset"
    class), then a check, which lifts the drain where nothing else holds it. A reset run by hand is not seen by the
    check: only a reboot ends those faults then."""
    if not _locked(state_dir):
        print(f"a check has been running for over {LOCK_WAIT_S} s: nothing reset")
        return 1
    listed, failed = _parsed("gpus", ["nvidia-smi", "-q"], expect, run, parse.nvidia_smi_query)
    if listed is None:
        print(f"no GPU listed: {failed[0].reason if failed else 'nvidia-smi said nothing'}; nothing reset")
        return 1
    gpu = next((g for g in listed if target in (f"gpu{probes.inventory_index(g, expect.device_files)}",
                                                 xid.bus_id(g.bus_id), g.bus_id)), None)
    if gpu is None:
        names = ", ".join(f"gpu{probes.inventory_index(g, expect.device_files)} {xid.bus_id(g.bus_id)}" for g in listed)
        print(f"no GPU {target!r} on {node} (it has {names}): nothing reset", file=sys.stderr)
        return 2
    bus = xid.bus_id(gpu.bus_id)
    answer = run(["nvidia-smi", "-r", "-i", gpu.bus_id], RESET_TIMEOUT_S)
    if answer.rc != 0:
        print(f"nvidia-smi -r -i {gpu.bus_id} {answer.why}: the GPU was not reset, its faults are still held")
        return 1
    boot = boot_id(expect)
    kept, released = held_faults.released_by_reset(held_faults.held(state_dir, boot) or [], bus)
    held_faults.save(state_dir, boot, kept)
    for fault in released:
        print(f"released by the reset of {bus}: {fault.reason}")
    for fault in kept:
        print(f"still held until {held_faults.until([fault])}: {fault.reason}")
    return check(expect, run, state_dir, node, locked=True)


MODES = ("check", "report", "prolog", "epilog", "gate", "reset")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    mode = args[0] if args else "check"
    if mode not in MODES or (mode == "reset") != (len(args) == 2) or len(args) > 2:
        print(f"usage: clusterforge-health [{'|'.join(m for m in MODES if m != 'reset')}] | clusterforge-health "
              f"reset gpuN|BUS (not {' '.join(args)!r})", file=sys.stderr)
        return 2
    os.environ.setdefault("PATH", DEFAULT_PATH)
    os.environ.setdefault("LC_ALL", "C")
    expect_path = os.environ.get("CLUSTERFORGE_HEALTH_EXPECT", EXPECTATIONS_PATH)
    state_dir = os.environ.get("CLUSTERFORGE_HEALTH_STATE", STATE_DIR)
    with open(expect_path, encoding="utf-8") as file:
        expect = Expectations.from_json(file.read())
    signal.signal(signal.SIGALRM, _stop)
    signal.signal(signal.SIGTERM, _stop)
    signal.alarm(BOUND_S + {"gate": expect.reboot_wait_s, "reset": RESET_TIMEOUT_S}.get(mode, 0))
    if mode == "report":
        return report(expect, commands.run, state_dir)
    node = os.environ.get("SLURMD_NODENAME", expect.node)
    if mode == "gate":
        return gate(expect, commands.run, state_dir, node)
    if mode == "reset":
        return reset(expect, commands.run, state_dir, node, args[1])
    if mode in ("prolog", "epilog"):
        return job_boundary(mode, expect, commands.run, state_dir, node, os.environ.get("SLURM_JOB_ID"),
                            job_gpus(os.environ.get("SLURM_JOB_GPUS")))
    return check(expect, commands.run, state_dir, node)
