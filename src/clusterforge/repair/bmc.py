"""A node's BMC, as the repair loop speaks to it: its chassis power state, and a power cycle for a node that did not
come back from a reboot within its bound. IPMI over LAN (RMCP+) through Debian's ``ipmitool``, one bounded command
per request; Redfish over HTTPS through sushy (Debian's python3-sushy, OpenStack's Redfish library), the whole
exchange in a forked child of its own, killed with everything it started once the action's bound has passed (sushy
sets no bound of its own on a request, 4.x none at all).

The BMC's password never leaves this process but into ipmitool's environment (``-E`` reads ``IPMI_PASSWORD``) or
sushy's HTTP basic authentication over TLS: not in an argument, not in a message, not in an exception. It is read
from the root-only file the plan names (``Bmc.credentials``, ``{"username": ..., "password": ...}``, written by the
deploy from Vault), and only from a file nobody but its owner, root (or the user running the loop), could have
written: root never follows a path another user can change. A Redfish BMC's certificate is checked against the
plan's CA file, held to the same rule (whoever could write it could stand in for the BMC and read the password), or
the system's trust store. Every failure is one line naming the BMC's address and what failed.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import select
import signal
import stat
import subprocess
import time
import warnings
from dataclasses import asdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..slurm import commands
from ..slurm.commands import Answer
from .plan import Bmc

IPMI = "ipmi"
REDFISH = "redfish"
PROTOCOLS = (IPMI, REDFISH)    # the protocols spoken here
IPMI_PORT = 623
REDFISH_PORT = 443
# What power_cycle asks of a speaker: a power cycle of a node that is on, power on of one that is off.
CYCLE, POWER_ON = "cycle", "on"
IPMITOOL = "ipmitool"
ON, OFF = "on", "off"
TIMEOUT_S = 60.0       # an action's bound, every ipmitool it runs within it
MAX_CREDENTIALS = 65536
MAX_ANSWER = 65536     # a forked Redfish exchange's answer, one Outcome as JSON
# A session a BMC did not establish is asked again, so many times in all, a second apart, within the action's bound:
# BMCs drop sessions under load or past their session limit (ipmi_sim on the loaded test cluster failed one in
# five). The request itself was never sent then, so asking again cannot act twice. Not where the BMC refused the
# login, which only ipmitool's -v tells apart (its RAKP 2 answer), with these words: a BMC may lock an account out
# after a few.
SESSION_TRIES = 3
SESSION_FAILED = "unable to establish ipmi v2 / rmcp+ session"
VERBOSE_CHATTER = ("Loading IANA PEN Registry", "Running Get ", "Discovered IPMB address")
LOGIN_REFUSED = ("hmac is invalid", "unauthorized name", "insufficient privilege", "invalid role")
# ipmitool's environment: nothing of the loop's own but a PATH (it runs no other program) and the C locale.
BASE_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"}

EnvRun = Callable[[Sequence[str], float, Mapping[str, str]], Answer]


def run_with_env(argv: Sequence[str], timeout: float, env: Mapping[str, str]) -> Answer:
    """slurm/commands.py's run, with ``env`` as the command's whole environment: bounded the same way, killed with
    everything it started once ``timeout`` has passed (124), and killed by commands.kill_all as the others are."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, errors="replace", start_new_session=True, env=dict(env))
    except OSError as error:
        return Answer(commands.NOT_FOUND, "", f"{argv[0]}: {error.strerror}", time.monotonic() - start)
    commands._running.add(proc.pid)
    try:
        out, err = proc.communicate(timeout=timeout)
        return Answer(proc.returncode, out, err, time.monotonic() - start)
    except subprocess.TimeoutExpired:
        commands._kill(proc)
        return Answer(commands.TIMED_OUT, "", "", time.monotonic() - start)
    finally:
        commands._running.discard(proc.pid)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a request to a BMC came to: ``said`` in one line, naming the BMC; ``power`` where it was read."""

    ok: bool
    said: str
    power: str | None = None   # ON, OFF; None where not read
    seconds: float = 0.0

    @property
    def why(self) -> str:
        return "" if self.ok else self.said


class Refused(Exception):
    """The credentials file cannot be used; the message names the file and why, never what is in it."""


def _refuse_path(path: str) -> None:
    """Refused unless every directory above ``path`` is root's (or the loop's user's), no symbolic link, and
    writable by no one else (a sticky directory, /tmp, may be: nobody else can rename what is in it)."""
    if not os.path.isabs(path):
        raise Refused(f"{path!r} is not an absolute path")
    owners = {0, os.geteuid()}
    parts = os.path.normpath(path).split("/")[1:-1]
    for depth in range(len(parts) + 1):
        directory = "/" + "/".join(parts[:depth])
        try:
            info = os.lstat(directory)
        except OSError as error:
            raise Refused(f"{directory}: {error.strerror}") from None
        if stat.S_ISLNK(info.st_mode):
            raise Refused(f"{directory} is a symbolic link")
        if not stat.S_ISDIR(info.st_mode):
            raise Refused(f"{directory} is not a directory")
        if info.st_uid not in owners:
            raise Refused(f"{directory} is owned by uid {info.st_uid}, not root")
        if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
            raise Refused(f"{directory} can be written by others than its owner (mode {info.st_mode & 0o7777:04o})")


def _refuse_file(path: str, info: os.stat_result, others: int, may: str, wanted: str = "") -> None:
    """Refused unless ``info`` (of ``path``) is a regular file, root's (or the loop's user's), none of whose
    ``others`` mode bits is set (what no one else ``may``: be read, written)."""
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"{path} is not a regular file")
    if info.st_uid not in {0, os.geteuid()}:
        raise Refused(f"{path} is owned by uid {info.st_uid}, not root")
    if info.st_mode & others:
        raise Refused(f"{path} can be {may} by others than its owner (mode {info.st_mode & 0o7777:04o}{wanted})")


def trusted_file(path: str) -> str:
    """``path``, a file of CA certificates, refused (naming why) unless it is a regular file, no symbolic link,
    root's (or the loop's user's), that no one else can write, in directories no one else can write."""
    _refuse_path(path)
    try:
        info = os.lstat(path)
    except OSError as error:
        raise Refused(f"{path}: {error.strerror}") from None
    _refuse_file(path, info, 0o022, "written")
    return path


def credentials(path: str) -> tuple[str, str]:
    """The username and password in ``path``. Refused (naming why) unless it is a regular file, no symbolic link,
    root's (or the loop's user's), that no one else can read or write (0600 or 0400), in directories no one else
    can write, holding a JSON object with a non-empty "username" and "password"."""
    _refuse_path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise Refused(f"{path}: {error.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        _refuse_file(path, os.fstat(file.fileno()), 0o077, "read or written", ", not 0600")
        raw = file.read(MAX_CREDENTIALS + 1)
    if len(raw) > MAX_CREDENTIALS:
        raise Refused(f"{path} is larger than {MAX_CREDENTIALS} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError:
        # Not the decoder's message: it may quote the file.
        raise Refused(f"{path} is not a JSON object of username and password") from None
    if not isinstance(data, dict):
        raise Refused(f"{path} is not a JSON object of username and password")
    username, password = data.get("username"), data.get("password")
    if not isinstance(username, str) or not username:
        raise Refused(f"{path} has no username")
    if not isinstance(password, str) or not password or "\0" in password:
        raise Refused(f"{path} has no password")
    if username.startswith("-") or "\0" in username:
        raise Refused(f"{path} has a username ipmitool would take for an option")
    return username, password


def _why(answer: Answer) -> str:
    """Answer.why, without the lines ipmitool's -v adds on every run."""
    said = "\n".join(line for line in answer.err.splitlines() if not line.startswith(VERBOSE_CHATTER))
    return Answer(answer.rc, answer.out, said, answer.seconds).why


def _session_dropped(answer: Answer) -> bool:
    said = answer.err.lower()
    return SESSION_FAILED in said and not any(words in said for words in LOGIN_REFUSED)


class _Speaker:
    """One action's requests to one BMC, within one deadline: what power_cycle asks of a protocol."""

    def __init__(self, bmc: Bmc, timeout_s: float) -> None:
        self.bmc = bmc
        self.start = time.monotonic()
        self.deadline = self.start + timeout_s
        self.timeout_s = timeout_s
        self.name = f"BMC {bmc.address}" + (f":{bmc.port}" if bmc.port else "")
        self.username, self.password = "", ""

    def outcome(self, ok: bool, said: str, power: str | None = None) -> Outcome:
        if self.password:
            said = said.replace(self.password, "<password>")
        return Outcome(ok, f"{self.name}: {said}", power, time.monotonic() - self.start)

    def refused(self) -> Outcome | None:
        """Why nothing can be asked of this BMC, or None; the credentials read."""
        if not self.bmc.address or self.bmc.address.startswith("-") or any(c.isspace() for c in self.bmc.address):
            return self.outcome(False, f"not an address: {self.bmc.address!r}")
        try:
            self.username, self.password = credentials(self.bmc.credentials)
        except Refused as error:
            return self.outcome(False, f"credentials refused: {error}")
        return None

    def status(self) -> Outcome:
        raise NotImplementedError

    def act(self, action: str) -> Outcome:
        """CYCLE or POWER_ON asked of the BMC: ok once it accepted it."""
        raise NotImplementedError


class _Ipmi(_Speaker):
    def __init__(self, bmc: Bmc, run: EnvRun, timeout_s: float, cipher_suite: int | None) -> None:
        super().__init__(bmc, timeout_s)
        self.run, self.cipher_suite = run, cipher_suite

    def ipmitool(self, *words: str) -> Answer:
        argv = [IPMITOOL, "-v", "-I", "lanplus", "-H", self.bmc.address, "-p", str(self.bmc.port or IPMI_PORT),
                "-U", self.username, "-E"]
        if self.cipher_suite is not None:
            argv += ["-C", str(self.cipher_suite)]
        for tries in range(1, SESSION_TRIES + 1):
            left = self.deadline - time.monotonic()
            if left <= 0:
                return Answer(commands.TIMED_OUT, "", "", 0.0)
            answer = self.run([*argv, *words], left, {**BASE_ENV, "IPMI_PASSWORD": self.password})
            if answer.ok or not _session_dropped(answer) or tries == SESSION_TRIES:
                return answer
            time.sleep(min(1.0, max(0.0, self.deadline - time.monotonic())))
        raise AssertionError("unreachable")

    def failed(self, what: str, answer: Answer) -> Outcome:
        if answer.rc == commands.TIMED_OUT:
            return self.outcome(False, f"{what}: no answer within {self.timeout_s:g} s")
        if answer.rc == commands.NOT_FOUND:
            return self.outcome(False, f"{what}: ipmitool is not installed")
        refused = [line.strip("> ").strip() for line in answer.err.splitlines()
                   if any(words in line.lower() for words in LOGIN_REFUSED)]
        if refused:
            return self.outcome(False, f"{what}: the BMC refused the login ({refused[0][:120]}): check the "
                                       "credentials' username and password")
        return self.outcome(False, f"{what} failed: {_why(answer)}")

    def status(self) -> Outcome:
        answer = self.ipmitool("chassis", "power", "status")
        if not answer.ok:
            return self.failed("chassis power status", answer)
        words = answer.out.split()
        if words[-1:] in ([ON], [OFF]):
            return self.outcome(True, f"chassis power is {words[-1]}", words[-1])
        return self.outcome(False, f"chassis power status: no state in its answer {answer.out.strip()[:80]!r}")

    def act(self, action: str) -> Outcome:
        what = "chassis power cycle" if action == CYCLE else "chassis power on (it was off)"
        answer = self.ipmitool("chassis", "power", action)
        if not answer.ok:
            return self.failed(what, answer)
        return self.outcome(True, "chassis power cycled" if action == CYCLE else "chassis powered on (it was off)")


class _Redfish(_Speaker):
    """The BMC's one ComputerSystem (or the plan's ``system``), through sushy with HTTP basic authentication: no
    session is left open on the BMC, whose session slots are few."""

    def __init__(self, bmc: Bmc, timeout_s: float) -> None:
        super().__init__(bmc, timeout_s)
        self.sushy = None
        self.system = None

    def refused(self) -> Outcome | None:
        said = super().refused()
        if said is not None:
            return said
        verify: bool | str = self.bmc.verify_tls
        if self.bmc.ca_file:
            try:
                verify = trusted_file(self.bmc.ca_file)
            except Refused as error:
                return self.outcome(False, f"CA file refused: {error}")
        try:
            import sushy  # Debian's python3-sushy, installed by the deploy where a BMC speaks Redfish
        except ImportError:
            return self.outcome(False, "sushy is not installed (Debian's python3-sushy)")
        self.sushy, self.verify = sushy, verify
        return None

    def url(self) -> str:
        host = f"[{self.bmc.address}]" if ":" in self.bmc.address else self.bmc.address
        return f"https://{host}:{self.bmc.port or REDFISH_PORT}"

    def failed(self, what: str, error: Exception) -> Outcome:
        exceptions = self.sushy.exceptions
        text = " ".join(str(error).split())
        if isinstance(error, exceptions.AccessError):
            return self.outcome(False, f"{what}: the BMC refused the login (HTTP {error.status_code}): check the "
                                       "credentials' username and password")
        if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
            return self.outcome(False, f"{what}: its TLS certificate is not trusted (give the CA that signed it, or "
                                       "the certificate itself, as the Bmc's ca_file)")
        if isinstance(error, exceptions.ConnectionError):
            return self.outcome(False, f"{what}: no connection to {self.url()}: {text[-160:]}")
        if isinstance(error, exceptions.SushyError):
            return self.outcome(False, f"{what} failed: {text[:200]}")
        return self.outcome(False, f"{what} failed: {type(error).__name__}: {text[:200]}")

    def _read(self):
        if self.system is None:
            # sushy 5 asks a failed GET again 10 times, 3 s apart (its later releases a refused connection too):
            # as ipmitool's sessions, a few times within the bound, so that what failed is said before it passes.
            # Debian 12's sushy 4 has no such argument, and asks no connection again.
            retries = {"server_side_retries": SESSION_TRIES, "server_side_retries_delay": 1} if "server_side_retries" \
                in inspect.signature(self.sushy.Sushy).parameters else {}
            root = self.sushy.Sushy(self.url(), auth=self.sushy.auth.BasicAuth(self.username, self.password),
                                    verify=self.verify, **retries)
            identity = f"/redfish/v1/Systems/{self.bmc.system}" if self.bmc.system else None
            self.system = root.get_system(identity)
        else:
            self.system.refresh(force=True)
        return self.system

    def status(self) -> Outcome:
        try:
            state = self._read().power_state
        except Exception as error:  # noqa: BLE001 - every failure is the BMC's, named in one line
            return self.failed("power state", error)
        said = getattr(state, "value", state)   # sushy's PowerState, or what it could not map
        power = {"On": ON, "PoweringOn": ON, "Off": OFF, "PoweringOff": OFF}.get(said)
        if power is None:
            return self.outcome(False, f"power state: none known in its answer ({state!r})")
        return self.outcome(True, f"power is {said}", power)

    def act(self, action: str) -> Outcome:
        reset = self.sushy.ResetType
        what = "power cycle" if action == CYCLE else "power on (it was off)"
        try:
            if action == CYCLE:
                allowed = self.system.get_allowed_reset_system_values()
                # A BMC without PowerCycle (iLO, the emulator) restarts the node at once: as hard, and as sure.
                kind = next((k for k in (reset.POWER_CYCLE, reset.FORCE_RESTART) if k in allowed), None)
                if kind is None:
                    return self.outcome(False, f"{what}: the BMC allows neither PowerCycle nor ForceRestart")
            else:
                kind = reset.ON
            self.system.reset_system(kind)
        except Exception as error:  # noqa: BLE001
            return self.failed(what, error)
        said = f"power cycled (Reset {kind.value})" if action == CYCLE else "powered on (it was off)"
        return self.outcome(True, said)


def _cycle(speaker: _Speaker) -> Outcome:
    """The node power cycled: its power read first; a node powered on is power cycled, one powered off is powered
    on (a power cycle of a node that is off fails on some BMCs), and one the power cycle failed for that reads off
    afterwards is powered on."""
    refused = speaker.refused()
    if refused is not None:
        return refused
    before = speaker.status()
    if not before.ok:
        return before
    if before.power == ON:
        done = speaker.act(CYCLE)
        if done.ok:
            return done
        after = speaker.status()
        if after.power != OFF:
            return done
    return speaker.act(POWER_ON)


def _status(speaker: _Speaker) -> Outcome:
    return speaker.refused() or speaker.status()


def _in_child(speaker: _Speaker, work: Callable[[_Speaker], Outcome]) -> Outcome:
    """``work(speaker)`` in a forked child, a session of its own (commands.kill_all kills it with the loop), killed
    once the speaker's bound has passed. Forked, not started: it runs the modules this process has loaded, from
    whatever file they came (the shipped program's zip included), and is handed the plan in memory."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's lines run in another process
        try:
            os.close(read_fd)
            os.setsid()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            # As ipmitool's: requests would take a proxy from *_proxy and a CA bundle from REQUESTS_CA_BUNDLE over
            # the plan's ca_file (sushy 4 sets it on the session, which the environment's overrides).
            os.environ.clear()
            os.environ.update(BASE_ENV)
            logging.disable(logging.CRITICAL)   # sushy's own lines: the outcome says what failed, once
            warnings.simplefilter("ignore")     # urllib3's, where verify_tls is off: the inventory said so
            data = json.dumps(asdict(work(speaker))).encode()
            while data:
                data = data[os.write(write_fd, data):]
        finally:
            os._exit(0)
    os.close(write_fd)
    commands._running.add(pid)
    answer = b""
    try:
        while len(answer) <= MAX_ANSWER:
            left = speaker.deadline - time.monotonic()
            if left <= 0 or not select.select([read_fd], [], [], left)[0]:
                return speaker.outcome(False, f"no answer within {speaker.timeout_s:g} s")
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            answer += chunk
        try:
            return Outcome(**json.loads(answer))
        except (ValueError, TypeError):
            return speaker.outcome(False, "the Redfish exchange ended without an answer")
    finally:
        os.close(read_fd)
        commands._kill_session(pid)
        os.waitpid(pid, 0)
        commands._running.discard(pid)


def _run(bmc: Bmc, work: Callable[[_Speaker], Outcome], run: EnvRun, timeout_s: float,
         cipher_suite: int | None) -> Outcome:
    if bmc.protocol == REDFISH:
        return _in_child(_Redfish(bmc, timeout_s), work)
    if bmc.protocol == IPMI:
        return work(_Ipmi(bmc, run, timeout_s, cipher_suite))
    return _Speaker(bmc, timeout_s).outcome(False, f"protocol {bmc.protocol!r} is not spoken by the repair loop "
                                                   f"(only {', '.join(PROTOCOLS)})")


def status(bmc: Bmc, *, run: EnvRun = run_with_env, timeout_s: float = TIMEOUT_S,
           cipher_suite: int | None = None) -> Outcome:
    """The chassis power state the BMC reports (``power``: ON or OFF), or why it cannot be read.

    ``cipher_suite``: ipmitool's -C; None lets ipmitool ask the BMC for its best (17, else 3). A BMC that does not
    answer that question (OpenIPMI's ipmi_sim) costs ipmitool's retries, about 10 s, before it falls back to 3."""
    return _run(bmc, _status, run, timeout_s, cipher_suite)


def power_state(bmc: Bmc, *, run: EnvRun = run_with_env, timeout_s: float = TIMEOUT_S,
                cipher_suite: int | None = None) -> str | None:
    """ON or OFF, or None where the BMC's answer could not be had (``status`` says why)."""
    return status(bmc, run=run, timeout_s=timeout_s, cipher_suite=cipher_suite).power


def power_cycle(bmc: Bmc, *, run: EnvRun = run_with_env, timeout_s: float = TIMEOUT_S,
                cipher_suite: int | None = None) -> Outcome:
    """The node power cycled through its BMC, within ``timeout_s`` in all (``_cycle``). ok once the BMC accepted
    it; whether the node comes back is the loop's to see."""
    return _run(bmc, _cycle, run, timeout_s, cipher_suite)
