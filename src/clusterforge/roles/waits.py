"""Shell commands that wait, bounded, until a daemon answers; a timeout fails the operation with the reason.

The bound is wall time, not a count of tries: each try of the check is itself killed after ``CHECK_TIMEOUT_S``
(a check that talks to a daemon, such as ``scontrol ping``, can hang), and the loop stops at its deadline.
"""

from __future__ import annotations

import shlex

TIMEOUT_S = 90
CHECK_TIMEOUT_S = 10


class Wait(str):
    """A waiting command, which also says what it waits for (`clusterforge plan` shows that, not the loop)."""

    what: str


def until(check: str, what: str, timeout_s: int = TIMEOUT_S) -> Wait:
    """A command that retries ``check`` every second and fails after ``timeout_s`` saying ``what`` did not happen."""
    message = shlex.quote(f"timed out after {timeout_s} s waiting until {what} (the check: {check})")
    per_try = min(CHECK_TIMEOUT_S, timeout_s)
    command = Wait(f"for _ in $(seq {timeout_s}); do "
                   f"[ -n \"${{cf_deadline:-}}\" ] || cf_deadline=$(( $(date +%s) + {timeout_s} )); "
                   f"timeout -k 2 {per_try} sh -c {shlex.quote(check)} >/dev/null 2>&1 && exit 0; "
                   "[ \"$(date +%s)\" -lt \"$cf_deadline\" ] || break; sleep 1; done; "
                   f"echo {message} >&2; exit 1")
    command.what = what
    return command
