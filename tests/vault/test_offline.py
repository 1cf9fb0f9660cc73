"""What needs no server: the Secret type, the checks on values, and where settings come from (precedence)."""

from __future__ import annotations

import base64
import copy
import dataclasses
import pickle
from pathlib import Path

import pytest
from vault.vault_cases import cluster

from clusterforge.errors import ClusterforgeError, InventoryError
from clusterforge.model import SecretRef, Vault
from clusterforge.engine.run import DeployRun
from clusterforge.secrets import ClusterSecrets, Secret, SecretMalformed, VaultConfigError
from clusterforge.secrets.settings import credentials, endpoint
from clusterforge.secrets.values import KEY_MAX_BYTES, check_password, decode_key, new_key, new_password

KEY = bytes(range(256)) * 2


def decode(text: object) -> Secret:
    return decode_key(text, "secret/x field 'key'", "munge key", "rotate it")


# --- Secret ----------------------------------------------------------------------------------------------------


def test_secret_is_masked_everywhere_it_could_be_printed():
    secret = Secret(b"hunter2-hunter2", "db password")
    for shown in (repr(secret), str(secret), f"{secret}", f"{secret!r}", "%s" % secret, repr([secret]),  # noqa: UP031
                  repr({"k": secret}), str((secret,))):
        assert "hunter2" not in shown
        assert "db password" in shown
    assert secret.reveal() == b"hunter2-hunter2"
    assert secret.reveal_text() == "hunter2-hunter2"


def test_secret_is_not_converted_or_pickled_by_accident():
    secret = Secret(b"x" * 40, "munge key")
    with pytest.raises(TypeError):
        bytes(secret)
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    assert copy.deepcopy(secret) is secret


def test_fingerprint_is_a_short_sha256():
    import hashlib

    secret = Secret(KEY, "munge key")
    assert secret.fingerprint() == hashlib.sha256(KEY).hexdigest()[:16]
    assert Secret(KEY, "a") == Secret(KEY, "b")


def test_every_secrets_error_is_a_clusterforge_error():
    from clusterforge import secrets

    for name in secrets.__all__:
        obj = getattr(secrets, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, ClusterforgeError), name


# --- the munge key's text ---------------------------------------------------------------------------------------


def test_whitespace_around_and_inside_base64_never_becomes_key_material():
    b64 = base64.b64encode(KEY).decode()
    assert decode(b64 + "\n").reveal() == KEY
    assert decode(f"  {b64}\r\n\n").reveal() == KEY
    wrapped = "\n".join(b64[i:i + 76] for i in range(0, len(b64), 76)) + "\n"  # what `base64 FILE` prints
    assert decode(wrapped).reveal() == KEY


@pytest.mark.parametrize("text", ["not base64!", "QUJD", "QUJDRA", base64.urlsafe_b64encode(b"\xfb\xff" * 30).decode()])
def test_invalid_base64_or_short_padding_is_refused(text):
    with pytest.raises(SecretMalformed) as error:
        decode(text)
    assert "secret/x field 'key'" in str(error.value)
    if text != "QUJD":
        assert text not in str(error.value)


def test_key_length_bounds():
    with pytest.raises(SecretMalformed, match="is 31 bytes; it must be at least 32"):
        decode(base64.b64encode(b"k" * 31).decode())
    assert len(decode(base64.b64encode(b"k" * 32).decode())) == 32
    assert len(decode(base64.b64encode(b"k" * KEY_MAX_BYTES).decode())) == KEY_MAX_BYTES
    with pytest.raises(SecretMalformed, match="at most 1024"):
        decode(base64.b64encode(b"k" * (KEY_MAX_BYTES + 1)).decode())
    with pytest.raises(SecretMalformed, match="is empty"):
        decode("\n")
    with pytest.raises(SecretMalformed, match="must be base64 text, not int"):
        decode(12345)


@pytest.mark.parametrize("password, problem", [
    ("", "is empty"), ("zebra word", "space"), ("zebra7\n", "line break"), ("ze#bra", "comment"),
    ('ze"bra', "quote"), ("ze\\bra", "escape"),
])
def test_password_checks(password, problem):
    with pytest.raises(SecretMalformed, match=problem) as error:
        check_password(password, "secret/x field 'password'", "slurmdbd database password", "rotate it")
    if len(password) > 3:
        assert password.strip() not in str(error.value)


def test_new_values_are_random_and_well_formed():
    key, text = new_key("munge key")
    assert len(key) == 1024 and decode(text) == key
    assert new_key("k")[0] != key
    password, stored = new_password("p")
    assert check_password(stored, "w", "p", "r") == password and len(stored) >= 40


# --- settings and their precedence ------------------------------------------------------------------------------


def test_the_inventory_address_wins_over_vault_addr():
    found = endpoint(Vault(address="https://vault.example.org:8200/"), {"VAULT_ADDR": "http://elsewhere:8200"})
    assert (found.address, found.address_from) == ("https://vault.example.org:8200", "the inventory")


def test_vault_addr_fills_an_address_the_inventory_leaves_out():
    found = endpoint(Vault(), {"VAULT_ADDR": "https://vault.example.org:8200"})
    assert (found.address, found.address_from) == ("https://vault.example.org:8200", "VAULT_ADDR")


def test_a_plain_http_vault_addr_is_refused_unless_the_inventory_allows_it():
    # As the inventory's own http:// address is (model/rules/vault.py): one line naming the variable, the address
    # and both ways out.
    with pytest.raises(VaultConfigError) as refused:
        endpoint(Vault(), {"VAULT_ADDR": "http://vault.example.org:8200"})
    message = str(refused.value)
    assert message.startswith("VAULT_ADDR=http://vault.example.org:8200 is plain HTTP") and "\n" not in message
    assert "https://" in message and "Vault(allow_plain_http=True)" in message
    found = endpoint(Vault(allow_plain_http=True), {"VAULT_ADDR": "http://127.0.0.1:8200"})
    assert (found.address, found.address_from) == ("http://127.0.0.1:8200", "VAULT_ADDR")


def test_a_plain_http_vault_addr_is_refused_before_any_secret_is_asked_for():
    secrets = ClusterSecrets(cluster("c"), environ={"VAULT_ADDR": "http://127.0.0.1:1", "VAULT_TOKEN": "t"})
    with pytest.raises(VaultConfigError, match="^VAULT_ADDR=http://127.0.0.1:1 is plain HTTP"):
        secrets.munge_key()


def test_no_address_anywhere_is_a_clear_error():
    with pytest.raises(VaultConfigError, match="no Vault address"):
        endpoint(Vault(), {})
    with pytest.raises(VaultConfigError, match="needs its scheme"):
        endpoint(Vault(address="vault:8200"), {})


def test_namespace_and_ca_precedence(tmp_path: Path):
    inventory_ca, env_ca = tmp_path / "inventory-ca.pem", tmp_path / "env-ca.pem"
    inventory_ca.write_text("x")
    env_ca.write_text("x")
    env = {"VAULT_ADDR": "https://v:8200", "VAULT_NAMESPACE": "from-env", "VAULT_CACERT": str(env_ca)}
    assert endpoint(Vault(), env).namespace == "from-env"
    assert endpoint(Vault(namespace="team"), env).namespace == "team"
    assert endpoint(Vault(), env).verify == str(env_ca)
    assert endpoint(Vault(ca_cert=str(inventory_ca)), env).verify == str(inventory_ca)
    assert endpoint(Vault(), {**env, "VAULT_SKIP_VERIFY": "true"}).verify is False
    assert endpoint(Vault(), {**env, "VAULT_SKIP_VERIFY": "0"}).verify == str(env_ca)
    with pytest.raises(VaultConfigError, match="VAULT_SKIP_VERIFY='yes' is not a boolean"):
        endpoint(Vault(), {**env, "VAULT_SKIP_VERIFY": "yes"})
    with pytest.raises(VaultConfigError, match="does not exist"):
        endpoint(Vault(), {**env, "VAULT_CACERT": str(tmp_path / "missing.pem")})


def test_token_comes_from_vault_token_else_the_token_file(tmp_path: Path):
    assert credentials(Vault(), {"VAULT_TOKEN": "s.env"}, tmp_path).token.reveal() == b"s.env"
    with pytest.raises(VaultConfigError, match="no Vault token"):
        credentials(Vault(), {}, tmp_path)
    (tmp_path / ".vault-token").write_text("s.file\n")
    found = credentials(Vault(), {}, tmp_path)
    assert found.token.reveal() == b"s.file" and found.source.endswith(".vault-token")
    assert credentials(Vault(), {"VAULT_TOKEN": "s.env"}, tmp_path).token.reveal() == b"s.env"
    assert "s.file" not in repr(found)


def test_approle_ids_come_from_the_environment_else_files(tmp_path: Path):
    (tmp_path / "role-id").write_text("role-from-file\n")
    (tmp_path / "secret-id").write_text("secret-from-file\n")
    vault = Vault(auth="approle", role_id_file=str(tmp_path / "role-id"), secret_id_file=str(tmp_path / "secret-id"))
    from_files = credentials(vault, {}, tmp_path)
    assert (from_files.role_id, from_files.secret_id.reveal()) == ("role-from-file", b"secret-from-file")
    from_env = credentials(vault, {"VAULT_ROLE_ID": "r-env", "VAULT_SECRET_ID": "s-env"}, tmp_path)
    assert (from_env.role_id, from_env.secret_id.reveal()) == ("r-env", b"s-env")
    own_names = Vault(auth="approle", role_id_env="PROD_ROLE_ID", secret_id_env="PROD_SECRET_ID")
    assert credentials(own_names, {"PROD_ROLE_ID": "r", "PROD_SECRET_ID": "s"}, tmp_path).role_id == "r"
    with pytest.raises(VaultConfigError, match="AppRole login needs a role_id: export VAULT_ROLE_ID"):
        credentials(Vault(auth="approle"), {}, tmp_path)
    with pytest.raises(VaultConfigError, match="cannot read the AppRole role_id"):
        credentials(Vault(auth="approle", role_id_file=str(tmp_path / "nope")), {}, tmp_path)


def test_secret_paths_take_only_the_cluster_placeholder():
    with pytest.raises(InventoryError, match="only placeholder"):
        SecretRef(path="slurm/{name}/munge", field="key")
    with pytest.raises(InventoryError, match="leading or trailing"):
        SecretRef(path="/slurm/munge", field="key")
    assert Vault(kv_mount="/kv/").kv_mount == "kv"


def test_a_cluster_without_vault_gets_an_explanation():
    bare = dataclasses.replace(cluster("novault"), vault=None)
    with pytest.raises(VaultConfigError, match="has no Vault: add vault=Vault"):
        ClusterSecrets(bare)


def test_the_model_repr_holds_no_secret_and_one_object_serves_a_run():
    valid = cluster("reprs", address="http://127.0.0.1:1")
    run = DeployRun(object(), valid)  # what a deploy run holds; its pyinfra state is not asked here
    assert run.secrets is run.secrets
    assert "none read" in repr(run.secrets)
