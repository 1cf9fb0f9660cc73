"""Shell commands that wait, bounded, until a daemon answers; a timeout fails the operation with the reason.

The bound is wall time, not a count of tries: each try of the check is itself killed after ``CHECK_TIMEOUT_S``
(a check that talks to a daemon, such as ``scontrol ping``, can hang), and the loop stops at its deadline.
"""

from __future__ import annotations

import shlex

TIMEOUT_S = 90
CHECK_TIMEOUT_S = 10
POLL_S = 0.2
TRIES_PER_S = 5


class Shown(str):
    """A command that also says, shortly, what it does: `clusterforge plan` shows that, not the loop around it."""

    text: str


def shown(command: str, text: str) -> Shown:
    found = Shown(command)
    found.text = text
    return found


def until(check: str, what: str, timeout_s: int = TIMEOUT_S, hint: str = "") -> Shown:
    """A command that retries ``check`` every ``POLL_S`` and fails after ``timeout_s`` saying ``what`` did not
    happen, and ``hint`` where there is one. (Most waits are for a daemon just started, ready within a second or two:
    a finer poll spares the rest of a whole second each, and every host waits for the slowest.)"""
    message = shlex.quote(f"timed out after {timeout_s} s waiting until {what} (the check: {check})"
                          + (f": {hint}" if hint else ""))
    per_try = min(CHECK_TIMEOUT_S, timeout_s)
    return shown(f"for _ in $(seq {timeout_s * TRIES_PER_S}); do "
                 f"[ -n \"${{cf_deadline:-}}\" ] || cf_deadline=$(( $(date +%s) + {timeout_s} )); "
                 f"timeout -k 2 {per_try} sh -c {shlex.quote(check)} >/dev/null 2>&1 && exit 0; "
                 f"[ \"$(date +%s)\" -lt \"$cf_deadline\" ] || break; sleep {POLL_S}; done; "
                 f"echo {message} >&2; exit 1", f"wait until {what}")


def bounded(command: str, timeout_s: int, name: str) -> Shown:
    """``command`` killed after ``timeout_s`` seconds; then the shell exits non-zero saying ``name`` timed out."""
    message = shlex.quote(f"{name} timed out after {timeout_s} s")
    return shown(f"timeout -k 10 {timeout_s} {command}; rc=$?; "
                 f"if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo {message} >&2; fi; [ $rc -eq 0 ] || exit $rc",
                 f"run: {command} (at most {timeout_s} s)")
