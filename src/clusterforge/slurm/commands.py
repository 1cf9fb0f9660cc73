"""A command run bounded, and what it answered: the one runner of the node health program and of the Slurm exporter
(which ships this module with drains.py and parse.py), and the answer `clusterforge check` and `clusterforge roll`
read their remote commands into.

Every wait here has a bound. A command runs in a session of its own and is killed with everything it started once
its timeout has passed; after the kill, its pipes and its exit are waited for at most ``KILL_WAIT_S`` each, because
a process in uninterruptible sleep (nvidia-smi on a wedged GPU, a command stuck on a dead NFS mount) does not die of
SIGKILL until the kernel lets it, and a child that left the session may hold the pipes open for as long as it runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

TIMED_OUT = 124  # as timeout(1) says it
NOT_FOUND = 127  # as the shell says it
KILL_WAIT_S = 1.0


def bound_s(text: str) -> float:
    """A bound or interval in seconds given on a program's command line (argparse's ``type``): a number above 0.
    The Slurm exporter's --timeout and the gate's --interval both take one."""
    try:
        value = float(text)
    except ValueError:
        value = 0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"not a number of seconds above 0: {text!r}")
    return value


# slurm_errno.c's words for a message that never reached slurmctld, or got no answer: the communication errors, a
# controller in standby, a rate limit. After them a command says nothing of what it asked: it may be asked again.
UNREACHED = ("Unable to contact slurm controller", "Communication connection failure", "Message send failure",
             "Message receive failure", "Communication shutdown failure", "Socket timed out on send/recv operation",
             "Zero Bytes were transmitted or received", "Rate limit exceeded",
             "Slurm backup controller in standby mode", "Controller is in standby mode",
             "Can't find an address, check slurm.conf")


def refused_after(said: str, words: str) -> str | None:
    """slurmctld's reason after ``words``, the words a command puts before a refusal (sbatch's "Batch job submission
    failed:", scontrol's "Error creating the reservation"): "" where it gave none. None where they are not there,
    or where what follows them says slurmctld was never reached (UNREACHED): the commands print both alike."""
    for line in said.splitlines():
        _, found, reason = line.partition(words)
        if found:
            reason = reason.lstrip(": ").strip()
            return None if reason.startswith(UNREACHED) else reason
    return None


@dataclass(frozen=True, slots=True)
class Answer:
    rc: int
    out: str
    err: str
    seconds: float = 0.0  # how long it ran (the exporter's slurm_exporter_command_seconds)

    @property
    def ok(self) -> bool:
        return self.rc == 0

    @property
    def why(self) -> str:
        """Why it failed, in one line. The words of a timeout do not name the bound: a drain reason is made of them,
        and the node's reason must read the same on every run for the check to see it is its own."""
        if self.rc == TIMED_OUT:
            return "gave no answer in time"
        text = (self.err.strip() or self.out.strip()).splitlines()
        return f"exit {self.rc}: {text[-1][:120] if text else 'no output'}"


Run = Callable[[Sequence[str], float], Answer]


def said(argv: Sequence[str]) -> str:
    """A command as a message names it: its words without its options (``scontrol show node gpu01``)."""
    return " ".join(word for word in argv if not word.startswith("-"))

# The sessions of the commands running now, for kill_all. A set's add, discard and copy are each atomic under the
# GIL, so commands run from several threads at once (the health check's probes, the gate's steps) keep it whole: no
# lock, because kill_all runs in a signal handler, which must never wait for a lock its own thread may hold. A command
# another thread starts while kill_all runs may be added just after its copy: a caller whose threads run commands
# calls it again until they have returned (gate/passes.py, Gate._stop).
_running: set[int] = set()


def run(argv: Sequence[str], timeout: float) -> Answer:
    """``argv`` with no input, in a session of its own, killed with everything it started once ``timeout`` has
    passed (124: a hung nvidia-smi is a finding, a slurmctld that does not answer costs a scrape the timeout). A
    command that is not there exits 127."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
    except OSError as error:
        return Answer(NOT_FOUND, "", f"{argv[0]}: {error.strerror}", time.monotonic() - start)
    _running.add(proc.pid)
    try:
        out, err = proc.communicate(timeout=timeout)
        return Answer(proc.returncode, out, err, time.monotonic() - start)
    except subprocess.TimeoutExpired:
        _kill(proc)
        return Answer(TIMED_OUT, "", "", time.monotonic() - start)
    finally:
        _running.discard(proc.pid)


def _kill_session(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _kill(proc: subprocess.Popen) -> None:
    _kill_session(proc.pid)
    try:
        proc.communicate(timeout=KILL_WAIT_S)
        return
    except subprocess.TimeoutExpired:
        pass
    # The pipes are still open (a child that left the session), or the command has not died yet: stop reading, and
    # give its exit one more bound. Not reaped then, it is reaped by the next Popen, or by init once we exit.
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    try:
        proc.wait(timeout=KILL_WAIT_S)
    except subprocess.TimeoutExpired:
        pass


def kill_all() -> None:
    """Every command still running killed, with everything it started: the caller is about to exit."""
    for pid in set(_running):
        _kill_session(pid)
