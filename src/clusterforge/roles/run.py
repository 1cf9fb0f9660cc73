"""The deploy run as a whole: what is worked out once per run however many hosts ask, and what the run tells the
admin at its end: that it was interrupted (exit 130, not pyinfra's 0 after Ctrl-C), and which hosts failed or could
not be reached, named again after all the output that followed their first error."""

from __future__ import annotations

import atexit
import signal
import sys
from collections.abc import Callable, Hashable
from typing import TypeVar

from gevent.lock import RLock
from pyinfra.context import ctx_state

T = TypeVar("T")
# (id of the run, key) -> (the run, kept alive so its id is not reused while the entry lives; the value)
_ONCE: dict[tuple[int, Hashable], tuple[object, object]] = {}
_LOCKS: dict[tuple[int, Hashable], RLock] = {}


def once_per_run(key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``'s value, computed by the first host of this pyinfra run to ask; the others, whose deploy code
    runs at the same time in other greenlets, wait for it. A failure is not kept: the next to ask tries again."""
    run = ctx_state.get()
    slot = (id(run), key)
    found = _ONCE.get(slot)
    if found is not None:  # asked for on every step of every host: no lock once it is known
        return found[1]  # type: ignore[return-value]
    with _LOCKS.setdefault(slot, RLock()):
        if slot not in _ONCE:
            _ONCE[slot] = (run, compute())
    return _ONCE[slot][1]  # type: ignore[return-value]


def known(key: Hashable, default: T) -> T:
    """What ``once_per_run`` computed for ``key`` in this run, or ``default`` if nothing asked for it yet."""
    found = _ONCE.get((id(ctx_state.get()), key))
    return found[1] if found is not None else default  # type: ignore[return-value]

def host_of(run: object, machine: str) -> object | None:
    """The pyinfra host of this run that is the inventory's ``machine`` (pyinfra may name it otherwise), or None."""
    return next((h for h in run.inventory.get_active_hosts()  # type: ignore[attr-defined]
                 if h.data.clusterforge_machine.name == machine), None)


_GUARDED: list[object] = []


def _interrupted(signum: int, frame: object) -> None:
    print("\nInterrupted. What changed so far stays changed; every restart or reconfigure it owes is still owed and "
          "the next run makes it: run the deploy again.", file=sys.stderr)
    sys.exit(130)


def _failed_hosts(run: object) -> None:
    failed = sorted(h.name for h in getattr(run, "failed_hosts", ()) or ())
    if failed:
        print(f"\nThese hosts failed or could not be reached, and were left as they were from that point: "
              f"{', '.join(failed)}. Run the deploy again once they are fixed; nothing they owe is lost.",
              file=sys.stderr)


def guard_the_run() -> None:
    """Once per pyinfra run: Ctrl-C exits 130, and the failed hosts are named at the end."""
    run = ctx_state.get()
    if "pyinfra_cli" not in sys.modules or run is None or any(r is run for r in _GUARDED):
        return
    _GUARDED.append(run)
    signal.signal(signal.SIGINT, _interrupted)
    atexit.register(_failed_hosts, run)
