"""`clusterforge check`'s directory check: on every host of a cluster that reads a site directory, SSSD runs, the
directory knows each accounting user and the admin and login groups, and the host's NSS gives the directory's uid
(not a local account's, nor nothing where nsswitch.conf leaves SSSD out). getent's own output format is this host's
real getent's (`getent -s files`), the answers of SSSD are as getent prints them."""

from __future__ import annotations

import dataclasses
import subprocess

from golden_cases import cases

from clusterforge.check import directory as judge
from clusterforge.check.probes import Context, checks_for, perform
from clusterforge.slurm.commands import Answer
from clusterforge.model import Accounting, User

CASE = next(c for c in cases() if c.name == "directory")
ALICE = "alice:*:20001:20001:Alice:/home/alice:/bin/bash\n"
GROUPS = "hpc-users:*:30001:alice\nhpc-admins:*:30000:\n"


def valid(*users: str):
    found = CASE.valid()
    return dataclasses.replace(found, accounting=Accounting(users=tuple(User(u, accounts=("root",)) for u in users)))


def host(answers: dict[str, str]):
    """A host whose commands answer from ``answers`` by their start, as the real ones print."""
    def run(command: str) -> Answer:
        for start, out in answers.items():
            if command.startswith(start):
                return Answer(0, out, "")
        raise AssertionError(f"not expected: {command}")
    return run


def outcome(context: Context):
    check = next(c for c in checks_for(context.machine, context.valid, smoke=False) if c.name == "directory")
    return perform(check, context)


def context(run, *users: str, name: str = "gpu01") -> Context:
    found = valid(*users)
    return Context(found, next(m for m in found.machines if m.name == name), run)


def answers(sss: str = ALICE, nss: str = ALICE, active: str = "active\n") -> dict[str, str]:
    return {"systemctl is-active sssd": active, "getent -s sss passwd": sss, "getent passwd": nss,
            "getent -s sss group": GROUPS}


def test_every_host_of_a_directory_cluster_is_checked():
    found = valid()
    assert all("directory" in [c.name for c in checks_for(m, found, smoke=False)] for m in found.machines)
    people = next(c for c in cases() if c.name == "people").valid()
    assert not any(c.name == "directory" for m in people.machines for c in checks_for(m, people, smoke=False))


def test_a_host_that_resolves_the_directory_as_it_says():
    found = outcome(context(host(answers()), "alice"))
    assert found.status == "ok" and found.detail == "sssd active; alice uid 20001, 2 of 2 groups"


def test_a_slurm_user_the_directory_does_not_know():
    found = outcome(context(host(answers(sss="", nss="")), "alice"))
    assert found.status == "FINDING"
    assert "alice, a Slurm user of the inventory, is not in the directory" in found.findings[0].message


def test_a_local_account_ahead_of_the_directory_and_nsswitch_without_sss():
    local = ALICE.replace("20001:20001", "1001:1001")
    found = outcome(context(host(answers(nss=local)), "alice"))
    assert "resolves to uid 1001 here, the directory says 20001" in found.findings[0].message
    found = outcome(context(host(answers(nss="")), "alice"))
    assert "its passwd line does not ask sss" in found.findings[0].message


def test_sssd_not_running_is_one_finding():
    found = outcome(context(host(answers(active="inactive\n")), "alice"))
    assert [f.message for f in found.findings] == ["sssd is inactive: no lookup reaches the directory"]


def test_a_missing_group_and_no_names_to_look_up():
    run = host({**answers(), "getent -s sss group": "hpc-users:*:30001:alice\n"})
    found = outcome(context(run))
    assert [f.message for f in found.findings] == ["group hpc-admins is not in the directory (getent -s sss group)"]


def test_the_judge_reads_getents_own_lines():
    real = subprocess.run(["getent", "-s", "files", "passwd", "root"], capture_output=True, text=True, check=True)
    detail, problems = judge.directory("active", ["root"], [], real.stdout, real.stdout, "")
    assert problems == [] and "root uid 0" in detail
    detail, problems = judge.directory("active", [], [], "", "", "")
    assert problems == [] and "no names to look up" in detail
