"""What render/sssd.py gives a directory person's login: SSSD reads their keys from sshPublicKey (the openssh-lpk
schema), sshd asks SSSD for them, a login host makes their home 0700 at first login, and SSSD's in-memory cache
holds an entry for a tenth of the inventory's cache bound at most (its own default, 300 s, would keep a removed
person resolving for that long past the bound)."""

from __future__ import annotations

from golden_cases import cases

from clusterforge.model import resolve
from clusterforge.render import sssd
from render.test_sssd import domain, parsed

CASE = next(c for c in cases() if c.name == "directory")


def with_cache(seconds: int):
    cluster = CASE.cluster()
    directory = cluster.identity.directory.model_copy(update={"entry_cache_timeout": seconds})
    identity = cluster.identity.model_copy(update={"directory": directory})
    return resolve(cluster.model_copy(update={"identity": identity}))


def test_keys_come_from_sshpublickey_and_sshd_asks_sssd():
    assert domain(sssd.sssd_conf(CASE.valid(), ("compute",)))["ldap_user_ssh_public_key"] == "sshPublicKey"
    dropin = sssd.sshd_dropin(CASE.valid())
    settings = [line.split() for line in dropin.splitlines() if line and not line.startswith("#")]
    assert settings == [["AuthorizedKeysCommand", "/usr/bin/sss_ssh_authorizedkeys"],
                        ["AuthorizedKeysCommandUser", "nobody"]]


def test_the_home_made_at_first_login_is_the_persons_alone():
    profile = sssd.mkhomedir_profile(CASE.valid())
    assert "Session-Type: Additional\n" in profile
    assert profile.endswith("Session:\n\toptional\t\t\tpam_mkhomedir.so umask=0077 skel=/etc/skel\n")


def test_the_in_memory_cache_holds_an_entry_a_tenth_of_the_bound_at_most():
    assert parsed(sssd.sssd_conf(CASE.valid(), ("compute",)))["nss"]["memcache_timeout"] == "300"
    short = with_cache(60)
    assert short.identity.directory.entry_cache_timeout == 60
    assert parsed(sssd.sssd_conf(short, ("compute",)))["nss"]["memcache_timeout"] == "6"
    assert parsed(sssd.sssd_conf(with_cache(1200), ("compute",)))["nss"]["memcache_timeout"] == "120"
