"""The operations' connections (reach/ssh.py) over OpenSSH: to a real sshd (tests/reach/sshd.py), with the inventory's
SSH settings, learning a new host's key as pyinfra does; to a port nobody listens on, one Unreachable naming the host,
what happened and what to check; through testinfra's sudo where the inventory says so."""

from __future__ import annotations

import shutil

import pytest
from clusters import small_cluster
from reach.sshd import free_port, running

from clusterforge.model import resolve
from clusterforge.reach.hosts import Target
from clusterforge.reach.ssh import Connections, Unreachable, answers
from clusterforge.slurm.commands import Answer

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the OpenSSH client")
VALID = resolve(small_cluster())
CTL = next(m for m in VALID.machines if m.name == VALID.controller.name)


def test_commands_run_on_a_real_sshd_as_the_inventory_says(tmp_path):
    with running(tmp_path) as sshd:
        known = tmp_path / "known_hosts"
        target = Target(CTL, {"ssh_hostname": "127.0.0.1", "ssh_port": sshd.port, "ssh_user": "root",
                              "ssh_key": str(sshd.key), "ssh_known_hosts_file": str(known)})
        connections = Connections([target])
        try:
            run = connections.runner(CTL.name)
            assert answers(run, target.reach) is None
            assert run("echo out; echo err >&2; id -un; exit 3") == Answer(3, "out\nroot\n", "err\n")
            assert run("sleep 0; echo $((6 * 7))").out == "42\n"  # the same master connection, again
        finally:
            connections.close()
        # A new host's key learnt (pyinfra's default, accept-new), into the inventory's known_hosts.
        assert f"[127.0.0.1]:{sshd.port} ssh-" in known.read_text()


def test_a_host_nobody_answers_on_is_one_unreachable_naming_it_what_happened_and_what_to_check():
    port = free_port()
    target = Target(CTL, {"ssh_hostname": "127.0.0.1", "ssh_port": port, "ssh_user": "root"})
    connections = Connections([target])
    try:
        with pytest.raises(Unreachable) as error:
            connections.runner(CTL.name)("true")
        assert error.value.host == CTL.name
        assert error.value.cause == (f"connection refused by 127.0.0.1 port {port}: check that sshd runs there, and "
                                     "ssh_port in the inventory")  # tests/reach/test_failures.py: every kind
        assert str(error.value) == f"{CTL.name}: {error.value.cause}"
        assert answers(connections.runner(CTL.name), target.reach) == error.value.cause
    finally:
        connections.close()


def test_connections_go_through_sudo_where_the_inventory_says_so():
    through_sudo = Target(VALID.machines[0], {"ssh_user": "admin", "_sudo": True, "_sudo_user": "operator"})
    as_root = Target(VALID.machines[1], {"ssh_user": "root"})
    connections = Connections([through_sudo, as_root])
    try:
        backend = connections.host(through_sudo.name).backend
        assert (backend.sudo, backend.sudo_user) == (True, "operator")
        assert backend.get_command("true") == "sudo -u operator /bin/sh -c true"
        assert connections.host(as_root.name).backend.sudo is False
        assert "User admin" in connections.config.read_text()
    finally:
        connections.close()


def test_a_sudo_that_wants_a_password_is_said_so_naming_the_user():
    through_sudo = Target(CTL, {"ssh_user": "admin", "_sudo": True})
    said = answers(lambda command: Answer(1, "", "sudo: a terminal is required to read the password\n"
                                                 "sudo: a password is required\n"), through_sudo.reach)
    assert said is not None and said.startswith("sudo asks admin for a password (sudo: a password is required)")
    assert "NOPASSWD" in said
    assert answers(lambda command: Answer(0, "", ""), through_sudo.reach) is None
