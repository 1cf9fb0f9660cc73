"""Rules for a site directory (Identity(directory=...)): one source of people, TLS only, DNs and names SSSD takes, a
pinned CA, a cache bound that spares the directory, and an OS that ships SSSD; each problem named by its entry and
inventory line."""

from __future__ import annotations

import pytest
from clusters import only_problem, problems, small_cluster

from clusterforge.errors import InventoryError
from clusterforge.model import Accounting, Artifact, Directory, Group, Identity, Person, Stack, User, resolve

CA = Artifact(source="/etc/clusterforge/ldap-ca.pem", sha256="a" * 64)


def directory(**fields) -> Directory:
    given = dict(uris=("ldaps://ldap1.example.org", "ldaps://ldap2.example.org:636"), base_dn="dc=example,dc=org",
                 ca_certificate=CA)
    given.update(fields)
    return Directory(**given)


def test_a_directory_resolves_with_its_groups_unseen():
    spec = Identity(directory=directory(login_group="hpc-users", bind_dn="cn=sssd,ou=services,dc=example,dc=org"),
                    admin_group="hpc-admins")
    assert resolve(small_cluster(identity=spec)).identity == spec


def test_starttls_uris_resolve():
    spec = Identity(directory=directory(uris=("ldap://ldap1.example.org", "ldap://10.0.0.5:389")))
    assert resolve(small_cluster(identity=spec)).identity.directory.uris[1] == "ldap://10.0.0.5:389"


def test_a_directory_beside_declared_people_is_refused_naming_the_entry():
    spec = Identity(directory=directory(), people=(Person("alice", uid=20001),))
    problem = only_problem(small_cluster(identity=spec))
    assert "identity.directory" in problem and "one source of people" in problem
    assert "test_directory.py" in problem


def test_a_directory_beside_declared_groups_is_refused():
    spec = Identity(directory=directory(), groups=(Group("vision", gid=30001),))
    assert "one source of people" in only_problem(small_cluster(identity=spec))


@pytest.mark.parametrize("uri", ["http://ldap.example.org", "ldapi:///", "ldap.example.org", "ldaps://",
                                 "ldaps://ldap.example.org/dc=example,dc=org", "ldaps://ldap.example.org:99999"])
def test_a_uri_neither_ldaps_nor_starttls_is_refused(uri):
    problem = only_problem(small_cluster(identity=Identity(directory=directory(uris=(uri,)))))
    assert "identity.directory.uris" in problem and repr(uri) in problem


def test_plain_ldap_is_never_used_the_message_says_starttls_is_required():
    problem = only_problem(small_cluster(identity=Identity(directory=directory(uris=("ldapx://a.example.org",)))))
    assert "StartTLS, required" in problem and "never read over a plain connection" in problem


def test_mixed_schemes_and_no_server_and_a_server_twice():
    mixed = only_problem(small_cluster(identity=Identity(directory=directory(
        uris=("ldaps://a.example.org", "ldap://b.example.org")))))
    assert "mixes ldaps:// and ldap://" in mixed
    assert "at least one LDAP server" in only_problem(small_cluster(identity=Identity(directory=directory(uris=()))))
    twice = only_problem(small_cluster(identity=Identity(directory=directory(
        uris=("ldaps://a.example.org", "ldaps://a.example.org")))))
    assert "names a server twice" in twice


@pytest.mark.parametrize("field", ["base_dn", "user_base", "group_base", "bind_dn"])
def test_a_dn_that_is_not_one(field):
    problem = only_problem(small_cluster(identity=Identity(directory=directory(**{field: "example.org"}))))
    assert f"identity.directory.{field}" in problem and "is not a DN" in problem


def test_the_ca_certificate_is_pinned_by_a_real_digest():
    bad = Artifact(source="https://pki.example.org/ca.pem", sha256="abc")
    problem = only_problem(small_cluster(identity=Identity(directory=directory(ca_certificate=bad))))
    assert "identity.directory.ca_certificate.sha256" in problem and "sha256sum ca.pem" in problem


def test_a_relative_ca_path_is_refused():
    problem = only_problem(small_cluster(identity=Identity(directory=directory(
        ca_certificate=Artifact(source="ca.pem", sha256="a" * 64)))))
    assert "identity.directory.ca_certificate.source" in problem


def test_a_cache_bound_that_would_send_every_job_start_to_the_directory():
    problem = only_problem(small_cluster(identity=Identity(directory=directory(entry_cache_timeout=5))))
    assert "identity.directory.entry_cache_timeout" in problem and "at least 60" in problem


def test_group_names_sssd_cannot_be_given():
    found = problems(small_cluster(identity=Identity(directory=directory(login_group="a,b"), admin_group="x\ny")))
    assert any("identity.directory.login_group" in p for p in found)
    assert any("identity.admin_group" in p for p in found)
    assert len(found) == 2


def test_the_admin_group_of_a_directory_is_not_looked_for_among_declared_groups():
    resolve(small_cluster(identity=Identity(directory=directory(), admin_group="hpc-admins")))
    # declared people: the admin group must be one of theirs
    assert "identity.admin_group" in only_problem(small_cluster(identity=Identity(
        people=(Person("alice", uid=20001),), admin_group="hpc-admins")))


def test_forky_has_no_sssd_so_a_26_05_cluster_cannot_read_a_directory():
    problem = only_problem(small_cluster(slurm_version="26.05", identity=Identity(directory=directory())))
    assert "identity.directory" in problem and "Debian testing (forky)" in problem and "no SSSD" in problem


def test_a_pinned_26_05_from_a_site_repository_is_left_to_the_deploy():
    cluster = small_cluster(slurm_version="26.05", stack=Stack(slurm="26.05.5-1"),
                            identity=Identity(directory=directory()))
    assert resolve(cluster).identity.directory is not None


def test_accounting_users_are_not_checked_against_a_directory():
    accounting = Accounting(users=(User("dana", accounts=("root",)),))
    resolve(small_cluster(accounting=accounting, identity=Identity(directory=directory())))


def test_a_slurm_user_declared_people_do_not_know_is_refused():
    accounting = Accounting(users=(User("dana", accounts=("root",)),))
    spec = Identity(people=(Person("alice", uid=20001),))
    problem = only_problem(small_cluster(accounting=accounting, identity=spec))
    assert "accounting.users[dana]" in problem and "not a person of identity.people" in problem


def test_the_password_has_no_place_in_the_inventory_and_a_mistaken_one_is_not_echoed():
    with pytest.raises(InventoryError) as raised:
        Directory(uris=("ldaps://a.example.org",), base_dn="dc=x", ca_certificate=CA, bind_password="s3cret")
    assert "Directory.bind_password: unknown field" in str(raised.value) and "s3cret" not in str(raised.value)
