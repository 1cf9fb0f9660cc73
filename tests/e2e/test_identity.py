"""End to end: the inventory's people on the running test cluster (model/identity.py, roles/identity.py,
roles/access.py). Nothing makes them but the deploy: they log in to the login host over SSH with their own keys
(testbed/up.sh makes each, never committed), have one uid on every machine, and a job of theirs writes to their home
on the shared /home. A GPU node takes them only into a job of theirs there (pam_slurm_adopt): refused without one,
with one their session is in that job's cgroup, opens only the job's GPUs, and is not a stray process to the health
check; the admin group gets in without a job. A person dropped from the inventory is locked out, home kept, and let
back in when declared again.

Where the test cluster runs Slurm without cgroups (forky), there is nothing to adopt into: the inventory turns adopt
off there, and the tests of a GPU node's SSH say so and skip.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from e2e.testbed import INVENTORY, MACHINES, STATE, Testbed

from clusterforge.loader import load_cluster

pytestmark = pytest.mark.e2e

CTL, LOGIN, GPU01 = MACHINES["ctl"], MACHINES["login1"], MACHINES["gpu01"]
SPEC = load_cluster(INVENTORY).identity
UIDS = {person.name: person.uid for person in SPEC.people}
HOMES = STATE / "home"  # this machine's directory that every machine mounts at /home (the Vagrantfile)
CONTROL = "/run/clusterforge-testbed"  # the stand-in nvidia-smi's control files (testbed/nvidia-smi)
NO_JOB = "Access denied by pam_slurm_adopt: you have no active jobs on this node"
CGROUP_JOB = re.compile(r"/job_(\d+)(?:/|$)", re.M)


@pytest.fixture(scope="module")
def logins(testbed, tmp_path_factory) -> Path:
    """An ssh_config per person: their own key, as themselves. LogLevel INFO: sshd hands a PAM module's message to
    the client as a banner, which ssh prints only from that level on."""
    directory = tmp_path_factory.mktemp("logins")
    for name in UIDS:
        key = STATE / "people" / name
        assert key.exists(), f"testbed/up.sh made no key for {name}"
        (directory / name).write_text(f"Host *\n  User {name}\n  IdentityFile {key}\n  IdentitiesOnly yes\n"
                                      "  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel INFO\n"
                                      "  BatchMode yes\n  ConnectTimeout 10\n")
    return directory


def ssh(logins: Path, person: str, address: str, command: str, key_of: str | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``command`` as ``person`` over SSH, with their key (or ``key_of``'s). A GPU node is reached through the login
    host (ProxyJump), as a person reaches it from outside."""
    config = logins / person
    if key_of is not None:
        config = logins / f"{person}-with-{key_of}"
        config.write_text((logins / key_of).read_text().replace(f"User {key_of}", f"User {person}"))
    jump = ["-J", f"{person}@{LOGIN}"] if address != LOGIN else []
    return subprocess.run(["ssh", "-F", str(config), *jump, f"{person}@{address}", command], check=False, text=True,
                          capture_output=True, timeout=timeout)


def adopts(bed: Testbed) -> None:
    if not SPEC.adopt:
        pytest.skip(f"no pam_slurm_adopt on {bed.dist}: its test cluster runs Slurm without cgroups "
                    "(inventories/vagrant.py turns adopt off there)")


def wait_until(bed: Testbed, what: str, command: str, timeout: int = 120) -> None:
    bed.run(CTL, f"until {command}; do sleep 1; done", timeout)


def test_the_first_deploy_made_the_people_before_slurmctld_and_they_submit_at_once(testbed, logins):
    # No provisioner makes anyone (the Vagrantfile has none): the first deploy's people step did, before it started
    # slurmctld, so the first job of a declared person is taken (the declared-user race cannot happen).
    if testbed.first_deploy is not None:
        output = testbed.first_deploy.output
        made = output.find("Starting operation: people | ")
        started = output.find("Starting operation: slurmctld | ")
        assert 0 <= made < started, (made, started)
    out = ssh(logins, "alice", LOGIN, "cd && sbatch --wait --parsable --nodelist=gpu02 --output=from-job-%j.out "
                                      "--wrap 'echo \"$(hostname) $(id -u)\"'")
    assert out.returncode == 0, out.stderr
    job = out.stdout.strip()
    # On the shared /home: this machine's directory, which every machine mounts, has what the job wrote on gpu02.
    written = HOMES / "alice" / f"from-job-{job}.out"
    assert written.read_text() == f"gpu02 {UIDS['alice']}\n"
    assert written.stat().st_uid == UIDS["alice"]
    seen = ssh(logins, "alice", LOGIN, f"cat ~/from-job-{job}.out && rm ~/from-job-{job}.out")
    assert seen.stdout == f"gpu02 {UIDS['alice']}\n", seen.stderr


def test_a_person_logs_in_with_their_own_key_and_is_the_same_uid_on_every_machine(testbed, logins):
    out = ssh(logins, "bob", LOGIN, "id -u; id -g; echo $HOME; stat -c %a ~")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(UIDS["bob"]), str(UIDS["bob"]), "/home/bob", "700"]
    refused = ssh(logins, "bob", LOGIN, "true", key_of="alice")
    assert refused.returncode == 255 and "Permission denied (publickey" in refused.stderr, refused.stderr
    for name, address in MACHINES.items():
        for person, uid in UIDS.items():
            entry = testbed.run(address, f"getent passwd {person}").strip()
            assert entry == f"{person}:x:{uid}:{uid}::/home/{person}:/bin/bash", (name, entry)
        assert testbed.run(address, "getent group ops").strip() == "ops:x:2100:carol", name


def test_a_gpu_node_refuses_a_person_without_a_job_there_and_takes_the_admin_group(testbed, logins):
    adopts(testbed)
    refused = ssh(logins, "alice", GPU01, "true")
    assert refused.returncode == 255 and NO_JOB in refused.stderr, refused.stderr
    # carol is in ops, the admin group: pam_access lets her past the module, into no job.
    admin = ssh(logins, "carol", GPU01, "id -un; cat /proc/self/cgroup")
    assert admin.returncode == 0, admin.stderr
    assert admin.stdout.startswith("carol\n") and not CGROUP_JOB.search(admin.stdout), admin.stdout


def test_with_a_job_a_session_is_adopted_into_it_and_opens_only_the_jobs_gpu(testbed, logins):
    adopts(testbed)
    submitted = ssh(logins, "alice", LOGIN, "cd /tmp && sbatch --parsable --nodelist=gpu01 --gres=gpu:1 "
                                            "--output=/dev/null --wrap 'sleep 300'")
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip()
    session = None
    stray = None
    try:
        wait_until(testbed, f"job {job} running", f"squeue -h -j {job} -o %T | grep -qx RUNNING", 60)
        index = int(testbed.run(CTL, f"scontrol show job -d {job}").split("IDX:", 1)[1].split(")", 1)[0])
        probe = "cat /proc/self/cgroup; for i in 0 1 2 3 4 5 6 7; do cat /dev/nvidia$i 2>&1; done; true"
        out = ssh(logins, "alice", GPU01, probe)
        assert out.returncode == 0, out.stderr
        cgroups = [line for line in out.stdout.splitlines() if re.match(r"\d+:", line)]
        opens = out.stdout.splitlines()[len(cgroups):]
        # Every controller Slurm confines with puts the session in the job; no logind session (no pam_systemd).
        for controller in ("devices", "memory", "freezer"):
            line = next(c for c in cgroups if f":{controller}:" in c or f",{controller}:" in c)
            assert CGROUP_JOB.search(line) and CGROUP_JOB.search(line).group(1) == job, line
        assert not any("session-" in line for line in cgroups), cgroups
        errors = ["ENXIO" if "No such device or address" in line else "EPERM" if "not permitted" in line else line
                  for line in opens]
        assert errors == ["EPERM" if i != index else "ENXIO" for i in range(8)], (index, opens)

        # A process of that session on the job's GPU is the job's to the health check; a root process outside any
        # job, on another GPU, is named (the listing is read). The stand-in nvidia-smi lists what its control file
        # says, a gone process too, which the real one does not: the listing goes before the job ends.
        session = subprocess.Popen(["ssh", "-F", str(logins / "alice"), "-J", f"alice@{LOGIN}", f"alice@{GPU01}",
                                    "exec sleep 601"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not (pid := testbed.run(GPU01, "pgrep -u alice -x -f 'sleep 601'; true").strip()):
            assert time.monotonic() < deadline and session.poll() is None, "alice's session did not start"
            time.sleep(1)
        stray = testbed.run(GPU01, "setsid sleep 1235 > /dev/null 2>&1 < /dev/null & echo $!").strip()
        other = (index + 1) % 8
        testbed.run(GPU01, f"mkdir -p {CONTROL}; printf '{index} {pid} python 30000\\n{other} {stray} python "
                           f"30000\\n' > {CONTROL}/gpu-processes")
        said = testbed.run(GPU01, "env -i SLURMD_NODENAME=gpu01 /usr/sbin/clusterforge-health; true")
        assert f"pid {stray} python" in said and f"pid {pid} " not in said, said
        testbed.run(GPU01, f"rm -f {CONTROL}/gpu-processes; kill {stray}")
        stray = None
        # The session ends with the job: nothing of it outlives the job for the epilog to find; the node stays up.
        testbed.run(CTL, f"scancel {job}")
        session.wait(timeout=60)
        assert testbed.run(GPU01, f"test -e /proc/{pid} && echo alive; true").strip() == ""
        wait_until(testbed, "gpu01 idle", "sinfo -h -N -n gpu01 -o %T | grep -qx idle", 90)
        assert testbed.run(CTL, "sinfo -h -N -n gpu01 -o %E").strip() == "none"
        # logind keeps a user's IPC when their sessions end (RemoveIPC=no), for the jobs' shared memory.
        assert testbed.run(GPU01, "busctl get-property org.freedesktop.login1 /org/freedesktop/login1 "
                                  "org.freedesktop.login1.Manager RemoveIPC").strip() == "b false"
    finally:
        if stray is not None:
            testbed.run(GPU01, f"rm -f {CONTROL}/gpu-processes; kill {stray}; true")
        testbed.run(CTL, f"scancel {job}; true")
        if session is not None and session.poll() is None:
            session.kill()


def test_a_person_dropped_from_the_inventory_is_locked_out_home_kept_and_back_once_declared(testbed, logins,
                                                                                         tmp_path):
    assert ssh(logins, "carol", LOGIN, "id -un").stdout.strip() == "carol"
    text = testbed.inventory.read_text()
    line = '\n            Person("carol", uid=2003, groups=("ops",), ssh_keys=_keys("carol")),)'
    assert line in text
    dropped = tmp_path / "vagrant.py"
    dropped.write_text(text.replace(line, ")"))
    before = testbed.inventory
    testbed.inventory = dropped
    try:
        run = testbed.deploy()
        assert run.returncode == 0, run.output[-4000:]
        assert "carol locked (no longer in the inventory)" in run.output, run.output[-4000:]
        refused = ssh(logins, "carol", LOGIN, "true")
        assert refused.returncode == 255 and "account has expired" in refused.stderr, refused.stderr
        for name, address in MACHINES.items():  # kept, expired: never deleted
            assert testbed.run(address, "getent shadow carol | cut -d: -f8").strip() == "1", name
        assert (HOMES / "carol").is_dir() and (HOMES / "carol").stat().st_uid == UIDS["carol"]
    finally:
        testbed.inventory = before
        back = testbed.deploy()
        assert back.returncode == 0, back.output[-4000:]
    assert ssh(logins, "carol", LOGIN, "id -un").stdout.strip() == "carol"
