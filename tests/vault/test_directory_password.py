"""A site directory's bind password in Vault, against a real OpenBao server: `clusterforge secrets init` makes the
cluster's own secrets and says the directory's is missing and where it goes, never making one; once the directory's
admins stored it, `check` finds it well-formed without a digest (a chosen password could be guessed from one); a value
sssd.conf cannot hold is named malformed; the value is never printed; a directory without a bind DN needs none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from vault.bao_server import ROOT_TOKEN
from vault.vault_cases import assert_no_leak, clean_env, inventory_file, put

pytestmark = pytest.mark.vault

PASSWORD = "Bind pass#;word-0f-the-directory"


def directory_inventory(tmp_path: Path, name: str, address: str, bind_dn: str | None = "cn=sssd,dc=example,dc=org"):
    path = inventory_file(tmp_path, name, address=address)
    text = path.read_text().replace("from clusterforge.model import ",
                                    "from clusterforge.model import Artifact, Directory, Identity, ")
    directory = (f'Directory(uris=("ldaps://ldap.example.org",), base_dn="dc=example,dc=org", '
                 f'ca_certificate=Artifact(source="/srv/ca.pem", sha256="{"a" * 64}"), bind_dn={bind_dn!r})')
    path.write_text(text.replace("rest=None,\n)", f"rest=None, identity=Identity(directory={directory}),\n)"))
    return path


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clusterforge.cli", "secrets", *args], capture_output=True,
                          text=True, timeout=60, env=clean_env(HOME=str(home), VAULT_TOKEN=ROOT_TOKEN))


def test_init_never_makes_the_directorys_password_and_check_finds_it_once_stored(bao, root, name, home, tmp_path):
    inventory = directory_inventory(tmp_path, name, bao.address)
    first = run(home, "init", str(inventory))
    assert first.returncode == 2, first.stdout + first.stderr
    assert "2 created" in first.stdout and "missing   LDAP bind password" in first.stdout
    assert f"no LDAP bind password in Vault: nothing at secret/slurm/{name}/ldap" in first.stderr
    assert "clusterforge does not make it" in first.stderr and "Traceback" not in first.stderr
    assert root.secrets.kv.v2.read_secret_version(path=f"slurm/{name}/munge", mount_point="secret",
                                                  raise_on_deleted_version=True)
    put(root, f"slurm/{name}/ldap", {"bind_password": PASSWORD})
    checked = run(home, "check", str(inventory))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    line = next(line for line in checked.stdout.splitlines() if "LDAP bind password" in line)
    assert line.rstrip().endswith(f"{len(PASSWORD)} bytes") and "sha256" not in line
    again = run(home, "init", str(inventory))
    assert again.returncode == 0 and "0 created, 3 already there" in again.stdout, again.stdout + again.stderr
    for result in (first, checked, again):
        assert_no_leak(result.stdout + result.stderr, PASSWORD.encode())


def test_a_password_sssd_conf_cannot_hold_is_named(bao, root, name, home, tmp_path):
    inventory = directory_inventory(tmp_path, name, bao.address)
    assert run(home, "init", str(inventory)).returncode == 2
    put(root, f"slurm/{name}/ldap", {"bind_password": "two\nlines"})
    checked = run(home, "check", str(inventory))
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "holds a line break or control character" in checked.stderr and "two" not in checked.stderr


def test_an_anonymous_bind_needs_no_password(bao, name, home, tmp_path):
    inventory = directory_inventory(tmp_path, name, bao.address, bind_dn=None)
    created = run(home, "init", str(inventory))
    assert created.returncode == 0 and "LDAP" not in created.stdout, created.stdout + created.stderr
