"""Rules for the Vault the deploy host reads the secrets from: reached over TLS, unless the inventory says otherwise."""

from __future__ import annotations

import pytest
from clusters import only_problem, small_cluster

from clusterforge.model import Vault, resolve


@pytest.mark.parametrize("address", ["http://vault.example.org:8200", "http://127.0.0.1:8210"])
def test_a_plain_http_address_is_refused(address):
    # As a directory is never read over a plain connection: the token and every secret would cross in clear.
    vault = Vault(address=address)
    assert only_problem(small_cluster(vault=vault)) == (
        f"vault.address: {address!r} is plain HTTP: the deploy host's token and every secret would cross the "
        "network in clear; give the https:// address, or allow_plain_http=True for a Vault the deploy host reaches "
        f"on its own loopback or a test ({vault.origin_of('address')})")


def test_plain_http_is_taken_where_the_inventory_allows_it():
    resolve(small_cluster(vault=Vault(address="http://127.0.0.1:8210", allow_plain_http=True)))


@pytest.mark.parametrize("vault", [Vault(address="https://vault.example.org:8200"), Vault()])
def test_an_https_address_or_none_is_taken(vault):
    resolve(small_cluster(vault=vault))


def test_an_address_without_https_is_refused():
    assert only_problem(small_cluster(vault=Vault(address="vault.example.org:8200"))).startswith(
        "vault.address: 'vault.example.org:8200' is not an https:// address such as 'https://vault.example.org:8200'")
