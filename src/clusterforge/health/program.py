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
`reboot` is Slurm's RebootProgram (reboot.py): the evidence of the node's hardware faults (evidence.py), then the
inventory's reboot program. At the first check of a new boot, a node of a profile with admission that held hardware
faults in the earlier boot is held for the admission gate (repaired.py).

This module is the modes and the state kept between runs; the rest is a module per job: reads.py (the probes' reads
of the node), kernel.py (the kernel log behind its cursor), decide.py (what to do with the node's drain, and doing
it), commands.py (every command run bounded, shared with the Slurm exporter).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from . import evidence, metrics, parse, probes, reboot, repaired, statedir, xid
from ..slurm import commands
from . import faults as held_faults
from ..slurm.commands import Run
from .decide import act, draining, scontrol
from ..slurm.nodes import parse_node, show_argv
from .expect import BOUND_S, EXPECTATIONS_PATH, STATE_DIR, Expectations
from .kernel import boot_id
from .probes import Finding
from .reads import findings_of, job_of, parsed, probe_gpus

# slurmd gives the program no PATH: root's usual one, where Debian's packages and a site's own tools are.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# State kept between runs, root's alone.

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


# The modes.

def _show(findings: Sequence[Finding]) -> None:
    for finding in findings:
        print(f"{finding.action}: {finding.reason}")


def check(expect: Expectations, run: Run, state_dir: str, node: str, locked: bool = False) -> int:
    if not locked and not _locked(state_dir):
        print(f"another check has been running for over {LOCK_WAIT_S} s: this one stops")
        return 1
    boot = boot_id(expect)
    unheld = repaired.hold(expect, run, state_dir, node, boot)
    saved = _cursors(state_dir)
    findings, read, gpus = findings_of(expect, run, saved, boot)
    findings = [*unheld, *findings]
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
    statedir.record(state_dir, [f.reason for f in xids])
    if expect.metrics_dir:
        metrics.write(expect.metrics_dir, node, expect.profile, gpus, len(findings),
                      metrics.counted(state_dir, [f.drain.code for f in xids]))
    if read is not None and read.cursors != saved:
        statedir.save(state_dir, "xid-cursors.json", json.dumps(read.cursors, sort_keys=True) + "\n")
    # When the check last ran to its end, and what it found: for an admin, and for a test that waits for slurmd.
    statedir.save(state_dir, "last-check", f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {decision.action} "
                                   f"{len(findings)} finding(s)\n" + "".join(f"{f.action}: {f.reason}\n"
                                                                            for f in findings))
    return 1 if draining([*findings, *faults]) else 0


def start_gate() -> None:
    """The reboot gate, in the background: slurmd waits for the check's output to end, and would kill it at 60 s."""
    # The directory (or zip) the program's top package is in: one level up from this file per level of its name
    # (clusterforge_health.health on a node, in clusterforge's layout).
    program = os.path.dirname(os.path.abspath(__file__))
    for _ in __package__.split("."):
        program = os.path.dirname(program)
    # Imported through a descriptor (render/health.py's launchers: /proc/self/fd/N): the gate is given the same one,
    # so it runs this program, whatever the deploy has renamed over its file since.
    passed = (int(program.rsplit("/", 1)[1]),) if program.startswith("/proc/self/fd/") else ()
    code = (f"import sys; sys.path.insert(0, {program!r}); "
            f"from {__package__}.program import main; sys.exit(main(['gate']))")
    subprocess.Popen([sys.executable, "-I", "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True, pass_fds=passed)


GATE_POLL_S = 2.0


def gate(expect: Expectations, run: Run, state_dir: str, node: str) -> int:
    """After a reboot through Slurm (`scontrol reboot ASAP nextstate=resume`) the check at slurmd's start found
    the node sick; slurmd registers it next, which lifts every drain and puts it back in service. Wait for that,
    then check again: still sick, drained with the finding; healthy meanwhile, left in service."""
    deadline = time.monotonic() + expect.reboot_wait_s
    while time.monotonic() < deadline:
        shown = scontrol(run, show_argv(node))
        if shown.rc == 0 and not parse_node(shown.out).rebooting:
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
    if not draining(findings) and not held_faults.held(state_dir, boot):
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
    check: only a reboot ends those faults then. Before the reset, where the GPU holds a hardware fault, the node
    keeps the evidence the reset wipes (evidence.py)."""
    if not _locked(state_dir):
        print(f"a check has been running for over {LOCK_WAIT_S} s: nothing reset")
        return 1
    listed, failed = parsed("gpus", ["nvidia-smi", "-q"], expect, run, parse.nvidia_smi_query)
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
    boot = boot_id(expect)
    # What the reset wipes, kept first where it ends a hardware fault the node holds (evidence.py).
    on_gpu = [f for f in held_faults.held(state_dir, boot) or [] if f.bus == bus]
    if on_gpu:
        kept_in = evidence.keep(expect, run, on_gpu, "reset")
        print(f"evidence of {probes.reason_of(on_gpu)} kept in {kept_in}")
        statedir.record(state_dir, [f"evidence kept in {kept_in} before the reset of {bus}"])
    answer = run(["nvidia-smi", "-r", "-i", gpu.bus_id], RESET_TIMEOUT_S)
    if answer.rc != 0:
        print(f"nvidia-smi -r -i {gpu.bus_id} {answer.why}: the GPU was not reset, its faults are still held")
        return 1
    kept, released = held_faults.released_by_reset(held_faults.held(state_dir, boot) or [], bus)
    held_faults.save(state_dir, boot, kept)
    for fault in released:
        print(f"released by the reset of {bus}: {fault.reason}")
    for fault in kept:
        print(f"still held until {held_faults.until([fault])}: {fault.reason}")
    return check(expect, run, state_dir, node, locked=True)


MODES = ("check", "report", "prolog", "epilog", "gate", "reset", "reboot")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    mode = args[0] if args else "check"
    # reset takes its GPU; reboot whatever slurmd passes on to the RebootProgram (a node's new features).
    fits = len(args) == 2 if mode == "reset" else mode == "reboot" or len(args) <= 1
    if mode not in MODES or not fits:
        print(f"usage: clusterforge-health [{'|'.join(m for m in MODES if m not in ('reset', 'reboot'))}] | "
              f"clusterforge-health reset gpuN|BUS | clusterforge-health reboot [ARG...] (not {' '.join(args)!r})",
              file=sys.stderr)
        return 2
    os.environ.setdefault("PATH", DEFAULT_PATH)
    os.environ.setdefault("LC_ALL", "C")
    expect_path = os.environ.get("CLUSTERFORGE_HEALTH_EXPECT", EXPECTATIONS_PATH)
    state_dir = os.environ.get("CLUSTERFORGE_HEALTH_STATE", STATE_DIR)
    if mode == "reboot":
        # No bound of the program's own: past one it would end without the reboot. Each command has its bound.
        return reboot.reboot(expect_path, commands.run, state_dir, args[1:])
    with open(expect_path, encoding="utf-8") as file:
        expect = Expectations.from_json(file.read())
    signal.signal(signal.SIGALRM, _stop)
    signal.signal(signal.SIGTERM, _stop)
    signal.alarm(BOUND_S + {"gate": expect.reboot_wait_s, "reset": RESET_TIMEOUT_S + evidence.BOUND_S}.get(mode, 0))
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
