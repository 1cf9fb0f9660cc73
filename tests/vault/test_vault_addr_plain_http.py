"""A plain http:// VAULT_ADDR, refused as the inventory's own http:// address is, unless the inventory's Vault says
allow_plain_http=True: by the secrets commands, and by the commands that deploy before they connect to any host.
No server is needed: the refusal comes before any request."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from vault.bao_server import closed_port
from vault.vault_cases import clean_env, inventory_file

PLAIN = "http://vault.example.org:8200"
REFUSED = f"Error: VAULT_ADDR={PLAIN} is plain HTTP"


def run(tmp_path: Path, *args: str, address: str = PLAIN) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clusterforge.cli", *args], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120,
                          env=clean_env(HOME=str(tmp_path), VAULT_ADDR=address, VAULT_TOKEN="t"))


@pytest.mark.parametrize("command", ["secrets check", "secrets check --json", "secrets init",
                                     "secrets rotate INVENTORY munge-key", "apply -y", "apply", "plan", "plan --json",
                                     "roll --apply --reboot"])
def test_a_plain_http_vault_addr_is_one_error_line_before_any_host_is_reached(tmp_path, command):
    inventory = str(inventory_file(tmp_path, "plain"))  # Vault(): the address is left to VAULT_ADDR
    words = command.split() if "INVENTORY" in command else [*command.split(), "INVENTORY"]
    result = run(tmp_path, *(inventory if word == "INVENTORY" else word for word in words))
    # plan's 2 is "changes pending" (--detailed-exitcode), so its mistakes exit 1.
    assert result.returncode == (1 if command.startswith("plan") else 2), result.stdout + result.stderr
    assert result.stdout == "" and result.stderr.startswith(REFUSED), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "https://" in result.stderr and "Vault(allow_plain_http=True)" in result.stderr
    assert not (tmp_path / ".ssh" / "known_hosts").exists()  # made just before pyinfra would connect


def test_the_inventory_allowing_plain_http_lets_vault_addr_through(tmp_path):
    inventory = str(inventory_file(tmp_path, "allowed", allow_plain_http=True))
    result = run(tmp_path, "secrets", "check", inventory, address=f"http://127.0.0.1:{closed_port()}")
    assert result.returncode == 2 and "cannot reach Vault" in result.stderr, result.stderr
    assert "plain HTTP" not in result.stderr


def test_an_address_in_the_inventory_wins_and_a_plain_http_vault_addr_is_then_not_read(tmp_path):
    address = f"https://127.0.0.1:{closed_port()}"
    result = run(tmp_path, "secrets", "check", str(inventory_file(tmp_path, "named", address=address)))
    assert result.returncode == 2 and "cannot reach Vault" in result.stderr, result.stderr
    assert "plain HTTP" not in result.stderr
