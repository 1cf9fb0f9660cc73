"""Reading the cluster's secrets from a real OpenBao server: each way of logging in, each KV version, each failure."""

from __future__ import annotations

import base64
import time
from pathlib import Path

import hvac
import pytest
from vault.bao_server import ROOT_TOKEN, BaoServer, closed_port
from vault.vault_cases import cluster, put

from clusterforge.errors import ClusterforgeError
from clusterforge.secrets import (
    ClusterSecrets,
    SecretMalformed,
    SecretMissing,
    VaultAuthError,
    VaultConfigError,
    VaultSealed,
    VaultTlsError,
    VaultUnreachable,
)

pytestmark = pytest.mark.vault

KEY = bytes(range(7, 256)) + bytes(range(0, 200))  # 449 bytes, none of them whitespace-safe to strip
PASSWORD = "Corr3ct-H0rse_Battery"


def store_cluster_secrets(root: hvac.Client, name: str, *, mount: str = "secret", kv_version: int = 2,
                          key_text: str | None = None, password: str = PASSWORD) -> None:
    key_text = base64.b64encode(KEY).decode() if key_text is None else key_text
    put(root, f"slurm/{name}/munge", {"key": key_text}, mount=mount, kv_version=kv_version)
    put(root, f"slurm/{name}/slurmdbd", {"password": password}, mount=mount, kv_version=kv_version)


def secrets(name: str, address: str, home: Path, token: str = ROOT_TOKEN, env: dict | None = None,
            **vault: object) -> ClusterSecrets:
    environ = {"VAULT_TOKEN": token} if token else {}
    environ.update(env or {})
    return ClusterSecrets(cluster(name, address=address, **vault), environ=environ, home=home)


def assert_clean(error: BaseException, *values: str | bytes) -> None:
    """A ClusterforgeError, whose message has no secret value and carries no hvac/requests exception along."""
    assert isinstance(error, ClusterforgeError)
    text = str(error)
    for value in values:
        assert (value.decode(errors="replace") if isinstance(value, bytes) else value) not in text
    assert error.__cause__ is None and error.__context__ is None


# --- token auth, KV v2 and v1 -----------------------------------------------------------------------------------


def test_token_auth_reads_the_munge_key_and_the_password_from_kv_v2(bao, root, name, home):
    store_cluster_secrets(root, name)
    found = secrets(name, bao.address, home)
    assert found.munge_key().reveal() == KEY
    assert found.db_password().reveal_text() == PASSWORD
    assert "Corr3ct" not in repr(found.db_password()) and "Corr3ct" not in repr(found)


def test_token_from_the_token_file_when_vault_token_is_unset(bao, root, name, home):
    store_cluster_secrets(root, name)
    (home / ".vault-token").write_text(ROOT_TOKEN + "\n")
    assert secrets(name, bao.address, home, token="").munge_key().reveal() == KEY


def test_vault_addr_is_used_when_the_inventory_has_no_address(bao, root, name, home):
    store_cluster_secrets(root, name)
    found = ClusterSecrets(cluster(name, allow_plain_http=True),  # the test's OpenBao: http on loopback
                           environ={"VAULT_TOKEN": ROOT_TOKEN, "VAULT_ADDR": bao.address}, home=home)
    assert found.munge_key().reveal() == KEY


def test_kv_version_1(bao, root, name, home):
    store_cluster_secrets(root, name, mount="kv1", kv_version=1)
    found = secrets(name, bao.address, home, kv_mount="kv1", kv_version=1)
    assert found.munge_key().reveal() == KEY
    assert found.db_password().reveal_text() == PASSWORD


def test_a_trailing_newline_in_the_stored_base64_is_not_key_material(bao, root, name, home):
    store_cluster_secrets(root, name, key_text=base64.encodebytes(KEY).decode() + "\n")  # wrapped, newline-ended
    assert secrets(name, bao.address, home).munge_key().reveal() == KEY


def test_paths_and_fields_come_from_the_inventory_with_the_cluster_name_filled_in(bao, root, name, home):
    put(root, f"hpc/{name}/all", {"munge": base64.b64encode(KEY).decode(), "dbpass": PASSWORD})
    found = secrets(name, bao.address, home, munge_key={"path": "hpc/{cluster}/all", "field": "munge"},
                    db_password={"path": "hpc/{cluster}/all", "field": "dbpass"})
    assert found.munge_key().reveal() == KEY and found.db_password().reveal_text() == PASSWORD


def test_auth_slurm_clusters_also_need_slurm_key(bao, root, name, home):
    store_cluster_secrets(root, name)
    put(root, f"slurm/{name}/slurm-key", {"key": base64.b64encode(KEY[:64]).decode()})
    found = ClusterSecrets(cluster(name, slurm_auth="slurm", address=bao.address), environ={"VAULT_TOKEN": ROOT_TOKEN},
                           home=home)
    found.prefetch()
    assert found.slurm_key().reveal() == KEY[:64]


def test_clusters_with_rest_also_need_the_jwt_key_read_before_any_host_changes(bao, root, name, home):
    store_cluster_secrets(root, name)
    found = secrets(name, bao.address, home, rest=True)
    # The deploy prefetches every secret first: the munge key and the password alone do not let it start.
    with pytest.raises(SecretMissing, match=rf"no JWT key \(jwt_hs256.key\) in Vault: nothing at secret/slurm/{name}/"):
        found.prefetch()
    put(root, f"slurm/{name}/jwt-key", {"key": base64.b64encode(KEY[:48]).decode()})
    found = secrets(name, bao.address, home, rest=True)
    found.prefetch()
    assert found.jwt_key().reveal() == KEY[:48] and "secret" in repr(found.jwt_key())
    assert bao.reads_of(f"secret/data/slurm/{name}/jwt-key") == 2  # once per run (a ClusterSecrets), however asked


def test_namespace_from_vault_namespace(bao, root, name, home):
    root.adapter.post(f"/v1/sys/namespaces/{name}")
    in_namespace = hvac.Client(url=bao.address, token=ROOT_TOKEN, namespace=name)
    in_namespace.sys.enable_secrets_engine("kv", path="secret", options={"version": "2"})
    store_cluster_secrets(in_namespace, name)
    assert secrets(name, bao.address, home, env={"VAULT_NAMESPACE": name}).munge_key().reveal() == KEY
    with pytest.raises(SecretMissing):
        secrets(name, bao.address, home).munge_key()  # the root namespace has no such secret


# --- AppRole ----------------------------------------------------------------------------------------------------


def approle(root: hvac.Client, role: str) -> tuple[str, str]:
    root.auth.approle.create_or_update_approle(role, token_policies=["clusterforge-read"], token_ttl="5m")
    role_id = root.auth.approle.read_role_id(role)["data"]["role_id"]
    secret_id = root.auth.approle.generate_secret_id(role)["data"]["secret_id"]
    return role_id, secret_id


def test_approle_with_a_read_only_policy_reads_kv_v2_and_v1(bao, root, name, home):
    store_cluster_secrets(root, name)
    store_cluster_secrets(root, name, mount="kv1", kv_version=1)
    role_id, secret_id = approle(root, name)
    env = {"VAULT_ROLE_ID": role_id, "VAULT_SECRET_ID": secret_id}
    assert secrets(name, bao.address, home, token="", env=env, auth="approle").munge_key().reveal() == KEY
    v1 = secrets(name, bao.address, home, token="", env=env, auth="approle", kv_mount="kv1", kv_version=1)
    assert v1.db_password().reveal_text() == PASSWORD


def test_approle_ids_from_files(bao, root, name, home, tmp_path):
    store_cluster_secrets(root, name)
    role_id, secret_id = approle(root, name)
    (tmp_path / "role-id").write_text(role_id + "\n")
    (tmp_path / "secret-id").write_text(secret_id + "\n")
    found = secrets(name, bao.address, home, token="", auth="approle", role_id_file=str(tmp_path / "role-id"),
                    secret_id_file=str(tmp_path / "secret-id"))
    assert found.munge_key().reveal() == KEY


def test_a_wrong_secret_id_is_a_login_error(bao, root, name, home):
    role_id, _ = approle(root, name)
    env = {"VAULT_ROLE_ID": role_id, "VAULT_SECRET_ID": "00000000-1111-2222-3333-444444444444"}
    with pytest.raises(VaultAuthError, match="refused the login") as error:
        secrets(name, bao.address, home, token="", env=env, auth="approle").munge_key()
    assert_clean(error.value, "00000000-1111-2222-3333-444444444444")
    assert "VAULT_SECRET_ID" in str(error.value)


def test_the_read_only_approle_cannot_write(bao, root, name, home):
    from clusterforge.secrets.manage import init

    role_id, secret_id = approle(root, name)
    env = {"VAULT_ROLE_ID": role_id, "VAULT_SECRET_ID": secret_id}
    with pytest.raises(VaultAuthError, match="denies writing secret/data/slurm/.*policies are: .*clusterforge-read"):
        init(secrets(name, bao.address, home, token="", env=env, auth="approle"))


# --- tokens that no longer work ---------------------------------------------------------------------------------


def test_a_revoked_token(bao, root, name, home):
    store_cluster_secrets(root, name)
    token = root.auth.token.create(policies=["clusterforge-read"], ttl="5m")["auth"]["client_token"]
    root.auth.token.revoke(token)
    with pytest.raises(VaultAuthError, match="expired, been revoked") as error:
        secrets(name, bao.address, home, token=token).munge_key()
    assert_clean(error.value, token)
    assert "VAULT_TOKEN" in str(error.value)


def test_an_expired_token(bao, root, name, home):
    store_cluster_secrets(root, name)
    token = root.auth.token.create(policies=["clusterforge-read"], ttl="1s", explicit_max_ttl="1s")
    time.sleep(2.5)
    with pytest.raises(VaultAuthError, match="expired, been revoked"):
        secrets(name, bao.address, home, token=token["auth"]["client_token"]).munge_key()


def test_a_token_without_the_policy_is_told_which_policies_it_has(bao, root, name, home):
    store_cluster_secrets(root, name)
    token = root.auth.token.create(policies=["default"], ttl="5m")["auth"]["client_token"]
    with pytest.raises(VaultAuthError, match=f"denies reading secret/data/slurm/{name}/munge .*policies are: default"):
        secrets(name, bao.address, home, token=token).munge_key()


def test_no_token_at_all(bao, name, home):
    with pytest.raises(VaultConfigError, match="no Vault token: export VAULT_TOKEN"):
        secrets(name, bao.address, home, token="").munge_key()


# --- wrong or broken secrets ------------------------------------------------------------------------------------


def test_a_wrong_path_names_the_path_and_the_fix(bao, root, name, home):
    with pytest.raises(SecretMissing) as error:
        secrets(name, bao.address, home).munge_key()
    message = str(error.value)
    assert f"nothing at secret/slurm/{name}/munge" in message and "clusterforge secrets init" in message


def test_a_missing_field_lists_the_fields_there(bao, root, name, home):
    put(root, f"slurm/{name}/munge", {"munge.key": base64.b64encode(KEY).decode()})
    with pytest.raises(SecretMissing, match=r"has no field 'key' \(its fields: munge.key\)") as error:
        secrets(name, bao.address, home).munge_key()
    assert_clean(error.value, base64.b64encode(KEY).decode()[:20])


def test_a_kv_version_mismatch_is_pointed_out(bao, root, name, home):
    store_cluster_secrets(root, name, mount="kv1", kv_version=1)
    with pytest.raises(SecretMissing, match="the mount 'kv1' is KV v1 but the inventory says kv_version=2"):
        secrets(name, bao.address, home, kv_mount="kv1").munge_key()


def test_malformed_base64(bao, root, name, home):
    bad = base64.b64encode(KEY).decode()[:-3] + "*!*"
    store_cluster_secrets(root, name, key_text=bad)
    with pytest.raises(SecretMalformed, match=f"secret/slurm/{name}/munge field 'key': the munge key is not valid "
                                              "base64") as error:
        secrets(name, bao.address, home).munge_key()
    assert_clean(error.value, bad[:20])


def test_a_too_short_key(bao, root, name, home):
    store_cluster_secrets(root, name, key_text=base64.b64encode(b"s" * 16).decode())
    with pytest.raises(SecretMalformed, match="is 16 bytes; it must be at least 32") as error:
        secrets(name, bao.address, home).munge_key()
    assert "clusterforge secrets rotate INVENTORY munge-key" in str(error.value)


def test_an_empty_password(bao, root, name, home):
    store_cluster_secrets(root, name, password="")
    with pytest.raises(SecretMalformed, match="slurmdbd database password is empty"):
        secrets(name, bao.address, home).prefetch()


# --- the server itself unusable ---------------------------------------------------------------------------------


def test_unreachable(name, home):
    address = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(VaultUnreachable, match=f"cannot reach Vault at {address} .*connection refused") as error:
        secrets(name, address, home).munge_key()
    assert_clean(error.value, ROOT_TOKEN)


def test_sealed(own_server: BaoServer, name, home):
    client = hvac.Client(url=own_server.address, token=ROOT_TOKEN)
    store_cluster_secrets(client, name)
    client.sys.seal()
    with pytest.raises(VaultSealed, match=f"Vault at {own_server.address} is sealed.*vault operator unseal"):
        secrets(name, own_server.address, home).munge_key()


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")  # VAULT_SKIP_VERIFY asks for it
def test_tls_untrusted_then_trusted_through_each_setting(tls_server: BaoServer, name, home, tmp_path):
    store_cluster_secrets(hvac.Client(url=tls_server.address, token=ROOT_TOKEN, verify=str(tls_server.ca_cert)), name)
    with pytest.raises(VaultTlsError, match="certificate verify failed|self.signed|unable to get") as error:
        secrets(name, tls_server.address, home).munge_key()
    assert "VAULT_CACERT" in str(error.value) and "system's trust store" in str(error.value)
    ca = str(tls_server.ca_cert)
    assert secrets(name, tls_server.address, home, env={"VAULT_CACERT": ca}).munge_key().reveal() == KEY
    assert secrets(name, tls_server.address, home, ca_cert=ca).munge_key().reveal() == KEY
    assert secrets(name, tls_server.address, home, env={"VAULT_SKIP_VERIFY": "true"}).munge_key().reveal() == KEY
    wrong = tmp_path / "other-ca.pem"
    wrong.write_text(Path("/etc/ssl/certs/ca-certificates.crt").read_text() if Path(
        "/etc/ssl/certs/ca-certificates.crt").exists() else "")
    # The inventory's CA is configuration and wins over a VAULT_CACERT that points elsewhere.
    assert secrets(name, tls_server.address, home, env={"VAULT_CACERT": str(wrong)},
                   ca_cert=ca).munge_key().reveal() == KEY


def test_an_https_address_for_a_plain_http_server_is_a_tls_error(bao, name, home):
    with pytest.raises(VaultTlsError):
        secrets(name, bao.address.replace("http://", "https://"), home).munge_key()
