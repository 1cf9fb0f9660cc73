"""Shell commands that wait, bounded, until a daemon answers; a timeout fails the operation with the reason."""

from __future__ import annotations

import shlex

TIMEOUT_S = 90


def until(check: str, what: str, timeout_s: int = TIMEOUT_S) -> str:
    """A command that retries ``check`` every second and fails after ``timeout_s`` saying ``what`` did not happen."""
    message = shlex.quote(f"gave up after {timeout_s} s waiting until {what}")
    return (f"for _ in $(seq {timeout_s}); do {check} >/dev/null 2>&1 && exit 0; sleep 1; done; "
            f"echo {message} >&2; exit 1")
