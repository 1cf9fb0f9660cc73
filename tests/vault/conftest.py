"""Fixtures for the tests against a real OpenBao server.

One audited dev server serves the whole session; tests that seal a server or need TLS start one of their own. Each
test works on its own cluster name, hence its own secret paths, so tests do not see each other's secrets. Nothing
here reads the operator's VAULT_* variables or ~/.vault-token: clusterforge gets an explicit environment and HOME.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import hvac
import pytest
from vault.bao_server import ROOT_TOKEN, BaoServer

READ_POLICY = """
path "secret/data/slurm/*" { capabilities = ["read"] }
path "kv1/slurm/*" { capabilities = ["read"] }
"""


@pytest.fixture(scope="session")
def bao(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BaoServer]:
    server = BaoServer(tmp_path_factory.mktemp("bao"), audit=True).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def root(bao: BaoServer) -> hvac.Client:
    """A root client, with a KV v1 mount at kv1/ and AppRole enabled next to the dev server's KV v2 secret/."""
    client = hvac.Client(url=bao.address, token=ROOT_TOKEN)
    client.sys.enable_secrets_engine("kv", path="kv1", options={"version": "1"})
    client.sys.enable_auth_method("approle")
    client.sys.create_or_update_policy("clusterforge-read", READ_POLICY)
    return client


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[BaoServer]:
    """A server for this test only, for tests that break it (seal it)."""
    server = BaoServer(tmp_path / "own").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[BaoServer]:
    server = BaoServer(tmp_path / "tls-server", tls=True).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def name() -> str:
    return f"c{uuid.uuid4().hex[:10]}"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty HOME: no ~/.vault-token unless a test writes one."""
    path = tmp_path / "home"
    path.mkdir()
    return path
