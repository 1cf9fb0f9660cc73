"""Running the checks against the machines: one testinfra SSH connection per host, every host in a thread pool,
each command and the whole run bounded by timeouts. A host that cannot be reached gives "could not check" for its
checks; the other hosts are still checked."""

from __future__ import annotations

import shlex
import tempfile
from concurrent.futures import ThreadPoolExecutor, TimeoutError, wait
from pathlib import Path

import testinfra

from ..model import ValidCluster
from .findings import Outcome, unchecked
from .hosts import Target, ssh_config
from ..slurm.commands import Answer
from .probes import COMMAND_TIMEOUT, Context, Unreachable, checks_for, perform

WORKERS = 32
LIMITED_ON_CONTROLLER = ("nodes", "smoke-hostname", "smoke-gpus")
HOST_DEADLINE = 600  # seconds for all checks of one host (the smoke jobs included)
# What sudo says when it wants a password (sudo, sudo-rs; without a terminal), as engine/remote.py knows them: check
# does not load the deploy's engine.
PASSWORD_ASKED = ("a password is required", "interactive authentication is required", "a terminal is required")


class Connections:
    """testinfra hosts over the ssh backend, from an ssh_config written for the inventory's machines; one
    ControlMaster connection per host for all its commands, in a private directory removed at the end."""

    def __init__(self, targets: list[Target]) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="clusterforge-check-")
        self.config = Path(self._dir.name) / "ssh_config"
        # One master connection per host, its socket in this private directory, closed 5 s after the last command.
        control = f"Host *\n  ControlMaster auto\n  ControlPath {self._dir.name}/%C\n  ControlPersist 5\n\n"
        self.config.write_text(control + ssh_config(targets), encoding="utf-8")
        self._targets = {t.name: t for t in targets}

    def host(self, name: str):
        """The host's testinfra connection: through sudo (testinfra's own) where the inventory says so."""
        target = self._targets.get(name)
        sudo = {"sudo": True, "sudo_user": target.sudo_user} if target is not None and target.sudo else {}
        return testinfra.get_host(f"ssh://{name}", ssh_config=str(self.config), controlpersist=0, **sudo)

    def runner(self, name: str):
        host = self.host(name)

        def run(command: str) -> Answer:
            try:
                result = host.run(f"timeout {COMMAND_TIMEOUT} sh -c {shlex.quote(command)}")
            except RuntimeError as error:
                # testinfra's ssh backend raises on ssh's own exit status 255: no connection, or it broke.
                stderr = getattr(error.args[0], "stderr", "") if error.args else ""
                raise Unreachable((stderr.strip().splitlines() or ["ssh failed"])[-1][:200]) from None
            return Answer(result.rc, result.stdout, result.stderr)

        return run

    def close(self) -> None:
        self._dir.cleanup()


def reach(run) -> str | None:
    """None when the host answers a command; else why not (sudo wanting a password said as such)."""
    try:
        answer = run("true")
    except Unreachable as error:
        return str(error)
    if answer.rc != 0 and any(text in answer.err for text in PASSWORD_ASKED):
        return ("sudo asks the SSH user for a password, which check cannot give: allow the user sudo without a "
                "password (NOPASSWD) on this host")
    return None if answer.rc == 0 else answer.why


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
        # The controller outside --limit is asked only for Slurm's view of (and jobs on) the hosts named.
        checks = [c for c in checks if c.name in LIMITED_ON_CONTROLLER]
    run = connections.runner(target.name)
    why = reach(run)
    if why is not None:
        return [unchecked(target.name, "reach", why)]
    ctx = Context(valid, target.machine, run, credential, memory_tolerance, limit)
    outcomes = []
    for check in checks:
        try:
            outcomes.append(perform(check, ctx))
        except Unreachable as error:
            outcomes.append(unchecked(target.name, check.name, f"connection lost: {error}"))
    return outcomes


def check_cluster(valid: ValidCluster, targets: list[Target], *, smoke: bool = False,
                  memory_tolerance: float | None = None, limit: frozenset[str] | None = None) -> list[Outcome]:
    """Every check on every target, hosts in parallel; outcomes in the inventory's host order. With ``limit``, the
    hosts named, and the controller for Slurm's view of them. ``memory_tolerance``, a fraction: None takes the
    inventory's."""
    if limit is not None:
        targets = [t for t in targets if t.name in limit or t.name == valid.controller.name]
    connections = Connections(targets)
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
        connections.close()
