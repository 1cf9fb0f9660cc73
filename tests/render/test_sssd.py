"""sssd.conf for a site directory (render/sssd.py), read as SSSD reads it: TLS always (StartTLS for ldap://, none for
ldaps://), the pinned CA demanded, the login rule only on login hosts, the password only where the deploy adds it,
last in the domain's section; nsswitch.conf's passwd and group lines end in sss, every other line kept. And SSSD's own
`sssctl config-check` of Debian 12 and 13 accepts the file, at the mode each is given (Debian 12's refuses 0640)."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from golden_cases import cases
from needs import skip_or_fail

from clusterforge.model import Artifact, Directory, Identity, Vault, resolve
from clusterforge.render import sssd

CASE = next(c for c in cases() if c.name == "directory")
CACHE = Path(os.environ.get("CLUSTERFORGE_CACHE", "/var/cache/clusterforge"))
PASSWORD = "p#ss;w rd=x"  # what an INI reader might take for a comment, a separator or an assignment


def parsed(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, comment_prefixes=("#",), inline_comment_prefixes=None)
    parser.read_string(text)
    return parser


def domain(text: str) -> dict[str, str]:
    return dict(parsed(text)[f"domain/{sssd.DOMAIN}"])


def test_starttls_and_the_pinned_ca_demanded():
    found = domain(sssd.sssd_conf(CASE.valid(), ("compute",)))
    assert found["ldap_uri"] == "ldap://ldap1.example.org, ldap://ldap2.example.org"
    assert found["ldap_id_use_start_tls"] == "true" and found["ldap_tls_reqcert"] == "demand"
    assert found["ldap_tls_cacert"] == sssd.CA_CERT
    assert found["enumerate"] == "false" and found["entry_cache_timeout"] == "5400"
    assert found["refresh_expired_interval"] == "4050"
    assert found["access_provider"] == "permit" and "simple_allow_groups" not in found


def test_a_login_host_lets_in_the_login_group_and_the_admin_group():
    found = domain(sssd.sssd_conf(CASE.valid(), ("login",)))
    assert found["access_provider"] == "simple" and found["simple_allow_groups"] == "hpc-users, hpc-admins"


def test_ldaps_needs_no_starttls_and_an_anonymous_bind_has_no_credentials():
    spec = Identity(directory=Directory(uris=("ldaps://ldap.example.org",), base_dn="dc=example,dc=org",
                                        ca_certificate=Artifact(source="/srv/ca.pem", sha256="a" * 64)))
    valid = resolve(CASE.cluster().model_copy(update={"identity": spec, "vault": Vault()}))
    text = sssd.sssd_conf(valid, ("login",))
    found = domain(text)
    assert "ldap_id_use_start_tls" not in found and found["ldap_tls_reqcert"] == "demand"
    assert not any(key.startswith("ldap_default_") for key in found)
    assert found["access_provider"] == "permit"  # no login group: every directory user
    assert "anonymously" in text


def test_the_password_is_only_in_what_the_host_gets_last_in_the_domain_section():
    text = sssd.sssd_conf(CASE.valid(), ("login",))
    assert sssd.AUTHTOK not in domain(text) and "Vault secret/slurm/directory/ldap field bind_password" in text
    found = domain(sssd.with_bind_password(text, PASSWORD))
    assert found[sssd.AUTHTOK] == PASSWORD and found["ldap_default_authtok_type"] == "password"


def test_nsswitch_sends_passwd_and_group_to_sss_and_keeps_the_rest():
    installed = ("# site comment\npasswd:         files systemd\ngroup:          files systemd # local first\n"
                 "shadow:         files\nhosts:          files mdns4_minimal [NOTFOUND=return] dns\n")
    text = sssd.nsswitch(installed)
    assert text.splitlines() == ["# site comment", "passwd:         files systemd sss",
                                 "group:          files systemd sss # local first", "shadow:         files",
                                 "hosts:          files mdns4_minimal [NOTFOUND=return] dns"]
    assert sssd.nsswitch(text) == text
    assert sssd.nsswitch(None).startswith("passwd:         files systemd sss\ngroup:          files systemd sss\n")
    assert sssd.nsswitch("hosts: files\n") == "hosts: files\npasswd:         files sss\ngroup:          files sss\n"


ROOTS = {"bookworm": ("600",), "trixie": ("600", "640")}


@pytest.mark.parametrize("dist", sorted(ROOTS))
def test_sssd_itself_accepts_the_file(dist, tmp_path):
    """SSSD's validators know every option of its release: a misspelt or unknown one is an issue they name."""
    root = CACHE / f"sssd-{dist}"
    if not (root / ".clusterforge-complete").exists() or os.geteuid() != 0 or shutil.which("chroot") is None:
        # scripts/test.sh builds them: a skip is a gap
        skip_or_fail(f"no SSSD root: run tests/realslurm/build-debian-root.sh sssd-{dist} as root")
    conf = root / "etc/sssd/sssd.conf"
    text = sssd.with_bind_password(sssd.sssd_conf(CASE.valid(), ("login",)), PASSWORD)
    try:
        # a service host's: SSSD's simple provider with the admins and the deploy's login, or deny for nobody
        nobody = resolve(CASE.cluster().model_copy(update={"identity": CASE.cluster().identity.model_copy(
            update={"admin_group": None})}))
        for service in (sssd.sssd_conf(CASE.valid(), ("controller",), ("vagrant",)),
                        sssd.sssd_conf(nobody, ("controller",))):
            conf.write_text(sssd.with_bind_password(service, PASSWORD))
            conf.chmod(0o600)
            checked = subprocess.run(["chroot", str(root), "sssctl", "config-check"], capture_output=True, text=True,
                                     check=False, timeout=60)
            said = checked.stdout + checked.stderr
            assert checked.returncode == 0 and "Issues identified by validators: 0" in said, (service, said)
        for mode in ("600", "640"):
            conf.write_text(text)
            conf.chmod(int(mode, 8))
            checked = subprocess.run(["chroot", str(root), "sssctl", "config-check"], capture_output=True, text=True,
                                     check=False, timeout=60)
            said = checked.stdout + checked.stderr
            if mode in ROOTS[dist]:
                assert checked.returncode == 0 and "Issues identified by validators: 0" in said, said
            else:
                assert "permissions check failed" in said, said
        conf.write_text(text + "ldap_tls_requirecert = demand\n")
        conf.chmod(0o600)
        checked = subprocess.run(["chroot", str(root), "sssctl", "config-check"], capture_output=True, text=True,
                                 check=False, timeout=60)
        assert "'ldap_tls_requirecert' is not allowed" in checked.stdout + checked.stderr
    finally:
        conf.unlink(missing_ok=True)
