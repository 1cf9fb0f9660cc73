"""Why a host was not reached, said one way (reach/failures.py): against real servers on loopback (Debian's sshd,
tests/reach/sshd.py; a closed port; a server that answers HTTP; a port whose queue is full, so nothing answers in
time), a name that cannot resolve and a network namespace with no route, each reached both ways (tests/reach/sides.py):
OpenSSH through the operations' connections and pyinfra's connector (paramiko). Each situation is one line, "HOST:
what happened: what to check", the same from both, and from pyinfra's words alone (what `plan` reads)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clusters import small_cluster
from needs import skip_or_fail
from reach import sides
from reach.sshd import BEHIND, free_port, running

from clusterforge.model import resolve
from clusterforge.reach import failures, hosts
from clusterforge.reach.hosts import Reach, Target
from clusterforge.reach.ssh import Connections, Unreachable, answers

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")
VALID = resolve(small_cluster())
CTL = next(m for m in VALID.machines if m.name == VALID.controller.name)
N = CTL.name
TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """An empty HOME: no test reads or writes the real ~/.ssh."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    with running(tmp_path_factory.mktemp("sshd")) as server:
        yield server


def at(port: int, **data) -> Target:
    return Target(CTL, {"ssh_hostname": "127.0.0.1", "ssh_port": port, "ssh_user": "root", **data})


def said_alike(target: Target, line: str, timeout: int | None = None) -> None:
    said = sides.both(target, timeout)
    assert said == sides.Said(line, line, line)


def test_a_closed_port_is_refused_alike():
    port = free_port()
    said_alike(at(port), f"{N}: connection refused by 127.0.0.1 port {port}: check that sshd runs there, and "
                         "ssh_port in the inventory")


def test_a_port_that_answers_http_does_not_speak_ssh_alike():
    with sides.answering_http() as port:
        said_alike(at(port), f"{N}: 127.0.0.1 port {port} does not speak SSH: check ssh_port in the inventory, and "
                             "that sshd listens there")


def test_a_port_where_nothing_answers_in_time_is_unreachable_alike(monkeypatch):
    # A listening socket whose queue (listen(0)) is full drops every further SYN: the connection times out, as to a
    # host that is down. Bounded by the connect timeout, 2 s here for both.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    filling = []
    for _ in range(2):
        client = socket.socket()
        client.setblocking(False)
        client.connect_ex(("127.0.0.1", port))
        filling.append(client)
    time.sleep(0.2)
    monkeypatch.setattr(hosts, "CONNECT_TIMEOUT", 2)
    start = time.monotonic()
    try:
        said_alike(at(port), f"{N}: 127.0.0.1 unreachable (timed out on port {port}): check that the host is up, "
                             "its address, and firewalls on the way", timeout=2)
    finally:
        for client in filling:
            client.close()
        server.close()
    assert time.monotonic() - start < 15


def test_a_name_that_does_not_resolve_is_said_alike():
    target = Target(CTL, {"ssh_hostname": "nohost.invalid", "ssh_user": "root"})
    said_alike(target, f"{N}: name nohost.invalid not resolved: check its address in the inventory "
                       "(ssh_hostname), and DNS or /etc/hosts here")


def test_no_route_is_unreachable_alike(tmp_path):
    """In a network namespace of its own (no interface up), every address is 'Network is unreachable' at once."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        skip_or_fail("needs root and unshare, for a network namespace with no route")
    done = subprocess.run(["unshare", "--net", sys.executable, "-m", "reach.sides", "198.51.100.1"],
                          cwd=TESTS, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), *sys.path])},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    line = (f"{N}: 198.51.100.1 unreachable (no route): check its address, and this machine's network, routes or "
            "VPN")
    assert json.loads(done.stdout.splitlines()[-1]) == {"openssh": line, "pyinfra": line, "pyinfra_text": line}


def test_a_key_sshd_does_not_accept_is_authentication_failed_alike(sshd, tmp_path):
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    target = at(sshd.port, ssh_key=str(other), ssh_known_hosts_file=str(tmp_path / "known_hosts"))
    said_alike(target, f"{N}: authentication failed as root: check ssh_user/ssh_key in the inventory, or that the "
                       "key is in the host's authorized_keys (ssh-agent: ssh-add -l)")
    assert str(other) not in sides.openssh(target)


def host_key_line(port: int, known: Path) -> str:
    return (f"{N}: host key of [127.0.0.1]:{port} changed: if the host was reinstalled, ssh-keygen -f {known} -R "
            f"'[127.0.0.1]:{port}'; if not, someone may be in between")


@pytest.mark.parametrize("strict", ["accept-new", "yes"])
def test_a_changed_host_key_is_refused_alike_and_kept(sshd, tmp_path, strict):
    known = tmp_path / "known_hosts"
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    kind, key = (tmp_path / "stranger.pub").read_text().split()[:2]
    known.write_text(f"[127.0.0.1]:{sshd.port} {kind} {key}\n")
    target = at(sshd.port, ssh_key=str(sshd.key), ssh_known_hosts_file=str(known),
                ssh_strict_host_key_checking=strict)
    said_alike(target, host_key_line(sshd.port, known))
    assert known.read_text() == f"[127.0.0.1]:{sshd.port} {kind} {key}\n"  # neither replaced the key


def test_an_unknown_host_key_under_strict_checking_is_refused_alike(sshd, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text("")
    target = at(sshd.port, ssh_key=str(sshd.key), ssh_known_hosts_file=str(known), ssh_strict_host_key_checking="yes")
    said_alike(target, f"{N}: host key of [127.0.0.1]:{sshd.port} unknown, and checking is strict: add its key to "
                       f"{known}, or set ssh_strict_host_key_checking=\"accept-new\"")
    assert known.read_text() == ""


def test_a_sudo_that_is_not_there_is_sudo_refused_in_sudo_py_s_words(sshd, tmp_path):
    target = at(sshd.port, ssh_key=str(sshd.key), ssh_known_hosts_file=str(tmp_path / "known_hosts"), _sudo=True)
    with Connections([target]) as connections:
        said = answers(connections.runner(N), target.reach)
    assert said is not None and said.startswith("root cannot run commands through sudo there (")  # no sudo there
    assert said.endswith("), which the inventory asks for (sudo=True)") and "sudo" in said.split("(", 1)[1]
    assert failures.sudo_refused(N, "root", "sudo: command not found").line == (
        f"{N}: root cannot run commands through sudo there (sudo: command not found), which the inventory asks for "
        "(sudo=True)")


def test_a_fresh_home_learns_the_key_once_for_the_deploy_and_the_operations(sshd, home):
    """No ~/.ssh (a new account): pyinfra's connector cannot append the key it accepts, unless known_hosts.ensure
    made the directory first; then OpenSSH reads that same file ($HOME's, not the password database's home)."""
    from clusterforge.reach import known_hosts

    target = at(sshd.port, ssh_key=str(sshd.key))  # pyinfra's default policy and known_hosts
    assert sides.pyinfra(target)[0] == (f"{N}: its host key cannot be recorded ({home}/.ssh/known_hosts: no such "
                                        f"directory): make it (mkdir -m 700 {home}/.ssh), or check "
                                        "ssh_known_hosts_file in the inventory")
    known = known_hosts.ensure()
    assert known == home / ".ssh" / "known_hosts"
    assert (home / ".ssh").stat().st_mode & 0o777 == 0o700 and known.stat().st_mode & 0o777 == 0o600
    assert sides.pyinfra(target) == (sides.REACHED, sides.REACHED)
    learnt = known.read_text()
    assert learnt.startswith(f"[127.0.0.1]:{sshd.port} ssh-")
    # The operations: strict checking, so only a key in that very file lets them in; then accept-new, learning
    # nothing new.
    assert sides.openssh(at(sshd.port, ssh_key=str(sshd.key), ssh_strict_host_key_checking="yes")) == sides.REACHED
    assert sides.openssh(target) == sides.REACHED
    assert known.read_text() == learnt


def test_a_proxyjump_the_user_s_config_gives_by_address_is_taken_both_ways(sshd, home):
    """A bastion from ~/.ssh/config, written as `Match host ADDRESS` (pyinfra looks up the host's address, OpenSSH
    its inventory name, then its address): both go through it. The test's sshd is the bastion, and the host a name
    only it resolves (to itself)."""
    from clusterforge.reach import known_hosts

    known_hosts.ensure()
    target = Target(CTL, {"ssh_hostname": BEHIND, "ssh_port": sshd.port, "ssh_user": "root", "ssh_key": str(sshd.key)})
    assert sides.openssh(target).startswith(f"{N}: name {BEHIND} not resolved: ")  # not from here
    (home / ".ssh" / "config").write_text(
        f"Match host {BEHIND}\n  ProxyJump root@127.0.0.1:{sshd.port}\n\n"
        f"Host 127.0.0.1\n  IdentityFile {sshd.key}\n  StrictHostKeyChecking accept-new\n")
    assert sides.both(target) == sides.Said(sides.REACHED, sides.REACHED, sides.REACHED)
    learnt = (home / ".ssh" / "known_hosts").read_text()  # one known_hosts: the bastion's key and the host's
    assert f"[127.0.0.1]:{sshd.port} " in learnt and f"[{BEHIND}]:{sshd.port} " in learnt


def test_a_connection_that_breaks_and_an_unknown_failure_are_said_with_ssh_s_words():
    broke = failures.openssh(N, "Connection to 10.0.0.1 closed by remote host.\n")
    assert (broke.kind, broke.line) == (failures.LOST, f"{N}: the connection broke (Connection to 10.0.0.1 closed by "
                                                        "remote host.): check that the host is still up, and the "
                                                        "network on the way")
    odd = failures.openssh(N, "ControlPath too long\n")
    assert (odd.kind, odd.line) == (failures.OTHER, f"{N}: could not be reached: ControlPath too long")
    assert failures.openssh(N, "").line == f"{N}: could not be reached: ssh failed"
    assert len(failures.openssh(N, "x" * 1000).line) < 250


def test_paramiko_s_exceptions_are_told_apart_by_their_own_errors():
    from paramiko.ssh_exception import AuthenticationException, NoValidConnectionsError

    reach = Reach(N, "10.0.0.1", user="admin", port=2222)
    refused = NoValidConnectionsError({("10.0.0.1", 2222): ConnectionRefusedError(errno.ECONNREFUSED, "refused")})
    no_route = NoValidConnectionsError({("10.0.0.1", 2222): OSError(errno.EHOSTUNREACH, "No route to host")})
    assert failures.pyinfra(N, refused, reach).kind == failures.REFUSED
    assert failures.pyinfra(N, no_route, reach).line == (
        f"{N}: 10.0.0.1 unreachable (no route): check its address, and this machine's network, routes or VPN")
    assert failures.pyinfra(N, AuthenticationException("Authentication failed."), reach).line.startswith(
        f"{N}: authentication failed as admin: ")
    assert failures.pyinfra(N, socket.gaierror(-2, "Name or service not known"), reach).kind == failures.NAME
    # pyinfra's words alone, as `plan` reads them from its output.
    said = "Authentication error (username=admin, key=/home/admin/.ssh/id_ed25519) (Authentication failed.)"
    assert failures.pyinfra(N, said).line.startswith(f"{N}: authentication failed as admin: ")
    assert "id_ed25519" not in failures.pyinfra(N, said).line
    missing = "No such private key file: /var/lib/cf/id_ed25519"  # pyinfra's, before it connects
    assert failures.pyinfra(N, missing, reach).line == failures.pyinfra(N, said, reach).line
    assert failures.pyinfra(N, "Could not connect ([Errno None] Unable to connect to port 22 on 10.0.0.9)").line == (
        f"{N}: connection refused by 10.0.0.9 port 22: check that sshd runs there, and ssh_port in the inventory")
    assert failures.pyinfra(N, "SSH error (something new)").line == f"{N}: could not be reached: SSH error " \
                                                                    "(something new)"


def test_the_operations_unreachable_is_failures_line():
    port = free_port()
    with Connections([at(port)]) as connections, pytest.raises(Unreachable) as error:
        connections.runner(N)("true")
    assert (error.value.host, error.value.kind) == (N, failures.REFUSED)
    assert str(error.value) == f"{N}: {error.value.cause}" == failures.openssh(
        N, f"ssh: connect to host 127.0.0.1 port {port}: Connection refused", at(port).reach).line
