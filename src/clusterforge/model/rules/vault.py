"""Rules for the Vault the deploy host reads the secrets from: reached over TLS, as a site directory is
(rules/directory.py); plain HTTP only where the inventory allows it in so many words (a Vault on the deploy host's
own loopback, a test's). An address left to VAULT_ADDR is the environment's, read at the deploy
(secrets/settings.py)."""

from __future__ import annotations

from .check import Check


def vault(check: Check) -> None:
    found = check.cluster.vault
    if found is None or found.address is None:
        return
    address = found.address
    if address.startswith("http://"):
        if not found.allow_plain_http:
            check.add("vault.address", f"{address!r} is plain HTTP: the deploy host's token and every secret would "
                      "cross the network in clear; give the https:// address, or allow_plain_http=True for a Vault "
                      "the deploy host reaches on its own loopback or a test", found, "address")
    elif not address.startswith("https://"):
        check.add("vault.address", f"{address!r} is not an https:// address such as 'https://vault.example.org:8200'",
                  found, "address")
