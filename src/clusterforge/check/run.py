"""Running the checks against the machines over the operations' connections (reach/ssh.py), each command and the
whole run bounded by timeouts. First every host is connected to at once, so that any number of hosts that cannot be
reached cost one connection timeout, not one per wave of workers; a host that cannot be reached gives "could not
check" for its checks, and the others are checked, many at a time."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, TimeoutError, wait

from ..model import ValidCluster
from ..words import counted
from ..reach.hosts import Target
from ..reach.ssh import Connections, Unreachable, answers
from ..render.stamp import Stamp
from . import deployed
from . import fabric as fabric_check
from .fabric import FabricSource
from .findings import Outcome, unchecked
from .probes import Context, checks_for, perform

WORKERS = 32  # hosts checked at a time, once connected: each check runs commands of its own
LIMITED_ON_CONTROLLER = ("nodes", "repair", "smoke-hostname", "smoke-gpus")
HOST_DEADLINE = 600  # seconds for all checks of one host (the smoke jobs included)


def munge_credential(valid: ValidCluster, connections: Connections) -> str | None:
    """A credential made on the controller, for every host to decode (munge clusters only): one command, through
    the runner (a session would be an ssh process all the same)."""
    if valid.auth != "munge":
        return None
    try:
        answer = connections.runner(valid.controller.name)("munge -n")
    except Unreachable:
        return None
    return answer.out.strip() if answer.rc == 0 else None


def check_host(target: Target, valid: ValidCluster, connections: Connections, *, smoke: bool,
               credential: str | None, memory_tolerance: float | None, limit: frozenset[str] | None,
               stamps: dict[str, Stamp | None] | None = None) -> list[Outcome]:
    """The checks of a host that answered (``reached``); its deploy stamp goes into ``stamps``."""
    checks = checks_for(target.machine, valid, smoke)
    if limit is not None and target.name not in limit:
        # The controller outside --limit is asked only for Slurm's view of (jobs on, repairs of) the hosts named.
        checks = [c for c in checks if c.name in LIMITED_ON_CONTROLLER]
    outcomes = []
    # One ssh process for all of the host's commands, ended with its checks (so that a thousand hosts do not hold
    # a thousand open): an ssh process a command was most of check's CPU here.
    with connections.session(target.name) as run:
        ctx = Context(valid, target.machine, run, credential, memory_tolerance, limit, stamps)
        for check in checks:
            try:
                outcomes.append(perform(check, ctx))
            except Unreachable as error:
                outcomes.append(unchecked(target.name, check.name, f"connection lost: {error.cause}"))
    return outcomes


def reached(targets: list[Target], connections: Connections) -> dict[str, str | None]:
    """Each host's reason it cannot be reached (None: it runs a command), every host connected to at once: through
    the runner, whose ssh process ends with its command, not a session, which would hold every host's open until
    its checks' turn."""
    if not targets:
        return {}
    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        reasons = {t.name: pool.submit(lambda t: answers(connections.runner(t.name), t.reach), t) for t in targets}
        return {name: future.result() for name, future in reasons.items()}


def check_cluster(valid: ValidCluster, targets: list[Target], *, smoke: bool = False,
                  memory_tolerance: float | None = None, limit: frozenset[str] | None = None,
                  fabric: FabricSource | None = None, say: Callable[[str], None] = lambda line: None) -> list[Outcome]:
    """Every check on every target; outcomes in the inventory's host order, then the deploys across the hosts read
    (on the controller's name, which reports the cluster's views), then with ``fabric`` the live fabric against the
    inventory. With ``limit``, the hosts named, and the controller for Slurm's view of them. ``memory_tolerance``, a
    fraction: None takes the inventory's. ``say`` is told when each phase starts."""
    if limit is not None:
        kept = {valid.controller.name, *([fabric.host] if fabric is not None and fabric.host else [])}
        targets = [t for t in targets if t.name in limit or t.name in kept]
    with Connections(targets) as connections:
        say(f"connecting to {counted(len(targets), 'host')}")
        why = reached(targets, connections)
        answering = [t for t in targets if why[t.name] is None]
        lost = len(targets) - len(answering)
        say(f"checking {counted(len(answering), 'host')}" + (f"; {lost} could not be reached" if lost else ""))
        pool = ThreadPoolExecutor(max_workers=min(WORKERS, max(1, len(answering))) + (fabric is not None))
        try:
            credential = munge_credential(valid, connections) if why.get(valid.controller.name, "") is None else None
            stamps: dict[str, Stamp | None] = {}
            # First, so that a discovery queued behind a thousand hosts' checks does not run into the deadline.
            discovered = (pool.submit(fabric_check.discover, fabric, _fabric_hosts(fabric, answering),
                                      connections.runner, valid.controller.name) if fabric is not None else None)
            futures = {target.name: pool.submit(check_host, target, valid, connections, smoke=smoke,
                                                credential=credential, memory_tolerance=memory_tolerance, limit=limit,
                                                stamps=stamps)
                       for target in answering}
            wait([*futures.values(), *([discovered] if discovered else [])], timeout=HOST_DEADLINE)
            outcomes: list[Outcome] = []
            for target in targets:
                if (reason := why[target.name]) is not None:
                    outcomes.append(unchecked(target.name, "reach", reason))
                    continue
                try:
                    outcomes.extend(futures[target.name].result(timeout=0))
                except TimeoutError:
                    outcomes.append(unchecked(target.name, "reach",
                                              f"its checks took longer than {HOST_DEADLINE} s"))
            if stamps:
                outcomes.append(deployed.outcome(valid, dict(stamps)))
            if discovered is not None:
                try:
                    outcomes.append(discovered.result(timeout=0))
                except TimeoutError:
                    outcomes.append(unchecked(valid.controller.name, fabric_check.CHECK,
                                              f"the fabric's discovery took longer than {HOST_DEADLINE} s"))
            return outcomes
        finally:
            pool.shutdown(wait=False, cancel_futures=True)


def _fabric_hosts(fabric: FabricSource, answering: list[Target]) -> list[str]:
    """Where ibnetdiscover may run: the host --fabric-from names, else the compute nodes, in the inventory's order."""
    if fabric.host is not None:
        return [t.name for t in answering if t.name == fabric.host]
    return [t.name for t in answering if t.machine.node is not None]
