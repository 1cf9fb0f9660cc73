"""Running the checks against the machines: every host at once over the operations' connections (reach/ssh.py),
each command and the whole run bounded by timeouts. A host that cannot be reached gives "could not check" for its
checks; the other hosts are still checked."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, TimeoutError, wait

from ..model import ValidCluster
from ..reach.hosts import Target
from ..reach.ssh import Connections, Unreachable, answers
from .findings import Outcome, unchecked
from .probes import Context, checks_for, perform

WORKERS = 32
LIMITED_ON_CONTROLLER = ("nodes", "repair", "smoke-hostname", "smoke-gpus")
HOST_DEADLINE = 600  # seconds for all checks of one host (the smoke jobs included)


def munge_credential(valid: ValidCluster, connections: Connections) -> str | None:
    """A credential made on the controller, for every host to decode (munge clusters only)."""
    if valid.auth != "munge":
        return None
    try:
        answer = connections.runner(valid.controller.name)("munge -n")
    except Unreachable:
        return None
    return answer.out.strip() if answer.rc == 0 else None


def check_host(target: Target, valid: ValidCluster, connections: Connections, *, smoke: bool,
               credential: str | None, memory_tolerance: float | None, limit: frozenset[str] | None
               ) -> list[Outcome]:
    checks = checks_for(target.machine, valid, smoke)
    if limit is not None and target.name not in limit:
        # The controller outside --limit is asked only for Slurm's view of (jobs on, repairs of) the hosts named.
        checks = [c for c in checks if c.name in LIMITED_ON_CONTROLLER]
    run = connections.runner(target.name)
    why = answers(run, target.reach)
    if why is not None:
        return [unchecked(target.name, "reach", why)]
    ctx = Context(valid, target.machine, run, credential, memory_tolerance, limit)
    outcomes = []
    for check in checks:
        try:
            outcomes.append(perform(check, ctx))
        except Unreachable as error:
            outcomes.append(unchecked(target.name, check.name, f"connection lost: {error.cause}"))
    return outcomes


def check_cluster(valid: ValidCluster, targets: list[Target], *, smoke: bool = False,
                  memory_tolerance: float | None = None, limit: frozenset[str] | None = None) -> list[Outcome]:
    """Every check on every target, hosts in parallel; outcomes in the inventory's host order. With ``limit``, the
    hosts named, and the controller for Slurm's view of them. ``memory_tolerance``, a fraction: None takes the
    inventory's."""
    if limit is not None:
        targets = [t for t in targets if t.name in limit or t.name == valid.controller.name]
    with Connections(targets) as connections:
        pool = ThreadPoolExecutor(max_workers=min(WORKERS, max(1, len(targets))))
        try:
            credential = munge_credential(valid, connections)
            futures = {target.name: pool.submit(check_host, target, valid, connections, smoke=smoke,
                                                credential=credential, memory_tolerance=memory_tolerance, limit=limit)
                       for target in targets}
            wait(futures.values(), timeout=HOST_DEADLINE)
            outcomes: list[Outcome] = []
            for name, future in futures.items():
                try:
                    outcomes.extend(future.result(timeout=0))
                except TimeoutError:
                    outcomes.append(unchecked(name, "reach", f"its checks took longer than {HOST_DEADLINE} s"))
            return outcomes
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
