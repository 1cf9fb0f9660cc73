"""The check run on real SSH connections that cannot be made (no test cluster needed): a host that cannot be
reached is "could not check" (exit 2), named with ssh's reason, and the other hosts are still checked. A host's
checks run through one session of its own (reach/ssh.py), a fake of it here; tests/reach/test_session.py runs the
real one."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from dataclasses import replace

import pytest

from clusterforge.check import exit_status, report
from clusterforge.check.probes import checks_for
from clusterforge.check.run import WORKERS, check_cluster, check_host
from clusterforge.reach.failures import LOST
from clusterforge.reach.hosts import Target, load
from clusterforge.reach.ssh import Unreachable
from clusterforge.slurm.commands import Answer

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on return: connections to it are refused


def test_unreachable_hosts_are_could_not_check_and_exit_2(tmp_path):
    valid, targets = load("inventories/vagrant.py")
    port = _closed_port()
    unreachable = [Target(t.machine, {**t.data, "ssh_hostname": "127.0.0.1", "ssh_port": port}) for t in targets]
    start = time.monotonic()
    outcomes = check_cluster(valid, unreachable)
    assert time.monotonic() - start < 30  # every host at once, each refused at once
    assert {o.host for o in outcomes} == {t.name for t in targets}
    assert {(o.check, o.status) for o in outcomes} == {("reach", "UNCHECKED")}
    assert all("refused" in o.findings[0].message for o in outcomes), outcomes[0]
    assert exit_status(outcomes) == 2
    assert report.table(outcomes).endswith("could not check everything (exit 2)")


def test_limit_keeps_the_hosts_named_and_the_controller_for_slurms_view():
    valid, targets = load("inventories/vagrant.py")
    port = _closed_port()
    unreachable = [Target(t.machine, {**t.data, "ssh_hostname": "127.0.0.1", "ssh_port": port}) for t in targets]
    outcomes = check_cluster(valid, unreachable, limit=frozenset({"gpu02"}))
    assert [o.host for o in outcomes] == ["ctl", "gpu02"]



class _Gathering:
    """A TCP server that says nothing and holds each connection until ``expected`` are open at once (or 20 s have
    passed), then closes them all: how many a check had open together, counted by the server."""

    def __init__(self, expected: int) -> None:
        self.expected, self.most = expected, 0
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(20)
        self.port = self.server.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        held: list[socket.socket] = []
        try:
            while len(held) < self.expected:
                held.append(self.server.accept()[0])
                self.most = max(self.most, len(held))
        except TimeoutError:
            pass
        for connection in held:
            connection.close()
        self.server.close()


def test_every_host_is_connected_to_at_once_not_in_waves_of_workers():
    valid, targets = load("inventories/vagrant.py")
    many = 40  # more than the hosts checked at a time (check.run.WORKERS)
    assert many > WORKERS
    server = _Gathering(many)
    hosts = [Target(replace(targets[-1].machine, name=f"far{i:02d}"),
                    {**targets[-1].data, "ssh_hostname": "127.0.0.1", "ssh_port": server.port}) for i in range(many)]
    said: list[str] = []
    outcomes = check_cluster(valid, hosts, say=said.append)
    server.thread.join(timeout=30)
    assert server.most == many  # all open together: unreachable hosts cost one wait, whatever their number
    assert {(o.check, o.status) for o in outcomes} == {("reach", "UNCHECKED")} and len(outcomes) == many
    assert said == ["connecting to 40 hosts", "checking 0 hosts; 40 could not be reached"]


class _Session:
    """A session as reach/ssh.py's: called with each command, a context manager; the host lost at command number
    ``lost_at``."""

    def __init__(self, lost_at: int) -> None:
        self.commands: list[str] = []
        self.lost_at, self.closed = lost_at, 0

    def __call__(self, command: str) -> Answer:
        self.commands.append(command)
        if len(self.commands) == self.lost_at:
            raise Unreachable("gpu01", "the connection broke (Broken pipe)", LOST)
        return Answer(1, "", "not here\n")

    def __enter__(self) -> _Session:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.closed += 1


class _Connections:
    """Connections as check_host takes them: its sessions counted; the runner is not for check_host."""

    def __init__(self, session: _Session) -> None:
        self.session_of, self.opened = session, []

    def session(self, name: str) -> _Session:
        self.opened.append(name)
        return self.session_of

    def runner(self, name: str):
        raise AssertionError("check_host runs its commands through one session")


def test_a_hosts_checks_run_through_one_session_closed_at_their_end():
    valid, targets = load("inventories/vagrant.py")
    target = next(t for t in targets if t.name == "gpu01")
    session = _Session(lost_at=2)
    connections = _Connections(session)
    outcomes = check_host(target, valid, connections, smoke=False, credential="MUNGE:cred", memory_tolerance=None,
                          limit=None)
    assert connections.opened == ["gpu01"] and session.closed == 1
    assert [o.check for o in outcomes] == [c.name for c in checks_for(target.machine, valid, False)]
    # The check whose command found the host gone is not checked; the others still ran, through the same session.
    lost = [o for o in outcomes if o.status == "UNCHECKED"]
    assert len(lost) == 1 and lost[0].findings[0].message == ("could not check: connection lost: the connection "
                                                               "broke (Broken pipe)")
    assert len(session.commands) > len(outcomes) / 2
