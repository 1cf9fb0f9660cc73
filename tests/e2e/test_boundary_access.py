"""End to end: the service hosts are for admins (render/access.py, roles/access.py; issue 46). On the running test
cluster, ctl (controller, database and NFS server) refuses a person's SSH login, declared (alice, with her own key)
or from the directory (dave), with the message that names the rule, and offers them no password; carol (ops, the
admin group) and vagrant (the user the deploy logs in as) get in; alice still logs in to the login host.

Cheap: a handful of SSH logins on the cluster the session already deployed. dave's part runs inside
tests/e2e/test_directory.py's flow (``refused_by_the_service_host(config, "dave")``), where the cluster is switched to
the site directory once for both.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from e2e.testbed import MACHINES, SSH_USER, STATE

pytestmark = pytest.mark.e2e

CTL, LOGIN = MACHINES["ctl"], MACHINES["login1"]
RULE = "Access denied by clusterforge: ctl is a service host of cluster vagrant"
WHERE = "/etc/security/access-clusterforge-service.conf"


def ssh(config: Path, user: str, address: str, command: str, *options: str) -> subprocess.CompletedProcess[str]:
    """``command`` as ``user``. LogLevel INFO: sshd hands the account stack's message to the client as a banner,
    which ssh prints only from that level on."""
    return subprocess.run(["ssh", "-F", str(config), "-o", "LogLevel=INFO", *options, f"{user}@{address}", command],
                          check=False, text=True, capture_output=True, timeout=60)


def refused_by_the_service_host(config: Path, user: str, address: str = CTL) -> None:
    """``user`` (with the key ``config`` names) is refused by the service host with the rule's message, and offered
    no password there."""
    out = ssh(config, user, address, "echo ran")
    assert out.returncode == 255 and "ran" not in out.stdout, (out.returncode, out.stdout, out.stderr)
    assert RULE in out.stderr and WHERE in out.stderr, out.stderr
    password = ssh(config, user, address, "true", "-o", "PreferredAuthentications=password,keyboard-interactive",
                   "-o", "PubkeyAuthentication=no")
    methods = password.stderr.rsplit("Permission denied (", 1)[-1].split(")", 1)[0]
    assert password.returncode == 255 and "password" not in methods, password.stderr


@pytest.fixture(scope="module")
def configs(testbed, tmp_path_factory) -> Path:
    """An ssh_config per login: each person's own key (testbed/up.sh made them), and vagrant's."""
    directory = tmp_path_factory.mktemp("boundary")
    keys = {name: STATE / "people" / name for name in ("alice", "carol")} | {SSH_USER: STATE / "id_ed25519"}
    for name, key in keys.items():
        assert key.exists(), f"testbed/up.sh made no key {key}"
        (directory / name).write_text(f"Host *\n  IdentityFile {key}\n  IdentitiesOnly yes\n"
                                      "  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  BatchMode yes\n"
                                      "  ConnectTimeout 10\n")
    return directory


def test_ctl_refuses_a_declared_person_with_the_rule_and_takes_the_admin_group_and_the_deploy(testbed, configs):
    if os.environ.get("CLUSTERFORGE_TESTBED_IDENTITY") == "directory":
        pytest.skip("the cluster runs with the site directory: the declared people are not there")
    refused_by_the_service_host(configs / "alice", "alice")
    for user in ("carol", SSH_USER):
        out = ssh(configs / user, user, CTL, "id -un")
        assert out.returncode == 0 and out.stdout.strip() == user, (user, out.stderr)
    # Login hosts keep their rule: alice logs in there.
    out = ssh(configs / "alice", "alice", LOGIN, "id -un")
    assert out.returncode == 0 and out.stdout.strip() == "alice", out.stderr
    # What the deploy wrote, and check's judgement of it, on ctl
    stack = testbed.run(CTL, "cat /etc/pam.d/sshd")
    assert f"pam_access.so accessfile={WHERE}" in stack
    listed = [line for line in testbed.run(CTL, f"cat {WHERE}").splitlines() if not line.startswith("#")]
    assert listed == ["+:root:ALL", f"+:{SSH_USER}:ALL", "+:(ops):ALL", "-:ALL:ALL"]

