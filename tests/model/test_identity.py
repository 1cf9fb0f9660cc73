"""Rules for the cluster's people (Identity): ids, names, groups, keys, shells, the admin group, Slurm's users and
what pam_slurm_adopt needs of slurm.conf."""

from __future__ import annotations

import inspect

import pytest
from click.testing import CliRunner
from clusters import only_problem, problems, small_cluster

from clusterforge.cli import cli
from clusterforge.model import Accounting, Group, Identity, Person, Rest, Setup, SystemUser, User, resolve

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHkdpqRbBT6ybJEhpxSUcU1xw07q7O6WZCVeLUmsohHF alice@site"


def people(*entries: Person, groups: tuple[Group, ...] = (Group("vision", gid=30001),), **fields) -> Identity:
    return Identity(people=entries, groups=groups, **fields)


def test_declared_people_resolve():
    spec = people(Person("alice", uid=20001, groups=("vision",), ssh_keys=(KEY,)), admin_group="vision")
    assert resolve(small_cluster(identity=spec)).identity == spec


def test_a_uid_given_twice_names_both_and_the_inventory_line():
    bob = inspect.currentframe().f_lineno + 2  # the line that declares the second person with alice's uid
    problem = only_problem(small_cluster(identity=people(Person("alice", uid=20001),
                                                         Person("bob", uid=20001, gid=20002))))
    assert "identity.people[bob].uid" in problem and "uid 20001 is also alice's" in problem
    assert problem.endswith(f"test_identity.py:{bob})"), problem


def test_a_uid_collision_in_an_inventory_file_is_refused_by_validate_with_its_line(tmp_path):
    inventory = tmp_path / "site.py"
    inventory.write_text(
        "from clusters import small_cluster\n"
        "from clusterforge.model import Identity, Person\n"
        "cluster = small_cluster(identity=Identity(people=(\n"
        "    Person('alice', uid=20001),\n"
        "    Person('bob', uid=20001, gid=20002),\n"
        ")))\n")
    result = CliRunner().invoke(cli, ["validate", str(inventory)])
    assert result.exit_code != 0
    assert "identity.people[bob].uid: uid 20001 is also alice's" in result.output
    assert "site.py:5)" in result.output, result.output


def test_a_gid_of_a_person_colliding_with_a_site_group():
    problem = only_problem(small_cluster(identity=people(Person("alice", uid=30001))))
    assert "identity.groups[vision].gid" in problem and "alice's own group" in problem


@pytest.mark.parametrize("uid", [999, 0, 64030, 65534])
def test_ids_outside_the_range_for_people(uid):
    problem = only_problem(small_cluster(identity=people(Person("alice", uid=uid, gid=20001))))
    assert "identity.people[alice].uid" in problem and "1000 to 59999" in problem


def test_a_collision_with_the_daemons_fixed_ids():
    cluster = small_cluster(setup=Setup(slurm_user=SystemUser(uid=20001, gid=20001)),
                            identity=people(Person("alice", uid=20001, gid=20002)))
    assert "uid 20001 is also the slurm user's" in only_problem(cluster)


def test_slurmrestd_ids_collide_only_with_rest():
    spec = people(Person("alice", uid=5000, gid=5001))
    setup = Setup(slurmrestd_user=SystemUser(uid=5000, gid=5000))
    resolve(small_cluster(setup=setup, identity=spec))
    assert "the slurmrestd user" in only_problem(small_cluster(setup=setup, identity=spec, rest=Rest()))


@pytest.mark.parametrize("name", ["slurm", "munge", "root", "sudo"])
def test_a_system_name(name):
    assert "system account or group" in only_problem(small_cluster(identity=people(Person(name, uid=20001))))


@pytest.mark.parametrize("name", ["Alice", "1alice", "al ice", "a" * 33])
def test_a_name_useradd_refuses(name):
    assert "not a name useradd takes" in only_problem(small_cluster(identity=people(Person(name, uid=20001))))


def test_a_site_group_named_like_a_person():
    problem = only_problem(small_cluster(identity=people(Person("alice", uid=20001),
                                                         groups=(Group("alice", gid=30001),))))
    assert "identity.groups[alice]" in problem and "also a person's name" in problem


def test_an_unknown_group_and_admin_group():
    found = problems(small_cluster(identity=people(Person("alice", uid=20001, groups=("nlp",)), admin_group="ops")))
    assert any("identity.people[alice].groups" in p and "'nlp'" in p for p in found)
    assert any("identity.admin_group" in p and "'ops'" in p for p in found)
    assert len(found) == 2


@pytest.mark.parametrize(("key", "said"), [
    ("ssh-ed25519", "is not 'type base64 [comment]'"),
    ("ssh-dss AAAAB3NzaC1kc3M= x", "not an OpenSSH public key type"),
    ("ssh-ed25519 not-base64! x", "not base64"),
    ("ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIHkdpqRbBT6ybJEhpxSUcU1xw07q7O6WZCVeLUmsohHF x", "'ssh-ed25519' key, not"),
    (KEY + "\n" + KEY, "line break"),
])
def test_a_bad_key(key, said):
    problem = only_problem(small_cluster(identity=people(Person("alice", uid=20001, ssh_keys=(KEY, key)))))
    assert "identity.people[alice].ssh_keys" in problem and "key 2" in problem and said in problem


@pytest.mark.parametrize("shell", ["bash", "/bin/ba sh", "/bin/bash:x"])
def test_a_bad_shell(shell):
    assert "identity.people[alice].shell" in only_problem(
        small_cluster(identity=people(Person("alice", uid=20001, shell=shell))))


def test_a_slurm_user_no_person_is():
    acct = Accounting(users=(User("alice", accounts=("root",)), User("zoe", accounts=("root",))))
    problem = only_problem(small_cluster(accounting=acct, identity=people(Person("alice", uid=20001))))
    assert "accounting.users[zoe]" in problem and "not a person of identity.people" in problem


def test_slurm_users_are_not_judged_without_declared_people():
    acct = Accounting(users=(User("zoe", accounts=("root",)),))
    resolve(small_cluster(accounting=acct, identity=Identity(admin_group=None)))


def test_adopt_needs_cgroup_tracking():
    cluster = small_cluster(identity=people(Person("alice", uid=20001)),
                            slurm_conf_extra={"ProctrackType": "proctrack/linuxproc"})
    problem = only_problem(cluster)
    assert "identity.adopt" in problem and "proctrack/cgroup" in problem and "adopt=False" in problem
    resolve(small_cluster(identity=people(Person("alice", uid=20001), adopt=False),
                          slurm_conf_extra={"ProctrackType": "proctrack/linuxproc"}))


def test_every_problem_at_once():
    found = problems(small_cluster(identity=people(Person("Alice", uid=10, shell="sh"), admin_group="none")))
    assert len(found) == 4, found


def test_a_type_mistake_in_a_person_is_named_by_its_place_and_the_rules_still_run():
    from clusterforge.model.base import deferring

    with deferring():
        cluster = small_cluster(identity=people(Person("alice", uid="twenty"), Person("bob", uid=20002),
                                                admin_group="ops"))
    found = problems(cluster)
    assert any(p.startswith("identity.people[alice].uid") for p in found), found
    assert any("identity.admin_group" in p for p in found), found


def test_a_service_host_group_that_is_not_declared_or_given_twice_is_named_with_its_line():
    line = inspect.currentframe().f_lineno + 3  # the line of service_host_groups
    found = problems(small_cluster(identity=Identity(
        people=(Person("alice", uid=20001),), groups=(Group("vision", gid=30001),), admin_group="vision",
        service_host_groups=("vision", "hpcstaff"))))
    assert found == [
        f"identity.service_host_groups[0]: 'vision' is given twice (the admin group is always let in) "
        f"(tests/model/test_identity.py:{line})",
        f"identity.service_host_groups[1]: 'hpcstaff' is not a group of identity.groups "
        f"(tests/model/test_identity.py:{line})"]


def test_service_host_groups_take_only_names_pam_access_and_sshd_can_hold():
    found = problems(small_cluster(identity=Identity(service_host_groups=("hpc staff", "a,b", "x*"))))
    assert [p.split(":")[0] for p in found] == [f"identity.service_host_groups[{i}]" for i in range(3)]
    assert all("is not a group name pam_access and sshd can be given" in p for p in found)
    # a directory's groups are not seen by validation; a name with a blank is still refused
    from clusterforge.model import Artifact, Directory
    directory = Directory(uris=("ldaps://ldap.example.org",), base_dn="dc=example,dc=org",
                          ca_certificate=Artifact(source="/srv/ca.pem", sha256="a" * 64))
    resolve(small_cluster(identity=Identity(directory=directory, admin_group="hpc-admins",
                                            service_host_groups=("hpc-staff",))))
    found = problems(small_cluster(identity=Identity(directory=directory, admin_group="domain admins")))
    assert any(p.startswith("identity.admin_group: 'domain admins' cannot be named in pam_access's list")
               for p in found)
