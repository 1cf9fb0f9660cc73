"""End to end: the cluster's people from a site directory (model/identity.py's Directory, roles/directory.py), read
through SSSD from a real OpenLDAP server: Debian's slapd on ctl (testbed/directory.sh), StartTLS with a certificate
of a CA this test cluster made, SSSD binding as an account of its own, the only one that may read the directory.

The test fills the directory (alice, bob and carol with the uids the inventory declares, ops, and dave, whom only the
directory knows, with an SSH key in sshPublicKey) and redeploys the shared cluster with
CLUSTERFORGE_TESTBED_IDENTITY=directory (inventories/vagrant.py), whose accounting then names dave. It shows: dave
submits at once after the deploy that first names him (the declared-user race cannot happen); he logs in to the login
host with the key the directory holds, his home made at that first login, and his job on a GPU node writes to it on
the shared /home; he is the same uid on every machine; a GPU node refuses him without a job there and takes him into
his job with one (pam_slurm_adopt); removed from the directory, he is refused once the cache's bound (the inventory's
entry_cache_timeout, 60 s on the test cluster) has passed. SSSD's start restarts nothing of Slurm. Then the cluster
goes back to its declared people for the other modules, and a plan after that deploy has nothing to do.

Debian forky has no SSSD: the module skips there.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from e2e.test_boundary_access import refused_by_the_service_host
from e2e.testbed import MACHINES, STATE, Testbed

pytestmark = pytest.mark.e2e

CTL, LOGIN, GPU01 = MACHINES["ctl"], MACHINES["login1"], MACHINES["gpu01"]
HOMES = STATE / "home"  # this machine's directory that every machine mounts at /home (the Vagrantfile)
SUFFIX = "dc=cluster,dc=test"
# The inventory's people, as the directory holds them (their declared ids), and dave, whom only the directory knows.
PEOPLE = {"alice": 2001, "bob": 2002, "carol": 2003, "dave": 2004}
OPS = 2100
CACHE_BOUND_S = 60  # inventories/vagrant.py's entry_cache_timeout for the directory
NO_JOB = "Access denied by pam_slurm_adopt: you have no active jobs on this node"
CGROUP_JOB = re.compile(r"/job_(\d+)(?:/|$)", re.M)
# What SSSD's start must leave running as it was: each Slurm daemon and munged.
SLURM_UNITS = {CTL: "slurmctld slurmdbd munge", GPU01: "slurmd munge", MACHINES["gpu02"]: "slurmd munge"}


def ldif(key: str) -> str:
    entries = []
    for name, uid in PEOPLE.items():
        lpk = f"objectClass: ldapPublicKey\nsshPublicKey: {key}\n" if name == "dave" else ""
        entries.append(f"dn: uid={name},ou=people,{SUFFIX}\nobjectClass: inetOrgPerson\nobjectClass: posixAccount\n"
                       f"{lpk}uid: {name}\ncn: {name.title()} Example\nsn: Example\nuidNumber: {uid}\n"
                       f"gidNumber: {uid}\nhomeDirectory: /home/{name}\nloginShell: /bin/bash\n")
        entries.append(f"dn: cn={name},ou=groups,{SUFFIX}\nobjectClass: posixGroup\ncn: {name}\ngidNumber: {uid}\n"
                       f"memberUid: {name}\n")
    entries.append(f"dn: cn=ops,ou=groups,{SUFFIX}\nobjectClass: posixGroup\ncn: ops\ngidNumber: {OPS}\n"
                   "memberUid: carol\n")
    return "\n".join(entries)


def dns() -> list[str]:
    return [f"{kind}={name},ou={ou},{SUFFIX}" for name in PEOPLE
            for kind, ou in (("uid", "people"), ("cn", "groups"))] + [f"cn=ops,ou=groups,{SUFFIX}"]


def started(bed: Testbed) -> dict[str, str]:
    """When each Slurm daemon (and munged) last started, per machine."""
    return {address: bed.run(address, f"systemctl show --property=Id,ActiveEnterTimestampMonotonic {units}")
            for address, units in SLURM_UNITS.items()}


@pytest.fixture(scope="module")
def directory(testbed, tmp_path_factory):
    """slapd on ctl with the people above, and the cluster deployed with the directory; afterwards, the declared
    people again. Yields dave's ssh_config and the deploy that switched."""
    if testbed.dist == "forky":
        pytest.skip("Debian forky has no SSSD (sssd, sssd-ldap, libnss-sss, libpam-sss): the deploy refuses a site "
                    "directory there (docs/identity.md)")
    begun = time.monotonic()
    made = testbed.script("directory.sh", timeout=600)
    assert made.returncode == 0, f"testbed/directory.sh failed:\n{made.stdout[-3000:]}\n{made.stderr[-3000:]}"
    keys = tmp_path_factory.mktemp("directory")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dave@directory", "-f", str(keys / "dave")],
                   check=True)
    config = keys / "ssh_config"
    config.write_text(f"Host *\n  User dave\n  IdentityFile {keys / 'dave'}\n  IdentitiesOnly yes\n"
                      "  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel INFO\n  BatchMode yes\n"
                      "  ConnectTimeout 10\n")
    key = (keys / "dave.pub").read_text().strip()
    # Whatever an earlier run left (CLUSTERFORGE_E2E_REUSE), then the people.
    testbed.run(CTL, f"ldapdelete -c -Q -Y EXTERNAL -H ldapi:/// {' '.join(dns())} >/dev/null 2>&1; true")
    testbed.run(CTL, f"ldapadd -Q -Y EXTERNAL -H ldapi:/// >/dev/null <<'LDIF'\n{ldif(key)}LDIF")
    before = started(testbed)
    os.environ["CLUSTERFORGE_TESTBED_IDENTITY"] = "directory"
    try:
        switched = testbed.deploy()
        assert switched.returncode == 0, f"the deploy with the directory failed:\n{switched.output[-6000:]}"
        yield config, switched, before
    finally:
        os.environ.pop("CLUSTERFORGE_TESTBED_IDENTITY", None)
        back = testbed.deploy()
        assert back.returncode == 0, f"the deploy back to declared people failed:\n{back.output[-6000:]}"
        # Converged: nothing is left for a next deploy to do (and the declared people log in again: test_identity).
        plan = testbed.plan("--detailed-exitcode")
        assert plan.returncode == 0 and "Plan: nothing to do on 4 hosts." in plan.stdout, plan.stdout[-4000:]
        print(f"\ntest_directory on {testbed.dist}: {time.monotonic() - begun:.0f} s in all (switch deploy "
              f"{switched.seconds:.0f} s, {switched.changed} changes; back {back.seconds:.0f} s, {back.changed} "
              "changes)")


def ssh(config: Path, address: str, command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``command`` as dave over SSH with his key; a GPU node through the login host (ProxyJump)."""
    jump = ["-J", f"dave@{LOGIN}"] if address != LOGIN else []
    return subprocess.run(["ssh", "-F", str(config), *jump, f"dave@{address}", command], check=False, text=True,
                          capture_output=True, timeout=timeout)


def test_dave_named_by_the_deploy_submits_at_once_with_the_directorys_key_and_writes_his_home(testbed, directory):
    config, switched, before = directory
    # SSSD came up before any account named dave; its start restarted nothing of Slurm.
    output = switched.output
    sssd = output.find("Starting operation: directory | sssd runs")
    assert 0 <= sssd < output.find("Starting operation: slurmctld | "), sssd
    assert started(testbed) == before
    for name, address in MACHINES.items():
        assert testbed.run(address, "systemctl is-active sssd").strip() == "active", name
    # His first login: the key is the directory's (nothing of his on any disk), his home made now, his alone.
    out = ssh(config, LOGIN, "cd && stat -c '%u %a' . && sbatch --wait --parsable --nodelist=gpu02 "
                             "--output=from-job-%j.out --wrap 'echo \"$(hostname) $(id -u)\"'", timeout=180)
    assert out.returncode == 0, out.stderr
    home, job = out.stdout.split()[:2], out.stdout.split()[2]
    assert home == [str(PEOPLE["dave"]), "700"], out.stdout
    assert not (HOMES / "dave" / ".ssh").exists()  # the key he logged in with is only in the directory
    written = HOMES / "dave" / f"from-job-{job}.out"
    assert written.read_text() == f"gpu02 {PEOPLE['dave']}\n"
    assert written.stat().st_uid == PEOPLE["dave"]


def test_one_uid_on_every_machine_and_only_sssds_account_reads_the_directory(testbed, directory):
    for name, address in MACHINES.items():
        entry = testbed.run(address, "getent passwd dave").strip().split(":")
        assert entry[2:4] == [str(PEOPLE["dave"])] * 2 and entry[5:] == ["/home/dave", "/bin/bash"], (name, entry)
        assert testbed.run(address, "getent -s files passwd dave; true").strip() == "", name  # no local account
        assert "ops" in testbed.run(address, "id -Gn carol").split(), name
    # StartTLS with the CA this cluster made; an anonymous bind sees nothing: SSSD's reads are its bind account's.
    # (slapd then answers "No such object" for the base itself: exit 32.)
    anonymous = testbed.run(CTL, f"ldapsearch -x -ZZ -LLL -H ldap://ctl -b ou=people,{SUFFIX} uid=dave dn; "
                                 "echo exit $?")
    assert anonymous.split() == ["exit", "32"], anonymous


def test_a_gpu_node_refuses_dave_without_a_job_and_takes_him_into_his_job(testbed, directory):
    config, _, _ = directory
    refused = ssh(config, GPU01, "true")
    assert refused.returncode == 255 and NO_JOB in refused.stderr, refused.stderr
    # The controller is a service host: his directory key, whatever sshd offers, meets the rule's message there.
    refused_by_the_service_host(config, "dave")
    submitted = ssh(config, LOGIN, "cd && sbatch --parsable --nodelist=gpu01 --output=/dev/null --wrap 'sleep 300'")
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip()
    try:
        testbed.run(CTL, f"until squeue -h -j {job} -o %T | grep -qx RUNNING; do sleep 1; done", 60)
        inside = ssh(config, GPU01, "id -u; cat /proc/self/cgroup")
        assert inside.returncode == 0, inside.stderr
        assert inside.stdout.startswith(f"{PEOPLE['dave']}\n")
        assert {m.group(1) for m in CGROUP_JOB.finditer(inside.stdout)} == {job}, inside.stdout
    finally:
        testbed.run(CTL, f"scancel {job}; true")


def test_removed_from_the_directory_dave_is_refused_once_the_cache_bound_has_passed(testbed, directory):
    config, _, _ = directory
    assert ssh(config, LOGIN, "id -un").stdout.strip() == "dave"
    testbed.run(CTL, "scancel -u dave; true")
    testbed.run(CTL, f"ldapdelete -Q -Y EXTERNAL -H ldapi:/// uid=dave,ou=people,{SUFFIX} cn=dave,ou=groups,{SUFFIX}")
    removed = time.monotonic()
    deadline = removed + CACHE_BOUND_S + 30  # the bound, and a login's own time
    while True:
        out = ssh(config, LOGIN, "echo ran")
        if out.returncode != 0:
            break
        assert time.monotonic() < deadline, f"dave still logs in {time.monotonic() - removed:.0f} s after removal"
        time.sleep(5)
    waited = time.monotonic() - removed
    # Refused, whatever step refuses him (sshd may still take the key SSSD had cached, and PAM, which asks the
    # directory again at each login, then ends it): nothing of his ran.
    assert "ran" not in out.stdout, (out.returncode, out.stdout, out.stderr)
    print(f"\ndave refused {waited:.0f} s after his removal from the directory (bound {CACHE_BOUND_S} s)")
    # Nowhere is he known any more once the bound and a tenth of it (SSSD's in-memory cache, render/sssd.py) passed.
    for name, address in MACHINES.items():
        testbed.run(address, "until [ -z \"$(getent passwd dave)\" ]; do sleep 2; done",
                    max(1, int(removed + CACHE_BOUND_S * 1.1 + 10 - time.monotonic())))
    print(f"dave unknown on every machine {time.monotonic() - removed:.0f} s after his removal")
    assert (HOMES / "dave").is_dir()  # his files stay, the site's to remove
