"""The operations' connections: testinfra hosts over OpenSSH, from an ssh_config written for the inventory's machines
(hosts.py), one master connection per host for all its commands, through sudo where the inventory says so, every
command bounded. A host that cannot be reached, or whose connection breaks, is one ``Unreachable``: its line is
failures.py's, "HOST: what happened: what to check", as the deploy says it. testinfra is imported only once a
connection is made.

`check` runs its commands through a ``Session`` instead: one ``ssh`` process per host for all of them (over the same
master connection and sudo rule), since an ``ssh`` process a command was most of its CPU on the deploy host."""

from __future__ import annotations

import base64
import contextlib
import os
import select
import shlex
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from ..errors import ClusterforgeError
from ..slurm.commands import Answer
from . import failures, sudo
from .hosts import CONNECT_TIMEOUT, Reach, Target, ssh_config

COMMAND_TIMEOUT = 60  # seconds any one remote command may take (a hung slurmctld or slurmdbd is a finding)
# Seconds past COMMAND_TIMEOUT a session's answer may take to come back (a slow sudo or link, a 1 MiB output, a
# command that ignores timeout's TERM) before the session is given up as hung; also its bound to start, past
# CONNECT_TIMEOUT.
SESSION_MARGIN = 10

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
        self._sessions: list[Session] = []
        self._sessions_lock = threading.Lock()

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

    def session(self, name: str) -> Session:
        """One ``ssh`` process for all of a caller's commands on the host, each as the runner runs it: closed by
        the caller (a context manager), or else with the connections."""
        session = Session(name, self.config, self._targets.get(name))
        with self._sessions_lock:
            self._sessions.append(session)
        return session

    def close(self) -> None:
        # The sessions first: their ssh processes use the master connection whose socket is in the directory.
        with self._sessions_lock:
            sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.close()
        self._dir.cleanup()

    def __enter__(self) -> Connections:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


# The remote side of a session, run by sh: one command a line, in base64 so that any command fits on one; each run as
# the runner runs it (bounded by timeout, through sh -c), its standard input /dev/null so that it cannot read the
# next commands, its output and error captured apart into a directory only its user can enter (mktemp -d: a fresh
# name, never followed through a link the cluster's users planted), removed at the end. Each answer: "RC OUT ERR"
# (the byte counts), then exactly those bytes (head -c: a process the command left behind may still write). The
# "." keeps a command's trailing newlines, which $(...) would strip. The ready line comes once the directory is
# made: what a login script printed before it is not an answer. The loop's variables, prefixed so as not to change
# one the login exported, are not exported: the commands see the environment the runner's see.
READY = "clusterforge-session-ready"
LOOP = r"""cf_dir=$(mktemp -d) || exit 1
trap 'rm -rf "$cf_dir"' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 141' PIPE
trap 'exit 143' TERM
echo @READY@
while IFS= read -r cf_line; do
  cf_command=$(printf %s "$cf_line" | base64 -d && echo .) || exit 1
  timeout @TIMEOUT@ sh -c "${cf_command%.}" </dev/null >"$cf_dir/out" 2>"$cf_dir/err"
  cf_rc=$?
  cf_out=$(wc -c <"$cf_dir/out") cf_err=$(wc -c <"$cf_dir/err")
  printf '%d %d %d\n' "$cf_rc" "$cf_out" "$cf_err"
  head -c "$cf_out" "$cf_dir/out"
  head -c "$cf_err" "$cf_dir/err"
  rm -f "$cf_dir/out" "$cf_dir/err"
done
"""


def _remote_loop(timeout: int) -> str:
    """The remote side of a session whose commands are bounded by ``timeout`` seconds."""
    return LOOP.replace("@READY@", READY).replace("@TIMEOUT@", str(int(timeout)))


class _Ended(Exception):
    """ssh ended (its output closed, or its input): the host gone, the connection broken, or sudo refused."""


class _NoAnswer(Exception):
    """No answer within the session's bound."""


class _Garbled(Exception):
    """An answer that is not the loop's: the session cannot be read on."""


class Session:
    """All of a caller's commands on one host through one ``ssh`` process (the connections' ssh_config and master
    connection, through ``sudo -n`` where the inventory says sudo), each answered as the runner answers it. The
    process starts at the first command. Each answer is bounded (COMMAND_TIMEOUT and SESSION_MARGIN): a host that
    goes, or hangs, is one ``Unreachable`` as the runner says it, and that process is given up; the next command
    starts another, as the runner would connect again. For one thread at a time (a lock holds the others back)."""

    def __init__(self, name: str, config: Path, target: Target | None) -> None:
        self.name = name
        self._config = config
        self._reach = target.reach if target is not None else None
        self._sudo = target is not None and target.sudo
        self._sudo_user = target.sudo_user if target is not None else None
        self._lock = threading.Lock()
        self._closed = False
        self._process: subprocess.Popen[bytes] | None = None
        self._said: IO[bytes] | None = None  # ssh's standard error, for what went wrong
        self._pending = bytearray()  # read from ssh, not yet answered
        self._ready = False
        self._timeout = COMMAND_TIMEOUT

    def __call__(self, command: str) -> Answer:
        with self._lock:
            if self._closed:
                raise Unreachable(self.name, "its session was closed", failures.LOST)
            try:
                if self._process is None:
                    self._start()
                return self._ask(command)
            except (_Ended, _NoAnswer, _Garbled) as error:
                raise Unreachable.of(self._give_up(error)) from None
            finally:
                if self._closed:
                    self._finish()  # closed from another thread meanwhile, which could not end it under our lock

    def _remote_command(self) -> str:
        """What ssh runs on the host: the loop, through sudo as the runner's testinfra goes through it; ``-n``, so
        that a sudo that wants a password says so rather than read the commands as one."""
        loop = f"/bin/sh -c {shlex.quote(_remote_loop(self._timeout))}"
        if not self._sudo:
            return f"exec {loop}"
        user = f"-u {shlex.quote(self._sudo_user)} " if self._sudo_user else ""
        return f"exec sudo -n {user}{loop}"

    def _start(self) -> None:
        self._timeout = COMMAND_TIMEOUT
        self._said = tempfile.TemporaryFile()
        self._ready = False
        # -T: no terminal, which would turn the answers' newlines into CRLF.
        self._process = subprocess.Popen(["ssh", "-F", str(self._config), "-T", self.name, self._remote_command()],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._said)
        os.set_blocking(self._process.stdin.fileno(), False)  # type: ignore[union-attr]
        deadline = time.monotonic() + CONNECT_TIMEOUT + SESSION_MARGIN
        while not self._line(deadline).endswith(READY.encode()):
            pass
        self._ready = True

    def _ask(self, command: str) -> Answer:
        deadline = time.monotonic() + self._timeout + SESSION_MARGIN
        self._write(base64.b64encode(command.encode("utf-8")) + b"\n", deadline)
        header = self._line(deadline)
        try:
            rc, out_size, err_size = (int(field) for field in header.split(b" "))
        except ValueError:
            raise _Garbled(header[:80]) from None
        if out_size < 0 or err_size < 0:
            raise _Garbled(header[:80])
        out, err = self._exactly(out_size, deadline), self._exactly(err_size, deadline)
        return Answer(rc, out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace"))

    def _write(self, data: bytes, deadline: float) -> None:
        fd = self._process.stdin.fileno()  # type: ignore[union-attr]
        left = memoryview(data)
        while left:
            self._wait(fd, select.POLLOUT, deadline)
            try:
                written = os.write(fd, left)
            except BlockingIOError:
                continue  # ready, yet its room went: wait again
            except BrokenPipeError:
                raise _Ended from None
            left = left[written:]

    def _line(self, deadline: float) -> bytes:
        while (end := self._pending.find(b"\n")) < 0:
            self._fill(deadline)
        return self._take(end + 1)[:-1]

    def _exactly(self, size: int, deadline: float) -> bytes:
        while len(self._pending) < size:
            self._fill(deadline)
        return self._take(size)

    def _take(self, size: int) -> bytes:
        taken = bytes(self._pending[:size])
        del self._pending[:size]
        return taken

    def _fill(self, deadline: float) -> None:
        fd = self._process.stdout.fileno()  # type: ignore[union-attr]
        self._wait(fd, select.POLLIN, deadline)
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            raise _Ended
        self._pending += chunk

    def _wait(self, fd: int, event: int, deadline: float) -> None:
        """Until ``fd`` is ready for ``event`` (or closed: the read or write then says so), or _NoAnswer."""
        poller = select.poll()  # not select.select: a thousand hosts' pipes go past its 1024 descriptors
        poller.register(fd, event)
        left = deadline - time.monotonic()
        if left <= 0 or not poller.poll(left * 1000):
            raise _NoAnswer

    def _give_up(self, error: Exception) -> failures.Failure:
        """The process ended (killed if it still ran) and forgotten; why, as the runner would say it."""
        # Its output closed, ssh is exiting: its status tells ssh's failure (255) from the loop's (or sudo's).
        ended_itself = self._ends(within=0 if isinstance(error, _NoAnswer) else 5)
        said, status = self._forget()
        if self._closed:
            return failures.Failure(self.name, failures.LOST, "its session was closed")
        if isinstance(error, _NoAnswer) and not ended_itself:
            bound = self._timeout + SESSION_MARGIN if self._ready else CONNECT_TIMEOUT + SESSION_MARGIN
            return failures.Failure(self.name, failures.LOST, f"no answer in {bound} s",
                                    "check that the host is up and not hung (a command stuck on a mount, a full "
                                    "disk), and the network on the way")
        if isinstance(error, _Garbled):
            return failures.Failure(self.name, failures.OTHER, "could not be reached",
                                    f"its session answered {error.args[0]!r}")
        if not self._ready and status != 255 and (sudo.asks_password(said) or (self._sudo and "sudo" in said)):
            return failures.sudo_refused(self.name, self._reach.who if self._reach else "the SSH user", said)
        return failures.openssh(self.name, said, self._reach)

    def _ends(self, within: float) -> bool:
        """Whether the process ends by itself ``within`` seconds."""
        if self._process is None:
            return True
        try:
            self._process.wait(timeout=within)
        except subprocess.TimeoutExpired:
            return False
        return True

    def _forget(self) -> tuple[str, int | None]:
        """The process ended (killed if it still runs) and its pipes closed: what ssh said on its standard error, and
        its exit status."""
        process, said = self._process, self._said
        self._process, self._said = None, None
        self._pending.clear()
        if process is None:
            return "", None
        if process.poll() is None:
            process.kill()
        status = process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if said is None:
            return "", status
        said.seek(0)
        text = said.read().decode("utf-8", errors="replace")
        said.close()
        return text, status

    def close(self) -> None:
        """Ended: its loop told there are no more commands (so that it removes its directory), or, with a command
        in flight in another thread, its ssh killed (that thread then raises Unreachable)."""
        self._closed = True
        if not self._lock.acquire(blocking=False):
            if (process := self._process) is not None:
                process.kill()
            return
        try:
            self._finish()
        finally:
            self._lock.release()

    def _finish(self) -> None:
        process = self._process
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.stdin.close()  # type: ignore[union-attr]
        self._ends(within=SESSION_MARGIN)  # the loop reads the end of its input; its trap removes the directory
        self._forget()

    def __enter__(self) -> Session:
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
