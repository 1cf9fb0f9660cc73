"""auth/slurm in the deploy, without containers: which hosts get slurm.key, sackd and munge, the restart order after
a new key, the refusal of a limited key change, and no key bytes in the output.

The real deploy/cluster.py runs under the pyinfra CLI on @fake hosts (pyinfra's simulating connector: every command
"succeeds" with canned output, so the operations really run without touching anything; -vvv echoes each command
with its host). Vault is replaced inside the inventory file by fixed secrets.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from clusters import small_cluster
from vault.vault_cases import assert_no_leak

from clusterforge.loader import load_cluster
from clusterforge.model import Host, Vault, resolve
from clusterforge.roles.slurm_key import DAEMONS, key_daemons, runs_sackd
from clusterforge.secrets.cluster import SLURM_KEY, kinds_for
from clusterforge.secrets_cli import _NEXT_DEPLOY

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
PYINFRA = str(Path(sys.executable).with_name("pyinfra"))
SLURM_KEY_BYTES = hashlib.sha512(b"slurm.key").digest() * 4  # 256 bytes
OLD_SHA1 = hashlib.sha1(b"the previous key").hexdigest()
NODES = ("gpu01", "gpu02", "gpu03", "gpu04")  # small_cluster's
HOSTS = {"ctl", "login1", *NODES}
SERVICES = ("slurmdbd", "slurmctld", "slurmd", "sackd", "munge", "mariadb", "chrony")


# --- which host runs what ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("groups", "sackd", "daemons"), [
    (("login",), True, ["sackd"]),
    (("login", "database"), True, ["slurmdbd", "sackd"]),  # slurmdbd's socket is /run/slurmdbd, no clash
    (("login", "compute"), False, ["slurmd"]),              # slurmd serves /run/slurm/sack.socket itself
    (("controller", "login"), False, ["slurmctld"]),
    (("controller", "database", "nfs"), False, ["slurmdbd", "slurmctld"]),
    (("compute",), False, ["slurmd"]),
    (("nfs",), False, []),
])
def test_sackd_only_where_no_slurm_daemon_hands_out_credentials(groups, sackd, daemons):
    assert runs_sackd(groups) is sackd
    assert key_daemons(groups) == daemons


def test_the_restart_order_is_slurmdbd_slurmctld_slurmd_sackd_and_the_cli_says_so():
    assert [daemon for _, daemon in DAEMONS] == ["slurmdbd", "slurmctld", "slurmd", "sackd"]
    text = _NEXT_DEPLOY[SLURM_KEY.name]
    assert "/etc/slurm/slurm.key" in text and "slurmdbd, slurmctld, slurmd, sackd" in text


def test_auth_slurm_clusters_have_a_slurm_key_secret():
    valid = resolve(small_cluster(slurm_version="24.11", auth="slurm"))
    assert SLURM_KEY in kinds_for(valid)
    assert SLURM_KEY not in kinds_for(resolve(small_cluster()))


@pytest.mark.parametrize(("dist", "auth"), [("trixie", "slurm"), ("bookworm", "munge")])
def test_the_test_cluster_uses_auth_slurm_on_debian_13_and_munge_on_debian_12(monkeypatch, dist, auth):
    monkeypatch.setenv("CLUSTERFORGE_TESTBED_DIST", dist)
    monkeypatch.delenv("CLUSTERFORGE_TESTBED_AUTH", raising=False)
    assert resolve(load_cluster(REPO / "inventories" / "vagrant.py")).auth == auth


def test_the_test_cluster_auth_can_be_chosen(monkeypatch):
    monkeypatch.setenv("CLUSTERFORGE_TESTBED_DIST", "trixie")
    monkeypatch.setenv("CLUSTERFORGE_TESTBED_AUTH", "munge")
    assert resolve(load_cluster(REPO / "inventories" / "vagrant.py")).auth == "munge"


# --- the deploy on @fake hosts -----------------------------------------------------------------------------------

INVENTORY = """\
from clusters import small_cluster

from clusterforge.inventory import host_groups
from clusterforge.model import Host, Vault
from clusterforge.secrets import Secret
from clusterforge.secrets.cluster import ClusterSecrets

_VALUES = {{"munge-key": b"m" * 64, "db-password": b"Tr0ub4dor-and-3", "slurm-key": {key!r}}}


def _read(self, kind, version=None):  # Vault stand-in: the deploy's one way to a secret
    return Secret(_VALUES[kind.name], kind.label), None


ClusterSecrets.read = _read
_cluster = small_cluster(slurm_version="24.11", auth={auth!r}, login=(Host("login1", address="10.9.0.7"),),
                         vault=Vault(address="http://127.0.0.1:1"))
_responses = {responses!r}
_groups = host_groups(_cluster, fake_delay=0, fake_delay_jitter=0, fake_responses=_responses)
# The same hosts, reached through the @fake connector.
controller, compute, login, database, nfs = ([(f"@fake/{{name}}", data) for name, data in group] for group in _groups)
"""

BARE = {"systemd-detect-virt": "none", "uname -s": "Linux", "command -v useradd": "/usr/sbin/useradd",
        "command -v groupadd": "/usr/sbin/groupadd"}
# A converged host: every unit runs, and an older slurm.key (or any other file) is installed.
RUNNING = {**BARE, "systemctl show": [line for unit in SERVICES for line in (f"Id={unit}.service", "SubState=running")],
           "sha1sum": f"{OLD_SHA1}  /etc/slurm/slurm.key"}


def deploy(tmp_path: Path, *args: str, auth: str = "slurm", responses: dict | None = None) -> tuple[int, str]:
    inventory = tmp_path / "hosts.py"
    inventory.write_text(INVENTORY.format(key=SLURM_KEY_BYTES, auth=auth, responses=responses or BARE))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "BAO_"))}
    env.update(PYINFRA_PROGRESS="off", PYTHONPATH=os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")]))
    result = subprocess.run([PYINFRA, "-y", "-vvv", *args, str(inventory), str(REPO / "deploy" / "cluster.py")],
                            check=False, cwd=tmp_path, capture_output=True, env=env, timeout=300)
    output = (result.stdout + result.stderr).decode(errors="replace")
    assert_no_leak(result.stdout + result.stderr, SLURM_KEY_BYTES)
    return result.returncode, output


_COMMAND = re.compile(r"^\[@fake/(\S+)\]\s+>>> (.*)$")


def commands(output: str) -> list[tuple[str, str, str]]:
    """(operation, host, command) for every command run, in order."""
    found, operation = [], ""
    for line in output.splitlines():
        if line.startswith("--> Starting operation: "):
            operation = line.removeprefix("--> Starting operation: ").strip()
        elif match := _COMMAND.match(line):
            found.append((operation, match[1], match[2]))
    return found


def installs(output: str) -> dict[str, set[str]]:
    """The packages each host's apt-get install asked for."""
    found: dict[str, set[str]] = {}
    for _, name, command in commands(output):
        if "apt-get install" in command:
            packages = command.split("--force-confold ", 1)[1].split(";")[0].split()
            found.setdefault(name, set()).update(packages)
    return found


def test_first_deploy_installs_slurm_key_and_sackd_and_no_munge(tmp_path):
    rc, output = deploy(tmp_path)
    assert rc == 0, output[-4000:]
    packages = installs(output)
    assert all("munge" not in found for found in packages.values()), packages
    assert "sackd" in packages["login1"]
    assert not any("sackd" in packages[name] for name in ("ctl", *NODES))
    ran = commands(output)
    uploads = {name for operation, name, command in ran if operation == "slurm.key | /etc/slurm/slurm.key from Vault"}
    assert uploads == HOSTS
    key_modes = {(name, command) for _, name, command in ran if command.startswith(("chmod", "chown"))
                 and command.endswith("/etc/slurm/slurm.key")}
    assert key_modes == {(name, cmd) for name in uploads
                         for cmd in ("chown slurm:slurm /etc/slurm/slurm.key", "chmod 600 /etc/slurm/slurm.key")}
    assert "/etc/munge/munge.key" not in output
    assert [name for _, name, command in ran if command == "systemctl start sackd.service"] == ["login1"]
    # Nothing runs yet, so nothing is restarted for the key: the daemons' roles start them later.
    assert not [c for c in ran if "restart" in c[2] and c[0].startswith("slurm.key")]


def test_a_new_key_restarts_the_daemons_that_read_it_in_order_on_every_host(tmp_path):
    rc, output = deploy(tmp_path, responses=RUNNING)
    assert rc == 0, output[-4000:]
    restarts = [(name, command.split()[-1]) for operation, name, command in commands(output)
                if operation.startswith("slurm.key | restart") and command.startswith("systemctl restart")]
    # hosts run each operation in parallel, so the slurmd restarts come in any order among themselves
    assert restarts[:2] == [("ctl", "slurmdbd.service"), ("ctl", "slurmctld.service")]
    assert sorted(restarts[2:6]) == [(node, "slurmd.service") for node in NODES]
    assert restarts[6:] == [("login1", "sackd.service")]
    waits = [operation for operation, _, _ in commands(output) if operation.startswith("slurm.key | wait")]
    assert list(dict.fromkeys(waits)) == [f"slurm.key | wait until {d} is back" for d in
                                          ("slurmdbd", "slurmctld", "slurmd", "sackd")]
    stopped = {name for _, name, command in commands(output) if command == "systemctl stop munge.service"}
    assert stopped == HOSTS


def test_a_limited_run_refuses_to_change_the_key_on_some_hosts_only(tmp_path):
    rc, output = deploy(tmp_path, "--limit", "@fake/gpu01", responses=RUNNING)
    assert rc != 0
    assert "differs from the slurm.key in Vault, and this run is limited" in output
    assert "systemctl restart" not in output


def test_diff_is_refused_because_it_would_print_the_key(tmp_path):
    rc, output = deploy(tmp_path, "--dry", "--diff")
    assert rc != 0
    assert "--diff would print the contents of /etc/slurm/slurm.key" in output and "Traceback" not in output


def test_a_munge_cluster_still_gets_munge_and_no_slurm_key(tmp_path):
    rc, output = deploy(tmp_path, auth="munge")
    assert rc == 0, output[-4000:]
    packages = installs(output)
    assert all("munge" in packages[name] for name in HOSTS)
    assert not any("sackd" in found for found in packages.values())
    assert "/etc/slurm/slurm.key" not in output and "/etc/munge/munge.key from Vault" in output


def test_small_cluster_with_login_is_valid_for_auth_slurm():
    valid = resolve(small_cluster(slurm_version="24.11", auth="slurm", login=(Host("login1", address="10.9.0.7"),),
                                  vault=Vault(address="http://127.0.0.1:1")))
    groups = {machine.name: machine.groups for machine in valid.machines}
    assert groups["login1"] == ("login",) and runs_sackd(groups["login1"])
