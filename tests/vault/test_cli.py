"""``clusterforge secrets init|check|rotate`` as an admin runs them, against a real OpenBao server."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import hvac
import pytest
from vault.bao_server import ROOT_TOKEN, BaoServer, closed_port
from vault.vault_cases import assert_no_leak, clean_env, inventory_file, put

from clusterforge.model import Vault
from clusterforge.secrets import SecretConflict
from clusterforge.secrets.kv import KvStore
from clusterforge.secrets.session import VaultSession

pytestmark = pytest.mark.vault


def run(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clusterforge.cli", "secrets", *args], capture_output=True,
                          text=True, timeout=60, env=clean_env(HOME=str(home), **env))


def run_as_root(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(home, *args, VAULT_TOKEN=ROOT_TOKEN)


def read(root: hvac.Client, path: str, field: str, version: int | None = None, mount: str = "secret") -> str:
    return root.secrets.kv.v2.read_secret_version(path=path, mount_point=mount, version=version,
                                                  raise_on_deleted_version=True)["data"]["data"][field]


def assert_clean_failure(result: subprocess.CompletedProcess[str], status: int = 2) -> None:
    assert result.returncode == status, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "Error: " in result.stderr


def test_init_creates_what_is_missing_and_a_second_init_creates_nothing(bao, root, name, home, tmp_path):
    inventory = inventory_file(tmp_path, name, address=bao.address)
    first = run_as_root(home, "init", str(inventory))
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("created") == 3 and "2 created, 0 already there" in first.stdout
    key = base64.b64decode(read(root, f"slurm/{name}/munge", "key"), validate=True)
    password = read(root, f"slurm/{name}/slurmdbd", "password")
    assert len(key) == 1024 and len(password) >= 40
    assert_no_leak(first.stdout + first.stderr, key)
    assert_no_leak(first.stdout + first.stderr, password.encode())

    second = run_as_root(home, "init", str(inventory))
    assert second.returncode == 0, second.stderr
    assert "0 created, 2 already there" in second.stdout and second.stdout.count("  exists") == 2
    assert base64.b64decode(read(root, f"slurm/{name}/munge", "key")) == key
    assert read(root, f"slurm/{name}/slurmdbd", "password") == password
    versions = root.secrets.kv.v2.read_secret_metadata(path=f"slurm/{name}/munge")["data"]["versions"]
    assert list(versions) == ["1"]


def test_init_creates_slurm_key_for_auth_slurm_and_keeps_other_fields_at_a_shared_path(bao, root, name, home,
                                                                                         tmp_path):
    put(root, f"slurm/{name}/all", {"munge": base64.b64encode(b"m" * 64).decode(), "note": "keep me"})
    inventory = inventory_file(tmp_path, name, slurm_auth="slurm", address=bao.address,
                               munge_key={"path": "slurm/{cluster}/all", "field": "munge"},
                               db_password={"path": "slurm/{cluster}/all", "field": "password"})
    result = run_as_root(home, "init", str(inventory))
    assert result.returncode == 0, result.stderr
    assert "2 created, 0 already there" in result.stdout  # no munge key: auth/slurm does not use munged
    stored = root.secrets.kv.v2.read_secret_version(path=f"slurm/{name}/all", raise_on_deleted_version=True)
    assert stored["data"]["data"]["note"] == "keep me"
    assert base64.b64decode(stored["data"]["data"]["munge"]) == b"m" * 64
    assert stored["data"]["data"]["password"]
    assert read(root, f"slurm/{name}/slurm-key", "key")


def test_init_on_kv_v1(bao, root, name, home, tmp_path):
    inventory = inventory_file(tmp_path, name, address=bao.address, kv_mount="kv1", kv_version=1)
    assert run_as_root(home, "init", str(inventory)).returncode == 0
    key = root.secrets.kv.v1.read_secret(path=f"slurm/{name}/munge", mount_point="kv1")["data"]["key"]
    assert "0 created, 2 already there" in run_as_root(home, "init", str(inventory)).stdout
    assert root.secrets.kv.v1.read_secret(path=f"slurm/{name}/munge", mount_point="kv1")["data"]["key"] == key


def test_a_check_and_set_write_never_overwrites_a_secret_created_meanwhile(bao, root, name, home):
    """What init relies on when another admin creates the secret between its read and its write."""
    store = KvStore(VaultSession(Vault(address=bao.address), {"VAULT_TOKEN": ROOT_TOKEN}, home), "secret", 2)
    assert store.read(f"slurm/{name}/munge").fields is None
    put(root, f"slurm/{name}/munge", {"key": "theirs"})
    with pytest.raises(SecretConflict, match="nothing was overwritten"):
        store.write(f"slurm/{name}/munge", {"key": "ours"}, cas=0)
    assert read(root, f"slurm/{name}/munge", "key") == "theirs"


def test_init_recreates_a_secret_whose_latest_version_was_deleted(bao, root, name, home, tmp_path):
    put(root, f"slurm/{name}/munge", {"key": base64.b64encode(b"k" * 32).decode()})
    root.secrets.kv.v2.delete_latest_version_of_secret(path=f"slurm/{name}/munge")
    inventory = inventory_file(tmp_path, name, address=bao.address)
    result = run_as_root(home, "init", str(inventory))
    assert result.returncode == 0, result.stderr
    assert re.search(r"created +munge key .*version 2: 1024 bytes", result.stdout)


def test_check_prints_fingerprints_and_never_values(bao, root, name, home, tmp_path):
    inventory = inventory_file(tmp_path, name, address=bao.address)
    run_as_root(home, "init", str(inventory))
    key = base64.b64decode(read(root, f"slurm/{name}/munge", "key"))
    result = run_as_root(home, "check", str(inventory))
    assert result.returncode == 0, result.stderr
    assert "all 2 secrets are present and well-formed" in result.stdout
    import hashlib

    assert f"sha256:{hashlib.sha256(key).hexdigest()[:16]}" in result.stdout
    assert_no_leak(result.stdout + result.stderr, key)
    assert_no_leak(result.stdout + result.stderr, read(root, f"slurm/{name}/slurmdbd", "password").encode())


def test_check_reports_each_bad_secret_and_exits_1_not_vaults_2(bao, root, name, home, tmp_path):
    put(root, f"slurm/{name}/munge", {"key": base64.b64encode(b"short").decode()})
    inventory = inventory_file(tmp_path, name, address=bao.address)
    result = run_as_root(home, "check", str(inventory))
    assert_clean_failure(result, status=1)
    assert re.search(r"malformed +munge key", result.stdout) and re.search(r"missing +slurmdbd", result.stdout)
    assert "is 5 bytes; it must be at least 32" in result.stderr
    assert "2 of 2 secrets need attention" in result.stderr


def test_check_json_is_one_document_with_each_secrets_state_and_never_a_value(bao, root, name, home, tmp_path):
    inventory = inventory_file(tmp_path, name, address=bao.address)
    put(root, f"slurm/{name}/munge", {"key": base64.b64encode(b"k" * 64).decode()})
    result = run_as_root(home, "check", "--json", str(inventory))
    assert_clean_failure(result, status=1)
    body = json.loads(result.stdout)  # stdout is the document alone
    assert body["schema"] == 1 and body["cluster"] == name and body["ok"] is False
    assert body["vault"] == {"address": bao.address, "address_from": "the inventory", "kv_version": 2,
                             "kv_mount": "secret"}
    munge, password = body["secrets"]
    assert munge == {"kind": "munge-key", "label": munge["label"], "path": f"secret/slurm/{name}/munge",
                     "field": "key", "status": "ok", "version": 1, "size": 64,
                     "fingerprint": "sha256:" + hashlib.sha256(b"k" * 64).hexdigest()[:16], "problem": None}
    assert password["kind"] == "db-password" and password["status"] == "missing"
    assert password["fingerprint"] is None and password["version"] is None and password["problem"]
    assert "1 of 2 secrets need attention" in result.stderr
    run_as_root(home, "init", str(inventory))
    fixed = run_as_root(home, "check", "--json", str(inventory))
    assert fixed.returncode == 0, fixed.stderr
    body = json.loads(fixed.stdout)
    assert body["ok"] is True and [s["status"] for s in body["secrets"]] == ["ok", "ok"]
    assert body["secrets"][1]["fingerprint"] is None  # a password's digest is never shown
    assert_no_leak(fixed.stdout + fixed.stderr, read(root, f"slurm/{name}/slurmdbd", "password").encode())


def test_rotate_writes_a_new_version_keeps_the_old_one_and_explains_the_next_deploy(bao, root, name, home,
                                                                                     tmp_path):
    inventory = inventory_file(tmp_path, name, address=bao.address)
    run_as_root(home, "init", str(inventory))
    old = read(root, f"slurm/{name}/munge", "key")
    result = run_as_root(home, "rotate", str(inventory), "munge-key")
    assert result.returncode == 0, result.stderr
    new = read(root, f"slurm/{name}/munge", "key")
    assert new != old and read(root, f"slurm/{name}/munge", "key", version=1) == old
    assert "as version 2" in result.stdout and "version 1" in result.stdout
    assert "restarts munged there, on all hosts before\nanything else" in result.stdout
    assert "ask munged for every credential, so they keep running" in result.stdout
    assert "without --limit" in result.stdout
    for value in (old, new):
        assert_no_leak(result.stdout + result.stderr, base64.b64decode(value))

    password = run_as_root(home, "rotate", str(inventory), "db-password")
    assert password.returncode == 0 and "StoragePass" in password.stdout
    assert read(root, f"slurm/{name}/slurmdbd", "password", version=2) != read(
        root, f"slurm/{name}/slurmdbd", "password", version=1)


def test_rotate_refuses_what_the_cluster_does_not_have_or_does_not_exist(bao, name, home, tmp_path):
    inventory = inventory_file(tmp_path, name, address=bao.address)
    missing = run_as_root(home, "rotate", str(inventory), "munge-key")
    assert_clean_failure(missing)
    assert "to rotate; create it with clusterforge secrets init" in missing.stderr
    not_used = run_as_root(home, "rotate", str(inventory), "slurm-key")
    assert_clean_failure(not_used)
    assert "has no secret 'slurm-key'" in not_used.stderr


@pytest.mark.parametrize("problem", ["unreachable", "sealed", "no-token"])
def test_vault_problems_are_one_clean_message_and_exit_2(problem, own_server: BaoServer, name, home, tmp_path):
    address = own_server.address
    env = {"VAULT_TOKEN": ROOT_TOKEN}
    if problem == "unreachable":
        address = f"http://127.0.0.1:{closed_port()}"
    elif problem == "sealed":
        hvac.Client(url=address, token=ROOT_TOKEN).sys.seal()
    else:
        env = {}
    result = run(home, "check", str(inventory_file(tmp_path, name, address=address)), **env)
    assert_clean_failure(result)
    expected = {"unreachable": "cannot reach Vault", "sealed": "is sealed", "no-token": "no Vault token"}[problem]
    assert expected in result.stderr
    as_json = run(home, "check", "--json", str(inventory_file(tmp_path, name, address=address)), **env)
    assert_clean_failure(as_json)  # 2, not a missing secret's 1
    assert as_json.stdout == "" and expected in as_json.stderr


def test_no_digest_of_the_database_password_is_printed_which_a_chosen_password_could_be_guessed_from(
        bao, root, name, home, tmp_path):
    import hashlib

    inventory = inventory_file(tmp_path, name, address=bao.address)
    put(root, f"slurm/{name}/slurmdbd", {"password": "Summer2026-cluster!"})  # one a person chose
    created = run_as_root(home, "init", str(inventory))
    checked = run_as_root(home, "check", str(inventory))
    rotated = run_as_root(home, "rotate", str(inventory), "db-password")
    assert created.returncode == checked.returncode == rotated.returncode == 0, checked.stderr + rotated.stderr
    new = read(root, f"slurm/{name}/slurmdbd", "password")
    for result in (created, checked, rotated):
        for password in ("Summer2026-cluster!", new):
            digest = hashlib.sha256(password.encode()).hexdigest()
            assert digest[:8] not in result.stdout + result.stderr
    line = next(line for line in checked.stdout.splitlines() if "slurmdbd database password" in line)
    assert re.search(r", version \d+: 19 bytes$", line), line  # the version tells one value from the next
    key = next(line for line in checked.stdout.splitlines() if "munge key" in line)
    assert re.search(r": 1024 bytes, sha256:[0-9a-f]{16}$", key), key  # a key's digest is sha256sum's on a host


# --- the JWT key, with Rest ---------------------------------------------------------------------------------------


def test_init_check_and_rotate_know_the_jwt_key_where_the_cluster_has_rest(bao, root, name, home, tmp_path):
    inventory = inventory_file(tmp_path, name, rest=True, address=bao.address)
    created = run_as_root(home, "init", str(inventory))
    assert created.returncode == 0, created.stderr
    assert re.search(r"created +JWT key \(jwt_hs256.key\) +secret/slurm/\S+/jwt-key field 'key', version 1: 64 bytes, "
                     r"sha256:[0-9a-f]{16}$", created.stdout, re.M), created.stdout
    assert "3 created, 0 already there" in created.stdout
    key = base64.b64decode(read(root, f"slurm/{name}/jwt-key", "key"), validate=True)
    assert len(key) == 64

    checked = run_as_root(home, "check", str(inventory))
    assert checked.returncode == 0 and "all 3 secrets are present and well-formed" in checked.stdout
    rotated = run_as_root(home, "rotate", str(inventory), "jwt-key")
    assert rotated.returncode == 0, rotated.stderr
    new = base64.b64decode(read(root, f"slurm/{name}/jwt-key", "key"))
    assert new != key and base64.b64decode(read(root, f"slurm/{name}/jwt-key", "key", version=1)) == key
    assert "restarts slurmdbd and slurmctld" in rotated.stdout and "Every token made with the old" in rotated.stdout
    assert "the controller(s) and the database host in one run" in rotated.stdout
    for result in (created, checked, rotated):
        for value in (key, new):
            assert_no_leak(result.stdout + result.stderr, value)


def test_a_cluster_without_rest_has_no_jwt_key(bao, name, home, tmp_path):
    inventory = inventory_file(tmp_path, name, address=bao.address)
    assert "2 created" in run_as_root(home, "init", str(inventory)).stdout
    refused = run_as_root(home, "rotate", str(inventory), "jwt-key")
    assert_clean_failure(refused)
    assert "has no secret 'jwt-key'" in refused.stderr


def test_check_says_why_a_short_jwt_key_is_refused(bao, root, name, home, tmp_path):
    inventory = inventory_file(tmp_path, name, rest=True, address=bao.address)
    run_as_root(home, "init", str(inventory))
    put(root, f"slurm/{name}/jwt-key", {"key": base64.b64encode(b"j" * 31).decode()})
    result = run_as_root(home, "check", str(inventory))
    assert_clean_failure(result, status=1)
    assert re.search(r"malformed +JWT key", result.stdout)
    assert "is 31 bytes; it must be at least 32 (RFC 7518 asks an HS256 key for 256 bits or more)" in result.stderr
