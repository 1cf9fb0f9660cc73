"""`check`'s sessions (reach/ssh.py's ``Session``): one ``ssh`` process for all of a host's commands, each answered as
the runner (testinfra, an ``ssh`` process a command) answers it. On a real sshd (tests/reach/sshd.py), plain and
through a real sudo (this machine's own, Debian 12's as the server's root, copied into the server's overlay): the same
answers command by command, one process for many, the same bound (rc 124), a host that dies or hangs one
``Unreachable`` naming it and no hang, and the captures in a fresh private directory, gone at the end."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from clusters import small_cluster
from needs import skip_or_fail
from reach.sshd import running

from clusterforge.model import resolve
from clusterforge.reach import failures, ssh
from clusterforge.reach.hosts import Target
from clusterforge.reach.ssh import Connections, Unreachable, answers
from clusterforge.slurm.commands import Answer

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")
VALID = resolve(small_cluster())
CTL = next(m for m in VALID.machines if m.name == VALID.controller.name)
N = CTL.name

# What the checks' commands give the two ways: outputs with and without their last newline, standard error, exit
# statuses, control characters and UTF-8, quotes and newlines in the command, nothing at all, 1 MiB, commands that
# read their standard input (they must get nothing, not the next commands), a here-document.
COMMANDS = [
    "echo out; echo err >&2; id -un; exit 3",
    "printf 'no newline at the end'",
    "printf 'newlines kept\\n\\n\\n'; printf 'on err too\\n\\n' >&2",
    "echo only-err >&2; exit 1",
    "true",
    "exit 7",
    "printf '\\000\\001\\002\\r\\n\\033[1m\\tcafé ✓ \\342\\202\\254\\n'",
    "echo \"it's\" 'a \"quoted\" $HOME' \\$HOME; printf '%s|' \"line one\nline two\" 'single '\\''inside'\\'''",
    "yes 0123456789abcdef | head -c 1048576; yes e | head -c 300000 >&2",
    "cat; echo after cat; read line; echo read gave $?",
    "cat <<'EOF'\n$HOME not expanded\nEOF\n",
    "sh -c 'kill -TERM $$'; echo \"after a killed child: $?\"",
    "pwd; umask; echo \"$HOME $USER $LOGNAME $SHELL\"",
]


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """An empty HOME: no test reads or writes the real ~/.ssh."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    with running(tmp_path_factory.mktemp("sshd")) as server:
        yield server


def at(sshd, tmp_path: Path, user: str = "root", **data) -> Target:
    return Target(CTL, {"ssh_hostname": "127.0.0.1", "ssh_port": sshd.port, "ssh_user": user,
                        "ssh_key": str(sshd.key), "ssh_known_hosts_file": str(tmp_path / "known_hosts"), **data})


class Started:
    """Every process this test's Python starts (subprocess.Popen: testinfra's and the session's alike), by its
    first word."""

    def __init__(self, monkeypatch) -> None:
        self.programs: list[str] = []
        counted = self

        class Counted(subprocess.Popen):
            def __init__(self, args, *rest, **options):
                words = args.decode() if isinstance(args, bytes) else args
                counted.programs.append((words.split() if isinstance(words, str) else list(words))[0])
                super().__init__(args, *rest, **options)

        monkeypatch.setattr(subprocess, "Popen", Counted)

    def ssh(self) -> int:
        return self.programs.count("ssh")


def test_every_command_answers_as_through_the_runner(sshd, tmp_path):
    with Connections([at(sshd, tmp_path)]) as connections:
        runner = connections.runner(N)
        with connections.session(N) as session:
            for command in COMMANDS:
                assert session(command) == runner(command), command
            # A few answers spelt out, so that equal is also right.
            assert session(COMMANDS[0]) == Answer(3, "out\nroot\n", "err\n")
            assert session(COMMANDS[1]).out == "no newline at the end"
            assert session(COMMANDS[2]) == Answer(0, "newlines kept\n\n\n", "on err too\n\n")
            assert session(COMMANDS[6]).out == "\x00\x01\x02\r\n\x1b[1m\tcafé ✓ €\n"
            assert session(COMMANDS[7]).out == "it's a \"quoted\" $HOME $HOME\nline one\nline two|single 'inside'|"
            large = session(COMMANDS[8])
            assert (len(large.out), len(large.err)) == (1 << 20, 300000) and large.out.startswith("0123456789abcdef\n")
            assert session(COMMANDS[9]).out == "after cat\nread gave 1\n"
            assert session(COMMANDS[10]).out == "$HOME not expanded\n"
            # The commands' environment is the runner's, but for bash's "_" there (the program it ran: timeout).
            environment = "env | grep -v '^_=' | sort"
            assert session(environment) == runner(environment)
            assert "cf_" not in session("env").out


def test_the_two_differ_only_where_the_runner_fails(sshd, tmp_path):
    """testinfra cannot tell a command's exit 255 from ssh's own (it raises, taken for the host lost), and decodes
    strictly (bytes not UTF-8 raise); the session gives the command's answer, such bytes replaced."""
    with Connections([at(sshd, tmp_path)]) as connections:
        runner = connections.runner(N)
        with connections.session(N) as session:
            assert session("echo before; exit 255") == Answer(255, "before\n", "")
            with pytest.raises(Unreachable):
                runner("echo before; exit 255")
            assert session("printf 'a\\377b'") == Answer(0, "a\ufffdb", "")
            with pytest.raises(UnicodeDecodeError):
                runner("printf 'a\\377b'")


def test_one_ssh_process_runs_all_of_a_hosts_commands(sshd, tmp_path, monkeypatch):
    started = Started(monkeypatch)
    # The process that started each command's timeout: on the host, one shell (the session's loop) for all.
    loop = "p=$(cut -d' ' -f4 /proc/$PPID/stat); echo $(cat /proc/$p/comm) $p"
    with Connections([at(sshd, tmp_path)]) as connections:
        with connections.session(N) as session:
            loops = {session(loop).out for _ in range(20)}
        assert started.ssh() == 1
        assert len(loops) == 1 and loops.pop().startswith("sh ")
        runner = connections.runner(N)
        for _ in range(5):
            runner("true")
        assert started.ssh() == 1 + 5  # the runner: an ssh process a command, as counted here


def test_a_command_past_the_bound_gives_124_as_through_the_runner(sshd, tmp_path, monkeypatch):
    monkeypatch.setattr(ssh, "COMMAND_TIMEOUT", 1)
    with Connections([at(sshd, tmp_path)]) as connections:
        with connections.session(N) as session:
            start = time.monotonic()
            assert session("echo started; sleep 5; echo late") == Answer(124, "started\n", "")
            assert time.monotonic() - start < 4
            assert connections.runner(N)("echo started; sleep 5; echo late") == Answer(124, "started\n", "")
            assert session("echo on") == Answer(0, "on\n", "")


def test_a_host_that_hangs_past_the_bound_is_unreachable_and_the_next_command_starts_afresh(sshd, tmp_path,
                                                                                           monkeypatch):
    """A command that timeout cannot end (it ignores TERM, as one stuck on a mount would): the session gives up at
    COMMAND_TIMEOUT and its margin, where the runner would wait for it."""
    monkeypatch.setattr(ssh, "COMMAND_TIMEOUT", 1)
    monkeypatch.setattr(ssh, "SESSION_MARGIN", 2)
    started = Started(monkeypatch)
    with Connections([at(sshd, tmp_path)]) as connections:
        with connections.session(N) as session:
            start = time.monotonic()
            with pytest.raises(Unreachable) as error:
                session("trap '' TERM; sleep 20")
            assert 3 <= time.monotonic() - start < 6
            assert (error.value.host, error.value.kind) == (N, failures.LOST)
            assert str(error.value).startswith(f"{N}: no answer in 3 s: check that the host is up and not hung")
            assert session("echo again") == Answer(0, "again\n", "")
        assert started.ssh() == 2  # the hung one given up, not read on


def test_sshd_killed_mid_command_is_one_unreachable_naming_the_host_at_once(tmp_path):
    with running(tmp_path) as server, Connections([at(server, tmp_path)]) as connections:
        with connections.session(N) as session:
            assert session("echo up").out == "up\n"
            killer = threading.Timer(1, kill_server, [server.port])
            killer.start()
            start = time.monotonic()
            with pytest.raises(Unreachable) as error:
                session("sleep 30")
            killer.join()
            assert time.monotonic() - start < 10
            assert error.value.host == N and str(error.value).startswith(f"{N}: ")
            # The runner says the same of its own command lost so (ssh's words, failures.openssh), and now of the
            # port nobody listens on: so does the session.
            assert error.value.cause == failures.openssh(N, "").cause
            with pytest.raises(Unreachable) as again:
                session("true")
            assert again.value.kind == failures.REFUSED
            with pytest.raises(Unreachable) as runner:
                connections.runner(N)("true")
            assert runner.value.cause == again.value.cause


def test_connections_closed_under_a_command_in_flight_end_it_at_once(sshd, tmp_path):
    """As check's deadline does: the connections closed while a worker's command runs. That command is one
    Unreachable, at once, and the session runs nothing more."""
    connections = Connections([at(sshd, tmp_path)])
    session = connections.session(N)
    assert session("echo up").out == "up\n"
    raised: list[Unreachable] = []

    def worker() -> None:
        try:
            session("sleep 30")
        except Unreachable as error:
            raised.append(error)

    thread = threading.Thread(target=worker)
    thread.start()
    time.sleep(1)
    start = time.monotonic()
    connections.close()
    thread.join(timeout=10)
    assert not thread.is_alive() and time.monotonic() - start < 5
    assert [(e.host, e.cause) for e in raised] == [(N, "its session was closed")]
    with pytest.raises(Unreachable):
        session("true")


def test_captures_are_in_a_fresh_private_directory_gone_at_the_end(sshd, tmp_path):
    """Never a name the cluster's users could guess and plant a link at: mktemp -d's, 0700, its user's; the
    command's own standard output names the file."""
    with Connections([at(sshd, tmp_path)]) as connections:
        runner = connections.runner(N)
        first, second = connections.session(N), connections.session(N)
        out = Path(first("readlink /proc/self/fd/1").out.strip())
        other = Path(second("readlink /proc/self/fd/1").out.strip())
        assert re.fullmatch(r"/tmp/tmp\.[A-Za-z0-9]{10}", str(out.parent)), out
        assert out.parent != other.parent
        assert runner(f"stat -c '%a %U' {out.parent}").out == "700 root\n"
        first.close()
        assert runner(f"test -e {out.parent}").rc == 1
        assert runner(f"test -e {other.parent}").rc == 0
    # The second, left open by its user, was closed with the connections.
    with Connections([at(sshd, tmp_path)]) as later:
        assert later.runner(N)(f"test -e {other.parent}").rc == 1


@pytest.fixture(scope="module")
def sudo_sshd(sshd, tmp_path_factory):
    """The server with sudo, and three users of the key: admin (sudo as anyone, no password), checker and stranger
    (no sudo at all)."""
    files = subprocess.run(["dpkg", "-L", "sudo"], capture_output=True, text=True, check=False)
    if files.returncode != 0:
        skip_or_fail("needs this machine's sudo package (Debian's), to copy into the test's sshd root")
    tmp = tmp_path_factory.mktemp("sudo")
    with Connections([at(sshd, tmp)]) as connections:
        shipped = [f.lstrip("/") for f in files.stdout.split() if not f.startswith("/usr/share/")
                   and (os.path.islink(f) or os.path.isfile(f))]
        tar = subprocess.run(["tar", "-C", "/", "--no-recursion", "-cf", "-", *shipped], capture_output=True,
                             check=True).stdout
        subprocess.run(["ssh", "-F", str(connections.config), N, "tar -C / -xpf -"], input=tar, check=True,
                       timeout=60)
        made = connections.runner(N)("""set -e
            for user in admin checker stranger; do useradd -m -s /bin/bash -p '*' $user; done
            for user in admin stranger; do
                install -d -m 700 -o $user -g $user /home/$user/.ssh
                install -m 600 -o $user -g $user /root/.ssh/authorized_keys /home/$user/.ssh/
            done
            printf 'Defaults env_reset\\nadmin ALL=(ALL:ALL) NOPASSWD: ALL\\n' > /etc/sudoers
            chmod 440 /etc/sudoers
            echo "127.0.1.1 $(hostname)" >> /etc/hosts
            chmod 1777 /tmp  # as on a host (sshd.py's overlay made it 0755)""")
        assert made.rc == 0, made
    return sshd


@pytest.mark.parametrize("sudo_user", ["checker", None])
def test_through_sudo_the_session_answers_as_the_runner(sudo_sshd, tmp_path, sudo_user):
    data = {"_sudo": True, **({"_sudo_user": sudo_user} if sudo_user else {})}
    with Connections([at(sudo_sshd, tmp_path, "admin", **data)]) as connections:
        runner = connections.runner(N)
        with connections.session(N) as session:
            for command in ["id -un; echo err >&2; exit 4", *COMMANDS]:
                assert session(command) == runner(command), command
            assert session("id -un").out == f"{sudo_user or 'root'}\n"
            out = Path(session("readlink /proc/self/fd/1").out.strip())
            assert runner(f"stat -c '%a %U' {out.parent}").out == f"700 {sudo_user or 'root'}\n"
        assert runner(f"test -e {out.parent}").rc == 1


def test_a_sudo_that_refuses_is_said_as_the_runner_says_it(sudo_sshd, tmp_path):
    target = at(sudo_sshd, tmp_path, "stranger", _sudo=True)
    with Connections([target]) as connections:
        said = answers(connections.runner(N), target.reach)
        with connections.session(N) as session:
            with pytest.raises(Unreachable) as error:
                session("true")
            assert answers(session, target.reach) == said
    assert said is not None and said.startswith("sudo asks stranger for a password (sudo: a password is required)")
    assert error.value.kind == failures.SUDO and error.value.cause == said


def kill_server(port: int) -> None:
    """SIGKILL to the sshd listening on ``port`` and all it started (each connection's sshd is in a session of its
    own: killing the listener's group leaves them)."""
    for pid in descendants(listener(port)):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def listener(port: int) -> int:
    for pid, (_, words) in processes().items():
        if words.startswith("sshd: ") and f" -p {port} " in words:
            return pid
    raise AssertionError(f"no sshd listens on port {port}")


def descendants(root: int) -> set[int]:
    parents = {pid: parent for pid, (parent, _) in processes().items()}
    found = {root}
    while grown := {pid for pid, parent in parents.items() if parent in found} - found:
        found |= grown
    return found


def processes() -> dict[int, tuple[int, str]]:
    """Each process: its parent, and its command line (sshd rewrites its own)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            words = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found[int(entry)] = (int(stat.rsplit(")", 1)[1].split()[1]), words)
    return found
