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
register before draining it for what the check at slurmd's start found (the registration lifts any earlier drain), or,
for a node the repair loop rebooted, before checking it with the loop's reason its own (decide.py's ``owned``).
`reboot` is Slurm's RebootProgram (reboot.py): the evidence of the node's hardware faults (evidence.py), then the
inventory's reboot program. `reset` is an admin's reset of one GPU, `asked-reset` the one the repair loop asks through
the node's drain reason, started in the background by the periodic check that finds it (resets.py). At the first
check of a new boot, a node of a profile with admission that held hardware faults in the earlier boot is held for the
admission gate (repaired.py).

This module is the modes and the state kept between runs; the rest is a module per job: reads.py (the probes' reads
of the node), kernel.py (the kernel log behind its cursor), links.py (the HCAs' port counters against the last
reading), decide.py (what to do with the node's drain, and doing it), commands.py (every command run bounded, shared
with the Slurm exporter).
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

from . import evidence, links, metrics, probes, reboot, repaired, resets, statedir
from ..slurm import commands, reservations
from . import faults as held_faults
from ..slurm.commands import Run
from .decide import act, draining, scontrol
from ..slurm.nodes import parse_node, show_argv
from ..slurm.parse import ParseError
from ..slurm.repairs import reset_asked
from .expect import BOUND_S, EXPECTATIONS_PATH, STATE_DIR, Expectations
from .kernel import boot_id
from .probes import Finding
from .reads import findings_of, job_of, probe_gpus

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


def check(expect: Expectations, run: Run, state_dir: str, node: str, locked: bool = False, owned: str | None = None,
          asks: bool = True) -> int:
    """The periodic check. ``owned``: the loop's reason whose reset was just performed (asked_reset), the check's own
    this once (decide.py). ``asks``: a node left alone with a reason that asks a reset has it done in the background
    (asked_reset, which runs its check with ``asks`` off: one attempt per periodic check)."""
    if not locked and not _locked(state_dir):
        print(f"another check has been running for over {LOCK_WAIT_S} s: this one stops")
        return 1
    boot = boot_id(expect)
    unheld = repaired.hold(expect, run, state_dir, node, boot)
    saved = _cursors(state_dir)
    saved_links = links.load(state_dir)
    findings, read, gpus, link = findings_of(expect, run, saved, boot, saved_links)
    findings = [*unheld, *findings]
    for note in [*(read.notes if read else []), *(link.notes if link else [])]:
        print(f"note: {note}")
    _show(findings)
    acted = act(findings, run, state_dir, node, boot, gate=start_gate, owned=owned)
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
                      metrics.counted(state_dir, [f.drain.code for f in xids]), link.values if link else {})
    if read is not None and read.cursors != saved:
        statedir.save(state_dir, "xid-cursors.json", json.dumps(read.cursors, sort_keys=True) + "\n")
    # Like the cursor: the rises are held once acted on; a check that could not act sees them again.
    if link is not None and link.state != saved_links:
        links.save(state_dir, link.state)
    # When the check last ran to its end, and what it found: for an admin, and for a test that waits for slurmd.
    statedir.save(state_dir, "last-check", f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {decision.action} "
                                   f"{len(findings)} finding(s)\n" + "".join(f"{f.action}: {f.reason}\n"
                                                                            for f in findings))
    if asks and decision.asked is not None:
        # Last: it waits for this check's lock, held until this process ends. Started again by every periodic check
        # that finds the reason still asking (asked_reset says why that converges).
        start_asked_reset()
        print(f"reset of {decision.asked.gpu} {decision.asked.bus} asked by the repair loop: performed in the "
              "background, then a check")
    return 1 if draining([*findings, *faults]) else 0


ASKED_RESET = "asked-reset"


def start_gate(owned: str | None = None) -> None:
    """The reboot gate, in the background: slurmd waits for the check's output to end, and would kill it at 60 s.
    ``owned``: the repair loop's reboot reason the node is drained with, the gate's check's own (gate)."""
    _background("gate", *([owned] if owned is not None else []))


def start_asked_reset() -> None:
    """The reset the repair loop asked (asked_reset), in the background: evidence and reset take minutes."""
    _background(ASKED_RESET)


def _background(mode: str, *args: str) -> None:
    """This program in ``mode``, in a session of its own (slurmd kills its check's process group at 60 s), its
    output to nowhere (slurmd waits for the check's to end)."""
    # The directory (or zip) the program's top package is in: one level up from this file per level of its name
    # (clusterforge_health.health on a node, in clusterforge's layout).
    program = os.path.dirname(os.path.abspath(__file__))
    for _ in __package__.split("."):
        program = os.path.dirname(program)
    # Imported through a descriptor (render/health.py's launchers: /proc/self/fd/N): the gate is given the same one,
    # so it runs this program, whatever the deploy has renamed over its file since.
    passed = (int(program.rsplit("/", 1)[1]),) if program.startswith("/proc/self/fd/") else ()
    code = (f"import sys; sys.path.insert(0, {program!r}); "
            f"from {__package__}.program import main; sys.exit(main({[mode, *args]!r}))")
    subprocess.Popen([sys.executable, "-I", "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True, pass_fds=passed)


GATE_POLL_S = 2.0


def gate(expect: Expectations, run: Run, state_dir: str, node: str, owned: str | None = None) -> int:
    """After a reboot through Slurm (`scontrol reboot ASAP nextstate=resume`) the check at slurmd's start found
    the node sick; slurmd registers it next, which lifts every drain and puts it back in service. Wait for that,
    then check again: still sick, drained with the finding; healthy meanwhile, left in service.

    ``owned``: the node was drained, at the check at slurmd's start, with the repair loop's reboot reason
    (``cf:repair:reboot ...``): the loop asks no next state, so the registration keeps the drain and whatever reason
    it has then. The check after it owns that exact reason (decide.py): lifted where the node is healthy (with
    admission, the node is held for the gate first: repaired.py, at the top of every check), drained over with the
    finding where not. A reason set over it meanwhile (an admin's) is another's, and stays."""
    deadline = time.monotonic() + expect.reboot_wait_s
    while time.monotonic() < deadline:
        shown = scontrol(run, show_argv(node))
        if shown.rc == 0 and not parse_node(shown.out).rebooting:
            return check(expect, run, state_dir, node, owned=owned)
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


def report(expect: Expectations, run: Run, state_dir: str, node: str) -> int:
    """The findings, and the hardware faults held in this boot (``"held": true``), as JSON; changes nothing. A reset
    the node's reason asks (asked_reset) is a note."""
    boot = boot_id(expect)
    findings, read, _, link = findings_of(expect, run, _cursors(state_dir), boot, links.load(state_dir))
    held = held_faults.not_among(held_faults.held(state_dir, boot) or [], findings)
    notes = [*(read.notes if read else []), *(link.notes if link else []), *_asked_note(run, node)]
    print(json.dumps({"node": expect.node, "notes": notes,
                      "findings": [{"action": f.action, "reason": f.reason, "sticky": f.sticky, "held": f in held}
                                   for f in [*findings, *held]]},
                     sort_keys=True))
    return 1 if any(f.action == "drain" for f in [*findings, *held]) else 0


def _asked_note(run: Run, node: str) -> list[str]:
    shown = scontrol(run, show_argv(node))
    try:
        state = parse_node(shown.out) if shown.rc == 0 else None
    except ParseError:
        state = None
    asked = reset_asked(state.reason) if state is not None and state.drained else None
    if asked is None:
        return []
    return [(f"the repair loop asks a reset of {asked.gpu} {asked.bus} ({state.reason}): the next check performs it "
             "where nothing else holds the node")]


def _stop(signum: int, frame: object) -> None:
    """Past the bound, or told to stop by slurmd: every probe still running goes, and the check fails."""
    commands.kill_all()
    print(f"check stopped ({signal.Signals(signum).name}) before it finished")
    sys.stdout.flush()
    os._exit(1)


def reset(expect: Expectations, run: Run, state_dir: str, node: str, target: str) -> int:
    """``clusterforge-health reset gpuN|BUS``, by an admin: NVIDIA's reset of one GPU (``nvidia-smi -r``, which
    refuses while a process uses it), then the end of the faults of that GPU that a reset ends (xid.py's "reset"
    class), then a check, which lifts the drain where nothing else holds it. A reset run by hand is not seen by the
    check: only a reboot ends those faults then. Before the reset, where the GPU holds a hardware fault, the node
    keeps the evidence the reset wipes (evidence.py). The reset itself is resets.py's, shared with asked_reset."""
    if not _locked(state_dir):
        print(f"a check has been running for over {LOCK_WAIT_S} s: nothing reset")
        return 1
    done = resets.reset_gpu(expect, run, state_dir, node, target)
    if done.rc != 0:
        return done.rc
    return check(expect, run, state_dir, node, locked=True)


def asked_reset(expect: Expectations, run: Run, state_dir: str, node: str) -> int:
    """The reset the repair loop asked through the node's reason (``cf:repair:reset gpu3 0000:5d:00 ...``,
    slurm/repairs.py), started by the periodic check that found it (check), in the background: the evidence and
    the reset take minutes, slurmd kills its check at 60 s. Once that check has ended (its lock), the node is read
    again; where its reason still asks and nothing else holds it, the GPU named by the reason's bus (its name must
    agree) is reset as ``reset`` does (resets.py). Then:

    - reset, and the profile has admission: the node is held in the gate's ``cf-gate-repaired-<node>`` before any
      drain is lifted, so no user's job lands between the reset and the gate's tests; then a check, which lifts the
      loop's drain (its own this once: decide.py's ``owned``) where the node is healthy, or drains over it with its
      own reason. A hold not made leaves the loop's drain as it is: the next check asks again.
    - not reset (nvidia-smi refuses while a process uses the GPU, the GPU is not listed, its bus and name disagree):
      the node's reason says so (``cf:repair:reset-failed ...``), where it is still the one that asked; the loop
      takes its next step. The drain is never lifted then.

    Killed anywhere, or not started at all, the node's reason still asks until the step that answers it (the lift,
    the check's own drain, the relabel: each one scontrol call), so the next periodic check starts this again and it
    converges: a second ``nvidia-smi -r`` of a GPU already reset and idle is harmless, its faults are released once
    (the evidence kept only while the GPU still holds one), and the hold that exists already is taken as made."""
    if not _locked(state_dir):
        print(f"a check has been running for over {LOCK_WAIT_S} s: the reset asked waits for the next check")
        return 1
    found = resets.asking(run, node)
    if found is None:
        print(f"no reset asked of {node} now: nothing done")
        return 0
    state, asked = found
    print(f"reset of {asked.gpu} {asked.bus} asked: {state.reason}")
    done = resets.reset_gpu(expect, run, state_dir, node, asked.bus, name=asked.gpu)
    if done.rc != 0:
        resets.fail(run, node, state.reason, asked, done.why)
        check(expect, run, state_dir, node, locked=True, asks=False)
        return 1
    owned: str | None = state.reason
    if expect.admission:
        name = reservations.name(reservations.REPAIRED, node)
        answer = scontrol(run, reservations.create_argv(name, node))
        if repaired.created(answer):
            print(f"held {node} in {name} until it passes its acceptance: back from the reset of {asked.bus}")
        else:
            print(f"could not hold {node} for the admission gate: scontrol {answer.why}; its drain stays, "
                  "the next check asks the reset again")
            owned = None
    return check(expect, run, state_dir, node, locked=True, owned=owned, asks=False)


MODES = ("check", "report", "prolog", "epilog", "gate", "reset", "reboot", ASKED_RESET)
HIDDEN = ("reset", "reboot", ASKED_RESET)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    mode = args[0] if args else "check"
    # reset takes its GPU; reboot whatever slurmd passes on to the RebootProgram (a node's new features).
    # gate takes the loop's reboot reason it owns, where the check that started it found one.
    fits = len(args) == 2 if mode == "reset" else mode == "reboot" or len(args) <= (2 if mode == "gate" else 1)
    if mode not in MODES or not fits:
        print(f"usage: clusterforge-health [{'|'.join(m for m in MODES if m not in HIDDEN)}] | "
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
    reset_s = resets.RESET_TIMEOUT_S + evidence.BOUND_S
    signal.alarm(BOUND_S + {"gate": expect.reboot_wait_s, "reset": reset_s, ASKED_RESET: reset_s}.get(mode, 0))
    node = os.environ.get("SLURMD_NODENAME", expect.node)
    if mode == "report":
        return report(expect, commands.run, state_dir, node)
    if mode == "gate":
        return gate(expect, commands.run, state_dir, node, args[1] if len(args) > 1 else None)
    if mode == "reset":
        return reset(expect, commands.run, state_dir, node, args[1])
    if mode == ASKED_RESET:
        return asked_reset(expect, commands.run, state_dir, node)
    if mode in ("prolog", "epilog"):
        return job_boundary(mode, expect, commands.run, state_dir, node, os.environ.get("SLURM_JOB_ID"),
                            job_gpus(os.environ.get("SLURM_JOB_GPUS")))
    return check(expect, commands.run, state_dir, node)
