"""A run with nothing to do creates no operation at all.

pyinfra spends a few milliseconds preparing each operation on each host (it reads the call stack to order it), even
one that does nothing, and the steps hosts must pass together exist on every host only to order them. So before the
run creates any operation, ``converge`` rehearses the deploy's steps on every host of the run: each step decides
from the host states (read once, before anything changes) whether it would act, exactly as it does for real, and
creates nothing. When no step would act on any host, the run is quiet and the shared steps are left out too: with
nothing to do there is nothing to order.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import ParamSpec

from pyinfra.api import deploy
from pyinfra.context import ctx_host, ctx_state

from . import planning
from .run import known, once_per_run

P = ParamSpec("P")

# Module state, not per host: the rehearsal runs in one host's deploy code while every other host's waits for it
# (once_per_run), before any of them has created an operation.
_rehearsing = False
_acts = False
_step = ""  # the step being rehearsed: pyinfra names its operations "step | operation"


def converge(steps: Callable[[], None]) -> None:
    """Rehearse ``steps`` on every host of the run, once per run, then run them for this host unless the run is
    quiet (they would create nothing)."""
    if planning.planning():  # `clusterforge plan`: write down what the steps would do, and do none of it
        once_per_run("plan", lambda: _plan(steps))
        return
    if not once_per_run("quiet", lambda: _rehearse(steps)):
        steps()


def _plan(steps: Callable[[], None]) -> None:
    _rehearse(steps)
    run = ctx_state.get()
    planning.RECORDER.write([h.data.clusterforge_machine.name for h in run.inventory.get_active_hosts()],
                            [h.data.clusterforge_machine.name for h in run.failed_hosts])


def step(name: str) -> Callable[[Callable[P, None]], Callable[P, None]]:
    """A deploy step: pyinfra's ``@deploy(name)`` (its operations are named "name | ..."), called directly while
    rehearsing, where pyinfra's wrapper would only cost time (it resolves its global arguments on every call)."""

    def decorate(function: Callable[P, None]) -> Callable[P, None]:
        wrapped = deploy(name)(function)

        @wraps(function)
        def run(*args: P.args, **kwargs: P.kwargs) -> None:
            global _step
            if _rehearsing:
                outer, _step = _step, name
                try:
                    function(*args, **kwargs)
                finally:
                    _step = outer
            else:
                wrapped(*args, **kwargs)

        return run

    return decorate


def _rehearse(steps: Callable[[], None]) -> bool:
    global _rehearsing, _acts
    _rehearsing, _acts = True, False
    try:
        for each in ctx_state.get().inventory.get_active_hosts():
            with ctx_host.use(each):
                steps()
        return not _acts
    finally:
        _rehearsing = False


def rehearsing() -> bool:
    return _rehearsing


def label(operation: str) -> str:
    """The name pyinfra gives an operation of the step being rehearsed."""
    return f"{_step} | {operation}" if _step else operation


def note(acts: bool) -> None:
    """During the rehearsal: a step would act on the host rehearsed."""
    global _acts
    _acts = _acts or acts


def quiet() -> bool:
    """Whether the rehearsal found nothing to do on any host (False where the steps were not rehearsed)."""
    return bool(known("quiet", False))
