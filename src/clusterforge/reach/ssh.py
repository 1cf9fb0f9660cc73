"""The operations' connections: testinfra hosts over OpenSSH, from an ssh_config written for the inventory's machines
(hosts.py), one master connection per host for all its commands, through sudo where the inventory says so, every
command bounded. A host that cannot be reached, or whose connection breaks, is one ``Unreachable``: its line is
failures.py's, "HOST: what happened: what to check", as the deploy says it. testinfra is imported only once a
connection is made."""

from __future__ import annotations

import shlex
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..errors import ClusterforgeError
from ..slurm.commands import Answer
from . import failures, sudo
from .hosts import CONNECT_TIMEOUT, Reach, Target, ssh_config

COMMAND_TIMEOUT = 60  # seconds any one remote command may take (a hung slurmctld or slurmdbd is a finding)

Run = Callable[[str], Answer]  # a shell command run on one host, and its answer


class Unreachable(ClusterforgeError):
    """The host could not be reached, or the connection broke: ``cause``, what happened and what to check
    (failures.py's words, without the host); ``kind``, which of failures.KINDS."""

    def __init__(self, host: str, cause: str, kind: str = failures.OTHER) -> None:
        Exception.__init__(self, f"{host}: {cause}")
        self.host, self.cause, self.kind = host, cause, kind

    @classmethod
    def of(cls, failure: failures.Failure) -> Unreachable:
        return cls(failure.host, failure.cause, failure.kind)


class Connections:
    """The connections to ``targets``, in a private directory removed by ``close``."""

    def __init__(self, targets: list[Target]) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="clusterforge-ssh-")
        self.config = Path(self._dir.name) / "ssh_config"
        # One master connection per host, its socket in this private directory, closed 5 s after the last command.
        control = f"Host *\n  ControlMaster auto\n  ControlPath {self._dir.name}/%C\n  ControlPersist 5\n\n"
        self.config.write_text(control + ssh_config(targets), encoding="utf-8")
        self._targets = {t.name: t for t in targets}

    def host(self, name: str):
        """The host's testinfra connection: through sudo (testinfra's own) where the inventory says so."""
        import testinfra

        target = self._targets.get(name)
        sudo_ = {"sudo": True, "sudo_user": target.sudo_user} if target is not None and target.sudo else {}
        # testinfra puts its own ConnectTimeout (10 s) on ssh's command line, where it wins over the config's: given
        # ours, so that the bound the config states is the one that holds.
        return testinfra.get_host(f"ssh://{name}", ssh_config=str(self.config), controlpersist=0,
                                  timeout=CONNECT_TIMEOUT, **sudo_)

    def runner(self, name: str) -> Run:
        """Run a shell command on the host, bounded by COMMAND_TIMEOUT (exit 124 past it)."""
        host = self.host(name)
        target = self._targets.get(name)
        reach = target.reach if target is not None else None

        def run(command: str) -> Answer:
            try:
                result = host.run(f"timeout {COMMAND_TIMEOUT} sh -c {shlex.quote(command)}")
            except RuntimeError as error:
                # testinfra's ssh backend raises on ssh's own exit status 255: no connection, or it broke.
                stderr = getattr(error.args[0], "stderr", "") if error.args else ""
                raise Unreachable.of(failures.openssh(name, stderr, reach)) from None
            return Answer(result.rc, result.stdout, result.stderr)

        return run

    def close(self) -> None:
        self._dir.cleanup()

    def __enter__(self) -> Connections:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def answers(run: Run, reach: Reach) -> str | None:
    """None when the host runs a command; else why not (failures.py's words, without the host): a sudo that ran
    nothing as sudo.py says it."""
    try:
        answer = run("true")
    except Unreachable as error:
        return error.cause
    if answer.rc == 0:
        return None
    if reach.sudo or sudo.asks_password(answer.err):
        return failures.sudo_refused(reach.name, reach.who, answer.err).cause
    return answer.why
