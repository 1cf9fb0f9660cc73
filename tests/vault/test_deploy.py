"""The munge role under the real pyinfra CLI: the key never shows in its output, and Vault is read once per run.

Two pyinfra connectors stand in for remote hosts, since the tests have none:
* ``@local`` (this machine) for the ``--dry -vvv`` run: facts are gathered for real, nothing is changed;
* ``@fake/NAME`` (pyinfra's simulating connector) for runs that execute, on many hosts at once: every command
  "succeeds" with canned output, so the operations really run, restarts and all, without touching anything.
Test machines are often containers without systemd, so the ``@local`` runs find a stand-in ``systemctl`` first on
PATH that reports munge.service running; it only answers ``systemctl show``, which is all a dry run asks.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import threading
from pathlib import Path

import hvac
import pytest
from deploy.simhost import state_archive
from vault.bao_server import ROOT_TOKEN, BaoServer
from vault.vault_cases import assert_no_leak, clean_env, cluster, inventory_file, put

from clusterforge.secrets import ClusterSecrets

pytestmark = pytest.mark.vault

PYINFRA = str(Path(sys.executable).with_name("pyinfra"))
KEY = hashlib.sha512(b"munge").digest() * 8  # 512 bytes
PASSWORD = "Tr0ub4dor-and-3"

DEPLOY = """\
from clusterforge.roles.auth import auth_key, munged
from clusterforge.engine.converge import converge
from clusterforge.engine.run import DeployRun

DeployRun.current().secrets.prefetch()


def order(here):
    auth_key(here)
    munged(here)


converge(order)
"""


@pytest.fixture(autouse=True, scope="module")
def _pyinfra_with_fake_connector() -> None:
    from importlib.metadata import entry_points

    if "fake" not in {entry.name for entry in entry_points(group="pyinfra.connectors")}:
        pytest.fail("these tests run pyinfra's @fake connector, which pyinfra 3.10 introduced: "
                    "pip install 'pyinfra>=3.10,<4'", pytrace=False)


def stored(root: hvac.Client, name: str) -> None:
    put(root, f"slurm/{name}/munge", {"key": base64.b64encode(KEY).decode() + "\n"})
    put(root, f"slurm/{name}/slurmdbd", {"password": PASSWORD})


def pyinfra_files(tmp_path: Path, name: str, address: str, hosts: str) -> tuple[Path, Path]:
    """An inventory whose hosts carry the cluster, as clusterforge.inventory.host_groups gives them, and a deploy."""
    cluster_file = inventory_file(tmp_path, name, address=address)
    inventory = tmp_path / "hosts.py"
    inventory.write_text(f"""\
from clusterforge.loader import load_cluster
from clusterforge.model import resolve

valid = resolve(load_cluster({str(cluster_file)!r}))
machine = next(m for m in valid.machines if "compute" in m.groups)
fake = {{"clusterforge": valid, "clusterforge_machine": machine, "fake_delay": 0, "fake_delay_jitter": 0}}
{hosts}
""")
    deploy = tmp_path / "deploy.py"
    deploy.write_text(DEPLOY)
    return inventory, deploy


# This machine as the one host of an inventory.
LOCAL = 'local = [("@local", {"clusterforge": valid, "clusterforge_machine": machine})]'


# What the host-state fact (clusterforge.engine.state) answers for a host where munged runs with another key.
RUNNING = ["@unit Id=munge.service", "@unit LoadState=loaded", "@unit ActiveState=active",
           "@unit UnitFileState=enabled", "@unit ",
           f"@tar {state_archive({'/var/lib/clusterforge/applied/munge': b'an older key digest'})}", "@container none"]


def pyinfra(tmp_path: Path, home: Path, *args: str, token: str = ROOT_TOKEN) -> subprocess.CompletedProcess[bytes]:
    env = clean_env(HOME=str(home), VAULT_TOKEN=token, PYINFRA_PROGRESS="off")
    return subprocess.run([PYINFRA, *args], cwd=tmp_path, capture_output=True, timeout=300, env=env)


def assert_nothing_secret_in(result: subprocess.CompletedProcess[bytes]) -> bytes:
    output = result.stdout + result.stderr
    assert_no_leak(output, KEY)
    assert_no_leak(output, PASSWORD.encode())
    return output


def test_a_dry_run_with_vvv_on_this_machine_shows_no_secret(bao, root, name, home, tmp_path):
    stored(root, name)
    inventory, deploy = pyinfra_files(tmp_path, name, bao.address, LOCAL)
    result = pyinfra(tmp_path, home, "--dry", "-vvv", str(inventory), str(deploy))
    output = assert_nothing_secret_in(result)
    assert result.returncode == 0, output.decode(errors="replace")
    assert b"/etc/munge/munge.key from Vault" in output  # the upload really was planned and named


def test_diff_is_refused_because_it_would_print_the_key(bao, root, name, home, tmp_path):
    stored(root, name)
    inventory, deploy = pyinfra_files(tmp_path, name, bao.address, LOCAL)
    result = pyinfra(tmp_path, home, "--dry", "--diff", "-vvv", str(inventory), str(deploy))
    output = assert_nothing_secret_in(result)
    assert result.returncode != 0
    assert b"--diff would print the contents of /etc/munge/munge.key" in output
    assert b"Traceback" not in output


def test_a_real_run_on_many_hosts_reads_each_secret_once_and_restarts_munged(bao: BaoServer, root, name, home,
                                                                           tmp_path):
    stored(root, name)
    hosts = f"""\
running = {{"@container": {RUNNING!r}}}
nodes = [(f"@fake/node{{i:02d}}", {{**fake, "fake_responses": running}}) for i in range(24)]
"""
    inventory, deploy = pyinfra_files(tmp_path, name, bao.address, hosts)
    result = pyinfra(tmp_path, home, "-y", "-vvv", str(inventory), str(deploy))
    output = assert_nothing_secret_in(result)
    assert result.returncode == 0, output.decode(errors="replace")
    assert output.count(b"systemctl restart munge") == 24  # -vvv echoes each executed command
    assert bao.reads_of(f"secret/data/slurm/{name}/munge") == 1
    assert bao.reads_of(f"secret/data/slurm/{name}/slurmdbd") == 1


def test_a_limited_run_refuses_to_change_the_key_on_some_hosts_only(bao, root, name, home, tmp_path):
    stored(root, name)
    other = hashlib.sha256(b"the previous key").hexdigest()
    hosts = f"""\
installed = {{"@container": ["@stat regular file|munge|munge|400|/etc/munge/munge.key",
                             "@sha {other}  /etc/munge/munge.key", "@container none"]}}
nodes = [(f"@fake/node{{i}}", {{**fake, "fake_responses": installed}}) for i in range(3)]
"""
    inventory, deploy = pyinfra_files(tmp_path, name, bao.address, hosts)
    result = pyinfra(tmp_path, home, "-y", "-vvv", "--limit", "@fake/node1", str(inventory), str(deploy))
    output = assert_nothing_secret_in(result)
    assert result.returncode != 0
    assert b"differs from the munge key in Vault, and this run is limited" in output
    assert b"systemctl restart munge" not in output


def test_a_sealed_vault_stops_the_run_with_one_clean_message(own_server: BaoServer, name, home, tmp_path):
    hvac.Client(url=own_server.address, token=ROOT_TOKEN).sys.seal()
    inventory, deploy = pyinfra_files(tmp_path, name, own_server.address,
                                      'nodes = [(f"@fake/node{i:02d}", fake) for i in range(24)]')
    result = pyinfra(tmp_path, home, "-y", str(inventory), str(deploy))
    output = (result.stdout + result.stderr).decode(errors="replace")
    assert result.returncode != 0
    assert "is sealed" in output and "Traceback" not in output
    assert "Success" not in output  # no operation ran on any host


def test_a_failed_read_is_made_once_too(bao: BaoServer, root, name, home, tmp_path):
    """24 hosts and a revoked token: Vault is asked once, not once per host."""
    stored(root, name)
    token = root.auth.token.create(policies=["clusterforge-read"], ttl="5m")["auth"]["client_token"]
    root.auth.token.revoke(token)
    inventory, deploy = pyinfra_files(tmp_path, name, bao.address,
                                      'nodes = [(f"@fake/node{i:02d}", fake) for i in range(24)]')
    result = pyinfra(tmp_path, home, "-y", str(inventory), str(deploy), token=token)
    output = (result.stdout + result.stderr).decode(errors="replace")
    assert result.returncode != 0
    assert "expired, been revoked" in output and "Traceback" not in output
    assert bao.reads_of(f"secret/data/slurm/{name}/munge") == 1


def test_threads_sharing_one_cluster_make_one_read(bao: BaoServer, root, name, home):
    stored(root, name)
    secrets = ClusterSecrets(cluster(name, address=bao.address), environ={"VAULT_TOKEN": ROOT_TOKEN}, home=home)
    keys = []
    threads = [threading.Thread(target=lambda: keys.append(secrets.munge_key().reveal())) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert keys == [KEY] * 16
    assert bao.reads_of(f"secret/data/slurm/{name}/munge") == 1


JWT = hashlib.sha512(b"jwt").digest()  # 64 bytes

JWT_DEPLOY = """\
from clusterforge.engine.converge import converge
from clusterforge.roles.rest import jwt_key_file
from clusterforge.engine.run import DeployRun

DeployRun.current().secrets.prefetch()
converge(jwt_key_file)
"""


def test_the_jwt_key_goes_to_the_controllers_unseen_and_is_read_once(bao: BaoServer, root, name, home, tmp_path):
    """Twelve hosts that are each a controller (the key's hosts), in a real run at -vvv: the key is uploaded to each,
    0600 slurm, never shown, and Vault is read once."""
    stored(root, name)
    put(root, f"slurm/{name}/jwt-key", {"key": base64.b64encode(JWT).decode()})
    cluster_file = inventory_file(tmp_path, name, rest=True, address=bao.address)
    inventory = tmp_path / "hosts.py"
    inventory.write_text(f"""\
from clusterforge.loader import load_cluster
from clusterforge.model import resolve

valid = resolve(load_cluster({str(cluster_file)!r}))
machine = next(m for m in valid.machines if "controller" in m.groups)
nodes = [(f"@fake/ctl{{i:02d}}", {{"clusterforge": valid, "clusterforge_machine": machine, "fake_delay": 0,
                                  "fake_delay_jitter": 0}}) for i in range(12)]
""")
    deploy = tmp_path / "deploy.py"
    deploy.write_text(JWT_DEPLOY)
    result = pyinfra(tmp_path, home, "-y", "-vvv", str(inventory), str(deploy))
    output = assert_nothing_secret_in(result)
    assert_no_leak(output, JWT)
    assert result.returncode == 0, output.decode(errors="replace")
    assert output.count(b"chmod 0600 /etc/slurm/jwt_hs256.key") == 12  # -vvv echoes each executed command
    assert output.count(b"chown slurm:slurm /etc/slurm/jwt_hs256.key") == 12
    assert bao.reads_of(f"secret/data/slurm/{name}/jwt-key") == 1


def test_diff_is_refused_for_the_jwt_key_too(bao, root, name, home, tmp_path):
    stored(root, name)
    put(root, f"slurm/{name}/jwt-key", {"key": base64.b64encode(JWT).decode()})
    cluster_file = inventory_file(tmp_path, name, rest=True, address=bao.address)
    inventory = tmp_path / "hosts.py"
    inventory.write_text(f"""\
from clusterforge.loader import load_cluster
from clusterforge.model import resolve

valid = resolve(load_cluster({str(cluster_file)!r}))
machine = next(m for m in valid.machines if "controller" in m.groups)
local = [("@local", {{"clusterforge": valid, "clusterforge_machine": machine}})]
""")
    deploy = tmp_path / "deploy.py"
    deploy.write_text(JWT_DEPLOY)
    result = pyinfra(tmp_path, home, "--dry", "--diff", "-vvv", str(inventory), str(deploy))
    output = assert_nothing_secret_in(result)
    assert_no_leak(output, JWT)
    assert result.returncode != 0
    assert b"--diff would print the contents of /etc/slurm/jwt_hs256.key" in output and b"Traceback" not in output
