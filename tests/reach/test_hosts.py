"""How a host is reached (reach/hosts.py): read once from the inventory's pyinfra host data, the same as pyinfra's own
SSH connector reads it for the deploy (its address, user, port, known_hosts, host key checking and connect timeout,
pyinfra's defaults where the inventory gives none), and written as an ssh_config for the operations."""

from __future__ import annotations

import pytest
from clusters import small_cluster

from clusterforge.inventory import host_groups
from clusterforge.model import resolve
from clusterforge.reach import hosts
from clusterforge.reach.hosts import Reach, load, ssh_config


def test_the_ssh_config_carries_the_inventorys_ssh_settings():
    _, targets = load("inventories/vagrant.py")
    text = ssh_config(targets)
    block = text.split("\n\n")[[t.name for t in targets].index("gpu01")]
    assert block.splitlines() == [
        "Host gpu01", "  HostName 10.77.0.11", "  User vagrant",
        "  IdentityFile /var/lib/clusterforge-testbed/id_ed25519", "  IdentitiesOnly yes",
        "  UserKnownHostsFile /dev/null", "  StrictHostKeyChecking no"]
    assert "  BatchMode yes" in text and f"  ConnectTimeout {hosts.CONNECT_TIMEOUT}" in text
    assert all(t.sudo and t.sudo_user is None for t in targets)  # the test cluster's vagrant runs all through sudo


def pyinfra_view(**data):
    """pyinfra's SSH connector's arguments to paramiko for the first host of a cluster with ``data``, and that
    host's Reach."""
    from pyinfra.api import Config, Inventory, State

    groups = host_groups(small_cluster(), **data)
    listed = [host for group in groups for host in group]
    inventory = Inventory((listed, {}))
    State(inventory, Config())
    host = inventory.get_host(listed[0][0])
    return host.connector.make_paramiko_kwargs(), Reach.of(host.name, host.data)


@pytest.mark.parametrize("data", [
    {"ssh_user": "admin", "ssh_port": 2222, "ssh_known_hosts_file": "/etc/cf/known_hosts", "sudo": True},
    {"ssh_user": "root", "ssh_strict_host_key_checking": "off"},
    {},
], ids=["given", "strict-off", "defaults"])
def test_the_operations_reach_a_host_as_pyinfras_connector_does_for_the_deploy(data):
    paramiko, reach = pyinfra_view(**data)
    assert reach.hostname == paramiko["hostname"]
    assert reach.user == paramiko.get("username") and reach.port == paramiko.get("port")
    assert reach.known_hosts == paramiko["_pyinfra_ssh_known_hosts_file"]
    assert reach.strict == paramiko["_pyinfra_ssh_strict_host_key_checking"]
    assert hosts.CONNECT_TIMEOUT == paramiko["timeout"]
    assert reach.sudo == bool(data.get("sudo"))


def test_the_ssh_config_says_the_host_key_rule_in_openssh_words():
    assert Reach("h", "10.0.0.1").ssh_config().splitlines()[-1] == "  StrictHostKeyChecking accept-new"
    for pyinfra_word, openssh in [("off", "no"), ("accept-new", "accept-new"), ("yes", "yes"), ("ask", "yes"),
                                  ("whatever", "yes")]:
        assert Reach("h", "10.0.0.1", strict=pyinfra_word).ssh_config().endswith(f"StrictHostKeyChecking {openssh}")


def test_sudo_settings_are_pyinfras_own_host_data_passed_on():
    data = {"_sudo": True, "_sudo_user": "operator", "_preserve_sudo_env": False, "ssh_user": "admin"}
    assert hosts.sudo_arguments(data) == {"_sudo": True, "_sudo_user": "operator"}
    assert hosts.uses_sudo(data) and not hosts.uses_sudo({"ssh_user": "root"})
    assert Reach.of("n", data).who == "admin" and Reach.of("n", {}).who == "the SSH user"


def test_the_operations_check_host_keys_against_the_known_hosts_pyinfra_uses(tmp_path, monkeypatch):
    """$HOME's ~/.ssh/known_hosts, as paramiko expands it (OpenSSH alone would take the password database's home),
    after any the user's ~/.ssh/config names (pyinfra takes that one first too); the inventory's before both, ~
    expanded the same way; no global known_hosts, which pyinfra never reads."""
    monkeypatch.setenv("HOME", str(tmp_path))
    text = ssh_config([hosts.Target(m, {}) for m in resolve(small_cluster()).machines[:1]])
    blocks = text.split("\n\n")
    assert "  UserKnownHostsFile" not in blocks[0]
    assert "  GlobalKnownHostsFile none" in blocks[-2].splitlines()
    assert blocks[-1].splitlines() == ["Host *", f"  UserKnownHostsFile {tmp_path}/.ssh/known_hosts"]
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "config").write_text("Host *\n  UserKnownHostsFile ~/elsewhere\n")
    text = ssh_config([hosts.Target(m, {}) for m in resolve(small_cluster()).machines[:1]])
    assert text.index(f"Include {tmp_path}/.ssh/config") < text.index(f"UserKnownHostsFile {tmp_path}/.ssh/known_hosts")
    given = Reach("h", "10.0.0.1", key="~/keys/id", known_hosts="~/cluster known_hosts")
    assert given.known_hosts_path == f"{tmp_path}/cluster known_hosts"
    assert f'  UserKnownHostsFile "{tmp_path}/cluster known_hosts"' in given.ssh_config().splitlines()
    assert f"  IdentityFile {tmp_path}/keys/id" in given.ssh_config().splitlines()
    assert Reach("h", "10.0.0.1").known_hosts_path == f"{tmp_path}/.ssh/known_hosts"
