"""Slurm's commands for one scrape, each bounded, all at once: a scrape lasts as long as its slowest command, never
longer than the timeout (and the moment it takes to kill what overran it)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

TIMED_OUT = 124  # as timeout(1) says it
NOT_FOUND = 127  # as the shell says it


@dataclass(frozen=True, slots=True)
class Result:
    rc: int
    out: str
    err: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.rc == 0

    @property
    def why(self) -> str:
        if self.rc == TIMED_OUT:
            return self.err
        text = (self.err.strip() or self.out.strip()).splitlines()
        return f"exit {self.rc}: {text[-1][:200] if text else 'no output'}"


def run(argv: Sequence[str], timeout: float) -> Result:
    """``argv`` in a session of its own, killed with everything it started once ``timeout`` has passed: a slurmctld
    that does not answer costs a scrape the timeout, not a hung scrape."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
    except OSError as error:
        return Result(NOT_FOUND, "", f"{argv[0]}: {error.strerror}", time.monotonic() - start)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        return Result(TIMED_OUT, "", f"gave no answer in {timeout:g} s", time.monotonic() - start)
    return Result(proc.returncode, out, err, time.monotonic() - start)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        proc.communicate(timeout=1)
    except subprocess.TimeoutExpired:
        # Something that left the session still holds the pipes: leave it to them, the command itself is gone.
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()


def run_all(commands: Mapping[str, Sequence[str]], timeout: float) -> dict[str, Result]:
    """Each named command run at the same time, each under ``timeout``; their results by name."""
    with ThreadPoolExecutor(max_workers=len(commands)) as pool:
        futures = {name: pool.submit(run, argv, timeout) for name, argv in commands.items()}
        return {name: future.result() for name, future in futures.items()}
