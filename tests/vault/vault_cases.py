"""Clusters, inventory files, environments and checks the Vault tests share."""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path

import hvac

from clusterforge.model import Cluster, Host, Nodes, Partition, Profile, Rest, ValidCluster, Vault, resolve


def _plain_http_allowed(vault: dict[str, object]) -> dict[str, object]:
    """The Vault's fields, with plain HTTP allowed for the test's OpenBao on loopback (served without TLS)."""
    if str(vault.get("address", "")).startswith("http://"):
        return {**vault, "allow_plain_http": True}
    return vault


def cluster(name: str, *, slurm_auth: str = "munge", rest: bool = False, **vault: object) -> ValidCluster:
    """``rest``: with slurmrestd, hence the JWT key."""
    vault = _plain_http_allowed(vault)
    version = "24.11" if slurm_auth == "slurm" else "22.05"
    return resolve(Cluster(
        name, slurm_version=version, auth=slurm_auth,
        controller=Host("ctl", address="10.0.0.1"), database=Host("db", address="10.0.0.2", memory=4096),
        profiles=(Profile("cpu", sockets=1, cores_per_socket=2, threads_per_core=1, real_memory=1000),),
        nodes=(Nodes("node[1-3]", profile="cpu"),),
        partitions=(Partition("batch", profiles=("cpu",), default=True),),
        vault=Vault(**vault), rest=Rest() if rest else None,
    ))


def inventory_file(directory: Path, name: str, *, slurm_auth: str = "munge", rest: bool = False,
                   **vault: object) -> Path:
    """An inventory file for the CLI, describing the same cluster as ``cluster()``."""
    vault = _plain_http_allowed(vault)
    version = "24.11" if slurm_auth == "slurm" else "22.05"
    args = ", ".join(f"{key}={value!r}" for key, value in vault.items())
    path = directory / f"{name}.py"
    path.write_text(f"""\
from clusterforge.inventory import host_groups
from clusterforge.model import Cluster, Host, Nodes, Partition, Profile, Rest, Vault

cluster = Cluster(
    {name!r}, slurm_version={version!r}, auth={slurm_auth!r},
    controller=Host("ctl", address="10.0.0.1"), database=Host("db", address="10.0.0.2", memory=4096),
    profiles=(Profile("cpu", sockets=1, cores_per_socket=2, threads_per_core=1, real_memory=1000),),
    nodes=(Nodes("node[1-3]", profile="cpu"),),
    partitions=(Partition("batch", profiles=("cpu",), default=True),),
    vault=Vault({args}), rest={"Rest()" if rest else "None"},
)
controller, compute, login, database, nfs = host_groups(cluster, ssh_user="root")
""")
    return path


def clean_env(**values: str) -> dict[str, str]:
    """The process environment without any VAULT_*/BAO_* variable, plus ``values``; for subprocesses."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "BAO_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(values)
    return env


def put(client: hvac.Client, path: str, data: dict, *, mount: str = "secret", kv_version: int = 2) -> None:
    if kv_version == 2:
        client.secrets.kv.v2.create_or_update_secret(path=path, secret=data, mount_point=mount)
    else:
        client.secrets.kv.v1.create_or_update_secret(path=path, secret=data, mount_point=mount)


def assert_no_leak(output: bytes | str, secret: bytes) -> None:
    """No trace of ``secret`` in ``output``: not its bytes, nor any 16-character stretch of its base64, nor any
    32-digit stretch of its hex, nor its first bytes as Python would escape them."""
    data = output.encode("utf-8", "surrogateescape") if isinstance(output, str) else output
    assert secret not in data, "the secret's raw bytes are in the output"
    b64 = base64.b64encode(secret)
    for start in range(0, len(b64) - 16, 4):
        assert b64[start:start + 16] not in data, f"the secret's base64 (from character {start}) is in the output"
    hexed = secret.hex().encode()
    for start in range(0, len(hexed) - 32, 2):
        assert hexed[start:start + 32] not in data.lower(), "the secret's hex is in the output"
    escaped = repr(secret[:12])[2:-1].encode()
    assert escaped not in data, "the secret's bytes, escaped, are in the output"
