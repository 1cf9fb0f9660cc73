"""One deploy run, and one host of it as the deploy's steps see it.

pyinfra executes the deploy file once per host, each in its own greenlet, all at once. What the run works out once
however many hosts ask (every host's state, the Slurm change, a build, a secret) lives in one ``DeployRun``, kept on
pyinfra's own state object for that run: the first host to ask makes it, the others find it. A step gets a ``Here``:
the run, this host (its machine, its state read before the run), and where its decisions go, which is the rehearsal
or pyinfra (engine/converge.py); it is passed to every step and every operation, never looked up.

The run also tells the admin at its end what happened: that it was interrupted (exit 130, not pyinfra's 0 after
Ctrl-C), and which hosts failed or could not be reached, named again after all the output that followed their first
error.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from gevent.lock import RLock
from pyinfra.api import Host as RemoteHost  # a step's name for pyinfra's host, which it reaches through here
from pyinfra.context import ctx_state

from ..errors import ClusterforgeError, for_pyinfra
from ..model import Machine, ValidCluster
from ..secrets import ClusterSecrets
from . import events
from .change import Call, Change
from .planning import PLAN_FILE, Recorder
from .profile import PROFILE_FILE, record
from .footprint import Footprint, FootprintOf, union
from .state import State, read_states

if TYPE_CHECKING:
    from pyinfra.api import Host as PyinfraHost
    from pyinfra.api import State as PyinfraState

T = TypeVar("T")
P = ParamSpec("P")
_ON_STATE = "clusterforge_run"  # the attribute of pyinfra's state object that holds its DeployRun


class DeployRun:
    """What one pyinfra run of the deploy shares across its hosts (see the module's docstring)."""

    def __init__(self, state: PyinfraState, valid: ValidCluster, steps: Sequence[Step] = ()) -> None:
        self.pyinfra = state  # pyinfra's State of this run (a host's own state is Here.state)
        self.valid = valid
        self.steps = tuple(steps)
        plan = os.environ.get(PLAN_FILE)
        # `clusterforge plan`: the run writes down what it would do (engine/planning.py) and creates no operation.
        self.recorder = Recorder(plan) if plan else None
        self._values: dict[Hashable, object] = {}
        self._locks: dict[Hashable, RLock] = {}
        self.not_done: list[str] = []  # accounting changes slurmdbd refused, with its reasons
        # Hosts whose only failure is the refusal reported at the end of their run (accounting.refusals): not broken.
        self.refused_on: set[str] = set()
        self.deletions_asked = False  # the accounts step asks slurmdbd for deletions in this run
        if "pyinfra_cli" in sys.modules:
            signal.signal(signal.SIGINT, _interrupted)
            atexit.register(self._at_the_end)
            if (profile := os.environ.get(PROFILE_FILE)) and not plan:
                record(state, profile)

    @classmethod
    def current(cls, steps: Sequence[Step] = ()) -> DeployRun:
        """The run of the pyinfra state in use, made by the first host that asks: the deploy's ``steps``, in order."""
        state = ctx_state.get()
        found = cls.of(state)
        if found is None:  # no greenlet switch between the look and the set: one object per run
            from pyinfra import host

            found = cls(state, host.data.clusterforge, steps)
            setattr(state, _ON_STATE, found)
        return found

    @staticmethod
    def of(state: PyinfraState) -> DeployRun | None:
        """The run that pyinfra's ``state`` runs, once a host has made it."""
        return getattr(state, _ON_STATE, None)

    def once(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``'s value, computed by the first host of the run to ask; the others, whose deploy code runs at
        the same time in other greenlets, wait for it. A failure is not kept: the next to ask tries again."""
        if key in self._values:  # asked for on every step of every host: no lock once it is known
            return self._values[key]  # type: ignore[return-value]
        with self._locks.setdefault(key, RLock()):
            if key not in self._values:
                self._values[key] = compute()
        return self._values[key]  # type: ignore[return-value]

    @property
    def hosts(self) -> list[PyinfraHost]:
        """The hosts of the run that have not failed, in the inventory's order: pyinfra keeps them in a set, whose
        order changes from run to run, and what is decided from all of them (the reasons of a restart) must not."""
        active = self.pyinfra.active_hosts
        return [h for h in self.pyinfra.inventory if h in active]

    def host_of(self, machine: str) -> PyinfraHost | None:
        """The pyinfra host of this run that is the inventory's ``machine`` (pyinfra may name it otherwise), unless
        it is not in the run or has failed."""
        found = self._by_machine.get(machine)
        return found if found in self.pyinfra.active_hosts else None

    @property
    def _by_machine(self) -> dict[str, PyinfraHost]:
        """Every host of the inventory by its machine's name, in the inventory's order; asked for by every host, so
        made once."""
        return self.once("hosts by machine", lambda: {h.data.clusterforge_machine.name: h
                                                       for h in self.pyinfra.inventory})

    def refuse_unlisted_machines(self) -> None:
        """Every machine of the cluster must be a host of the inventory: pyinfra knows only the groups an inventory
        file binds, and a machine in none of them would never be deployed to, silently."""
        def missing() -> list[str]:
            return [m.name for m in self.valid.machines if m.name not in self._by_machine]
        unlisted = self.once("unlisted machines", missing)
        if unlisted:
            groups = sorted({g for m in self.valid.machines if m.name in unlisted for g in m.groups})
            lines = "; ".join(f'{g} = host_group(cluster, "{g}", ...)' for g in groups)
            raise for_pyinfra(ClusterforgeError(
                f"{', '.join(unlisted)}: not a host of this inventory file, which binds no group holding it; add "
                f"{lines} (clusterforge.inventory). Nothing was changed on any host"))

    @property
    def states(self) -> dict[str, State]:
        """Every host's state as it was before the run, by the name the inventory gives it."""
        return self.once("host states by name", lambda: {
            host.data.clusterforge_machine.name: found for host, found in self._states_by_host.items()})

    @property
    def _states_by_host(self) -> dict[PyinfraHost, State]:
        """Read once, for all hosts of the run in parallel, the first time any host asks."""
        return self.once("host states", lambda: read_states(self.pyinfra, self.hosts, self.footprint,
                                                             self.recorder is not None))

    def footprint(self, groups: tuple[str, ...]) -> Footprint:
        """What the deploy's steps manage on a host in ``groups``: the union of their footprints."""
        def declared() -> Footprint:
            of = dict.fromkeys(s.footprint for s in self.steps if s.footprint is not None)
            return union(each(self.valid, groups) for each in of)
        return self.once(("footprint", groups), declared)

    @property
    def drain_wait(self) -> int:
        """``--data drain_wait=SECONDS``: how long the drains before a run's changes wait for the jobs there to end
        (0, the default: look once)."""
        def given() -> int:
            from pyinfra import host

            raw = host.data.get("drain_wait", 0) or 0
            seconds = int(raw) if isinstance(raw, int) or (isinstance(raw, str) and raw.isdigit()) else -1
            if seconds < 0:
                raise for_pyinfra(ClusterforgeError(f"--data drain_wait={raw}: give a whole number of seconds (0 "
                                                    "looks once). Nothing was changed on any host"))
            return seconds
        return self.once("drain wait", given)

    @property
    def secrets(self) -> ClusterSecrets:
        """The cluster's secrets, each read from Vault once for the whole run."""
        return self.once("secrets", self._secrets)

    def _secrets(self) -> ClusterSecrets:
        try:
            return ClusterSecrets(self.valid)
        except ClusterforgeError as error:  # no Vault in the inventory: the explanation, without a traceback
            raise for_pyinfra(error) from None

    @property
    def partial(self) -> bool:
        """The run is limited to some hosts (--limit/--exclude)."""
        limit = getattr(self.pyinfra, "limit_hosts", None)
        return isinstance(limit, list) and len(limit) < len(list(self.pyinfra.inventory))

    def _at_the_end(self) -> None:
        """Named again after all the output that followed their first error: the hosts that failed, and what the
        accounting database still lacks."""
        failed = sorted(h.name for h in getattr(self.pyinfra, "failed_hosts", ()) or () if h.name not in self.refused_on)
        if failed:
            print(f"\nThese hosts failed or could not be reached, and were left as they were from that point: "
                  f"{', '.join(failed)}. Run the deploy again once they are fixed; nothing they owe is lost.",
                  file=sys.stderr)
        if self.not_done:
            print(f"\nThe accounting database is not yet as the inventory says; slurmdbd refused: "
                  f"{'; '.join(self.not_done)}.", file=sys.stderr)

    def here(self, host: PyinfraHost, sink: Callable[[Here, Change], None]) -> Here:
        return Here(self, host, host.data.clusterforge_machine, self._states_by_host[host], sink)


@dataclass(frozen=True, slots=True)
class Here:
    """One host of the run, as a step sees it: ``state`` is the host's state read before the run; ``apply`` hands a
    decided Change on (to the rehearsal, or to pyinfra); ``step`` names the step running."""

    run: DeployRun
    host: PyinfraHost
    machine: Machine
    state: State
    sink: Callable[[Here, Change], None]
    step: str = ""

    @property
    def valid(self) -> ValidCluster:
        return self.run.valid

    @property
    def name(self) -> str:
        """pyinfra's name of the host, as its messages say it."""
        return self.host.name

    @property
    def groups(self) -> set[str]:
        return set(self.machine.groups)

    @property
    def footprint(self) -> Footprint:
        """What the deploy's steps manage on this host."""
        return self.run.footprint(self.machine.groups)

    def label(self, operation: str) -> str:
        """The operation's name as pyinfra shows it: "step | operation"."""
        return f"{self.step} | {operation}" if self.step else operation

    def apply(self, change: Change) -> Change:
        self.sink(self, change)
        return change

    def warn_once(self, message: str) -> None:
        """A warning the run prints once, however many times the steps run; a plan shows it too (by the
        inventory's name of the host)."""
        from pyinfra import logger

        def warn() -> None:
            logger.warning(f"{self.name}: {message}")
            events.emit("note", host=self.machine.name, text=message)
            if self.run.recorder is not None:
                self.run.recorder.notes.append(f"{self.machine.name}: {message}")

        self.run.once(("warning", self.machine.name, message), warn)


def call(function: Callable[Concatenate[Here, P], None], *args: P.args, **kwargs: P.kwargs) -> Call:
    """An operation's command that runs ``function`` on the host when the operation runs, given the host as a step
    sees it (its ``state`` is still the one read before the run; it creates no operation), then ``args`` and
    ``kwargs``, checked against the function's parameters."""
    return Call(function, args, kwargs)


@dataclass(frozen=True, slots=True)
class Step:
    """A deploy step: its operations are named "name | operation", as pyinfra names a ``@deploy``'s. ``on``: the
    groups whose hosts run it (any of them; "slurm": a host that runs or talks to Slurm), every host where None.
    ``footprint``: what it manages (engine/footprint.py)."""

    name: str
    function: Callable[[Here], None]
    footprint: FootprintOf | None = None
    on: frozenset[str] | None = None

    def __call__(self, here: Here) -> None:
        if self.on is None or self.on & here.groups or ("slurm" in self.on and here.machine.runs_slurm):
            self.function(replace(here, step=self.name))


def steps_of(order: Callable[[Here], None]) -> tuple[Step, ...]:
    """The steps the deploy's ``order`` calls, in the order it names them. pyinfra orders operations by the lines of
    the deploy code they are called from, so the order is a function that calls each step on a line of its own, not a
    list looped over; the steps it names are read from its code, so that the run's footprint (what the host-state
    read covers) is exactly theirs."""
    scope = order.__globals__
    return tuple(found for name in order.__code__.co_names if isinstance(found := scope.get(name), Step))


def step(name: str, footprint: FootprintOf | None = None, on: Iterable[str] | None = None
         ) -> Callable[[Callable[[Here], None]], Step]:
    """``@step(name, ...)``: the function as a deploy Step."""

    def decorate(function: Callable[[Here], None]) -> Step:
        return Step(name, function, footprint, frozenset(on) if on is not None else None)

    return decorate


def _interrupted(signum: int, frame: object) -> None:
    print("\nInterrupted. What changed so far stays changed; every restart or reconfigure it owes is still owed and "
          "the next run makes it: run the deploy again.", file=sys.stderr)
    sys.exit(130)
