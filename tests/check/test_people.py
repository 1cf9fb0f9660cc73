"""`clusterforge check`'s people and adopt checks: a declared person who does not resolve, or resolves to another
uid, on a host (this machine's own getent, a real one); a compute node whose sshd stack lacks pam_slurm_adopt, runs it
with a default that fails open, or lets local users through before it (Debian's SSSD profile's pam_localuser)."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

from golden_cases import cases

from clusterforge.check import people as judge
from clusterforge.check.probes import Context, checks_for, perform
from clusterforge.slurm.commands import Answer
from clusterforge.model import Group, Identity, Person
from clusterforge.render import access

CASE = next(c for c in cases() if c.name == "people")
DEBIAN_SSHD = """\
@include common-auth
account    required     pam_nologin.so
# account  required     pam_access.so
@include common-account
session    required     pam_loginuid.so
@include common-session
@include common-password
"""
COMMON_ACCOUNT = Path("/etc/pam.d/common-account")


def local(command: str) -> Answer:
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=30, check=False)
    return Answer(done.returncode, done.stdout, done.stderr)


def context(identity: Identity | None = None, run=local, host: str = "gpu01") -> Context:
    valid = CASE.valid()
    if identity is not None:
        valid = dataclasses.replace(valid, identity=identity)
    machine = next(m for m in valid.machines if m.name == host)
    return Context(valid, machine, run)


def outcome(name: str, ctx: Context):
    check = next(c for c in checks_for(ctx.machine, ctx.valid, smoke=False) if c.name == name)
    return perform(check, ctx)


def test_this_hosts_getent_finds_a_person_missing_and_one_with_another_uid():
    # nobody is 65534 on every Debian host; the rules would refuse these names, the check reads what it is given
    spec = Identity(people=(Person("nobody", uid=65534, gid=65534), Person("daemon", uid=20001, gid=1),
                            Person("cf-nobody-here", uid=20002)),
                    groups=(Group("nogroup", gid=65534), Group("cf-no-group", gid=30001)))
    found = outcome("people", context(spec))
    assert [f.message for f in found.findings] == [
        "daemon resolves to uid 1, the inventory says 20001",
        "cf-nobody-here does not resolve (getent passwd): the deploy makes them",
        "group cf-no-group does not resolve (getent group)",
    ]
    assert found.detail == "2 of 3 people and 2 groups resolve"


def test_people_who_resolve_as_declared_are_no_finding():
    spec = Identity(people=(Person("nobody", uid=65534, gid=65534),), groups=(Group("nogroup", gid=65534),))
    assert outcome("people", context(spec)).findings == ()


def test_a_group_with_another_gid():
    _, problems = judge.people(Identity(groups=(Group("vision", gid=30001),)), "", "vision:x:30002:alice\n")
    assert [p.message for p in problems] == ["group vision resolves to gid 30002, the inventory says 30001"]


def files(texts: dict[str, str]):
    def run(command: str) -> Answer:
        path = command.split()[1]
        return Answer(0, texts[path], "") if path in texts else Answer(0, "", "")
    return run


def test_the_rendered_stack_passes_on_this_hosts_own_common_files():
    sshd = access.sshd_pam(CASE.valid())
    texts = {access.SSHD_PAM: sshd, "/etc/pam.d/common-auth": Path("/etc/pam.d/common-auth").read_text(),
             "/etc/pam.d/common-password": Path("/etc/pam.d/common-password").read_text()}
    found = outcome("adopt", context(run=files(texts)))
    assert found.findings == () and found.detail == "pam_slurm_adopt.so in sshd's account stack"


def test_debians_own_sshd_stack_is_a_finding():
    texts = {access.SSHD_PAM: DEBIAN_SSHD, "/etc/pam.d/common-account": COMMON_ACCOUNT.read_text()}
    found = outcome("adopt", context(run=files(texts)))
    assert [f.message for f in found.findings] == [
        "pam_slurm_adopt.so is not in sshd's account stack: any user reaches this node without a job"]


def test_a_commented_adopt_line_and_fail_open_defaults_are_findings():
    commented = DEBIAN_SSHD + "# account required pam_slurm_adopt.so\n"
    _, problems = judge.adopt(commented, {})
    assert "not in sshd's account stack" in problems[0].message
    _, problems = judge.adopt(DEBIAN_SSHD + "-account required pam_slurm_adopt.so action_adopt_failure=deny\n", {})
    assert [p.message.split(":")[0] for p in problems] == [
        "pam_slurm_adopt.so runs without action_generic_failure=deny"]


def test_sssds_pam_localuser_before_the_module_is_a_finding():
    sss = "account sufficient pam_localuser.so\naccount [default=bad success=ok user_unknown=ignore] pam_sss.so\n"
    sshd = DEBIAN_SSHD + f"account required {access.ADOPT}\n"
    _, problems = judge.adopt(sshd, {"common-account": sss + COMMON_ACCOUNT.read_text()})
    assert len(problems) == 1 and "pam_localuser.so' comes before" in problems[0].message
    assert judge.adopt(sshd, {"common-account": COMMON_ACCOUNT.read_text()})[1] == []


def test_adopt_is_checked_on_compute_nodes_only_and_people_everywhere():
    valid = CASE.valid()
    names = {m.name: [c.name for c in checks_for(m, valid, smoke=False)] for m in valid.machines}
    assert "adopt" in names["gpu01"] and "adopt" not in names["login1"] and "adopt" not in names["ctl"]
    assert all("people" in found for found in names.values())
    prod = next(c for c in cases() if c.name == "prod-24.11").valid()
    assert not any(c.name in ("people", "adopt") for m in prod.machines for c in checks_for(m, prod, smoke=False))


def test_a_service_host_without_the_rule_is_a_finding():
    # What a controller had before clusterforge guarded service hosts: Debian's stack, every person let in.
    texts = {access.SSHD_PAM: DEBIAN_SSHD, "/etc/pam.d/common-account": COMMON_ACCOUNT.read_text()}
    found = outcome("service-access", context(run=files(texts), host="ctl"))
    assert [f.message for f in found.findings] == [
        "sshd's account stack has no service-host rule (pam_access.so with /etc/security/access-clusterforge-service"
        ".conf): every person with a key or a password reaches this service host"]


def test_the_rendered_rule_passes_and_a_list_letting_everyone_in_or_missing_is_a_finding():
    valid = CASE.valid()
    stack = access.service_sshd_pam(DEBIAN_SSHD)
    listed = access.service_access_conf(valid, ("admin",))
    texts = {access.SSHD_PAM: stack, access.SERVICE_ACCESS_CONF: listed,
             "/etc/pam.d/common-account": COMMON_ACCOUNT.read_text()}
    found = outcome("service-access", context(run=files(texts), host="ctl"))
    assert found.findings == (), found
    assert found.detail == f"pam_access.so with {access.SERVICE_ACCESS_CONF} first in sshd's account stack"
    _, problems = judge.service_access(stack, listed.replace("-:ALL:ALL", "+:ALL:ALL"), {})
    assert [p.message for p in problems] == [
        f"{access.SERVICE_ACCESS_CONF} lets everyone in: '+:ALL:ALL'",
        f"{access.SERVICE_ACCESS_CONF} does not end with '-:ALL:ALL': whom it does not name is not refused by it"]
    _, problems = judge.service_access(stack, None, {})
    assert "missing or empty: pam_access refuses everyone here, root and the admins too" in problems[0].message
    # the rule after SSSD's profile's pam_localuser: every declared person is through before it
    late = DEBIAN_SSHD.replace("@include common-account\n", "@include common-account\n" + "\n".join(
        access.service_block()) + "\n")
    sss = "account sufficient pam_localuser.so\n" + COMMON_ACCOUNT.read_text()
    _, problems = judge.service_access(late, listed, {"common-account": sss})
    assert [p.message for p in problems] == [
        "'account sufficient pam_localuser.so' comes before the service-host rule: it can let a person in before the "
        "rule runs"]


def test_service_access_is_checked_on_service_hosts_only():
    valid = CASE.valid()
    names = {m.name: [c.name for c in checks_for(m, valid, smoke=False)] for m in valid.machines}
    assert "service-access" in names["ctl"]
    assert "service-access" not in names["login1"] and "service-access" not in names["gpu01"]


def test_sshd_without_pam_on_a_service_host_is_a_finding():
    stack = access.service_sshd_pam(DEBIAN_SSHD)
    listed = access.service_access_conf(CASE.valid())
    _, problems = judge.service_access(stack, listed, {}, "usepam no\n")
    assert [p.message for p in problems] == [
        "sshd runs without PAM (UsePAM no): the service-host rule never runs, and every person with a key reaches "
        "this service host"]
    assert judge.service_access(stack, listed, {}, "usepam yes\n")[1] == []
