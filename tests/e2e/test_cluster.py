"""End to end: the deploy turns bare Debian machines into a working Slurm cluster, re-runs change nothing, and a
node added to the inventory joins while a running job keeps running. Once per Debian release (see conftest): the
test cluster authenticates with munge on Debian 12 and with auth/slurm (slurm.key, no munged) on Debian 13, and the
checks of the other authentication are skipped."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import signal
import subprocess
import textwrap
import time

import pytest
from e2e.testbed import INVENTORY as INVENTORY_OF_TWO_NODES
from e2e.testbed import REPO, Testbed

from clusterforge.loader import load_cluster
from clusterforge.model import resolve
from clusterforge.secrets import ClusterSecrets

pytestmark = pytest.mark.e2e

CTL = "10.77.0.10"


def inventory_of(bed: Testbed):
    os.environ["CLUSTERFORGE_TESTBED_DIST"] = bed.dist
    return resolve(load_cluster(str(bed.inventory)))


def addresses(bed: Testbed) -> list[str]:
    valid = inventory_of(bed)
    return [CTL] + [n.address for n in valid.nodes]


def auth_of(bed: Testbed) -> str:
    return inventory_of(bed).auth


def needs_auth(bed: Testbed, auth: str) -> None:
    if auth_of(bed) != auth:
        pytest.skip(f"this test cluster authenticates with {auth_of(bed)}, not {auth}")


def vault_secrets(bed: Testbed) -> ClusterSecrets:
    """The cluster's secrets as Vault holds them now (a fresh reader: nothing cached from an earlier read)."""
    return ClusterSecrets(inventory_of(bed), environ=bed.env())


def key_fingerprints(bed: Testbed, path: str) -> dict[str, str]:
    return {address: bed.host(address).check_output(f"sha256sum {path}").split()[0] for address in addresses(bed)}


def test_slurm_release_is_the_inventorys(testbed):
    assert testbed.run(CTL, "sinfo --version").split()[1].startswith(testbed.slurm)


def test_munge_runs_everywhere_with_one_key(testbed):
    needs_auth(testbed, "munge")
    fingerprints = set()
    for address in addresses(testbed):
        host = testbed.host(address)
        assert host.service("munge").is_running
        key = host.file("/etc/munge/munge.key")
        assert (key.user, key.group, key.mode) == ("munge", "munge", 0o400)
        fingerprints.add(host.check_output("sha256sum /etc/munge/munge.key").split()[0])
    assert len(fingerprints) == 1


SLURM_KEY = "/etc/slurm/slurm.key"


def test_slurm_key_is_vaults_on_every_host_and_private_to_slurm(testbed):
    needs_auth(testbed, "slurm")
    for address in addresses(testbed):
        key = testbed.host(address).file(SLURM_KEY)
        assert (key.user, key.group, key.mode) == ("slurm", "slurm", 0o600), address
    wanted = hashlib.sha256(vault_secrets(testbed).slurm_key().reveal()).hexdigest()
    assert set(key_fingerprints(testbed, SLURM_KEY).values()) == {wanted}


def test_with_auth_slurm_munged_is_not_used(testbed):
    # Debian's slurmctld, slurmd, slurmdbd and slurm-client depend on the munge package, so apt installs it (and its
    # postinst enables munged with a random key); the deploy installs no munge key and keeps munged stopped.
    needs_auth(testbed, "slurm")
    for address in addresses(testbed):
        host = testbed.host(address)
        if testbed.dist == "forky":  # its Slurm packages only recommend munge: there is none to keep stopped
            assert not host.package("munge").is_installed, address
            continue
        munge = host.service("munge")
        assert not munge.is_running and not munge.is_enabled, address
        assert host.run("systemctl is-active munge").stdout.strip() == "inactive"


def test_with_auth_slurm_an_unprivileged_user_gets_credentials_without_the_key(testbed):
    # Client commands ask a local daemon for a credential over its sack socket: slurmctld's (or slurmdbd's) on the
    # controller, slurmd's on a node. nobody cannot read slurm.key, yet sinfo and squeue answer.
    needs_auth(testbed, "slurm")
    for address in (CTL, addresses(testbed)[1]):
        assert testbed.host(address).run(f"runuser -u nobody -- head -c1 {SLURM_KEY}").rc != 0
        out = testbed.run(address, "runuser -u nobody -- sinfo --noheader --format=%P; "
                                   "runuser -u nobody -- squeue --noheader --user=nobody")
        assert out.split() == ["gpu*"], out


def test_slurmdbd_conf_is_private_to_slurm(testbed):
    conf = testbed.host(CTL).file("/etc/slurm/slurmdbd.conf")
    assert (conf.user, conf.group, conf.mode) == ("slurm", "slurm", 0o600)


def test_sinfo_shows_every_node_idle_with_the_inventorys_hardware(testbed):
    valid = inventory_of(testbed)
    rows = testbed.run(CTL, "sinfo --noheader --Node --format='%N %T %c %m %G'").split("\n")
    seen = {row.split()[0]: row.split()[1:] for row in rows if row.strip()}
    for node in valid.nodes:
        gpus = node.profile.gpus
        state, cpus, memory, gres = seen[node.name]
        assert state == "idle"
        assert (int(cpus), int(memory)) == (node.profile.cpus, node.profile.real_memory)
        assert gres.startswith(f"gpu:{gpus.type}:{gpus.count}")


def test_srun_runs_on_both_nodes(testbed):
    out = testbed.run(CTL, "srun --nodes=2 hostname")
    assert sorted(out.split()) == ["gpu01", "gpu02"]


def test_batch_job_completes_and_is_accounted(testbed):
    job = testbed.run(CTL, "sbatch --parsable --wait --output=/tmp/batch.out --wrap 'echo batch-ok'").strip()
    assert testbed.run(CTL, f"sacct --noheader --parsable2 --jobs={job} --format=JobID,State --starttime=2000-01-01",
                       ).split("\n")[0] == f"{job}|COMPLETED"


def test_jobs_that_ask_no_memory_share_a_node(testbed):
    # Each partition has DefMemPerCPU (the node's memory per CPU): two one-CPU jobs without --mem fit on one
    # two-CPU node side by side; with no default, the first would take all the node's memory and hold the second.
    jobs = [testbed.run(CTL, "sbatch --parsable --nodelist=gpu02 --ntasks=1 --wrap 'sleep 300'").strip()
            for _ in range(2)]
    try:
        testbed.run(CTL, f"until [ $(squeue --noheader --jobs={','.join(jobs)} --states=RUNNING | wc -l) = 2 ]; "
                         "do sleep 1; done", 60)
    finally:
        testbed.run(CTL, f"scancel {' '.join(jobs)}")


def test_a_gpu_job_without_mem_gets_the_memory_per_gpu_and_a_cpu_job_the_memory_per_cpu(testbed):
    # The partition renders both DefMemPerCPU (1024 on the test inventory's nodes) and DefMemPerGPU (256), which
    # slurm.conf(5) calls mutually exclusive: what slurmctld gives a job without --mem decides what the docs say.
    shown = {}
    for name, options in (("gpu", "--gres=gpu:2"), ("cpu", "--ntasks=1")):
        job = testbed.run(CTL, f"sbatch --parsable --nodelist=gpu01 {options} --output=/dev/null --wrap 'sleep 30'")
        try:
            testbed.run(CTL, f"until [ \"$(squeue --noheader --jobs={job.strip()} --format=%T)\" = RUNNING ]; do "
                             "sleep 1; done", 60)
            shown[name] = testbed.run(CTL, f"scontrol show job {job.strip()}")
        finally:
            testbed.run(CTL, f"scancel {job.strip()}")
    assert "mem=512M" in shown["gpu"] and "MemPerTres=gpu:256" in shown["gpu"], shown["gpu"]  # 2 GPUs x 256
    assert "mem=1G" in shown["cpu"] and "MinMemoryCPU=1G" in shown["cpu"], shown["cpu"]       # 1 CPU x 1024


GPU_PROBE = textwrap.dedent("""\
    import errno, os
    result = []
    for i in range(8):
        try:
            os.close(os.open(f"/dev/nvidia{i}", os.O_RDWR))
            result.append("open")
        except OSError as error:
            result.append(errno.errorcode[error.errno])
    print(os.environ.get("CUDA_VISIBLE_DEVICES"), ",".join(result))
""")


def needs_confinement(bed) -> None:
    if not bed.confines:
        pytest.skip(f"the {bed.dist} test cluster runs Slurm without cgroups (tests/e2e/testbed.py says why)")


def test_a_job_can_open_only_its_own_gpus(testbed):
    needs_confinement(testbed)
    # No driver is behind the fake device nodes: opening one the job's devices cgroup allows fails with ENXIO
    # (reached the missing driver), one it denies with EPERM (stopped by the cgroup).
    out = testbed.run(CTL, f"srun --nodes=1 --gres=gpu:2 python3 -c '{GPU_PROBE}'")
    visible, errors = out.split()
    assert visible == "0,1"
    assert errors.split(",") == ["ENXIO"] * 2 + ["EPERM"] * 6
    out = testbed.run(CTL, f"srun --nodes=1 python3 -c '{GPU_PROBE}'")
    assert out.split()[1].split(",") == ["EPERM"] * 8


LOGIN = "10.77.0.9"
IMAGE = "/srv/containers/busybox.sqsh"
# A 1 MB image with no registry: Debian's static busybox in a squashfs, which Pyxis starts as a path.
BUSYBOX_IMAGE = textwrap.dedent(f"""\
    set -e
    work=$(mktemp -d); cd "$work"
    apt-get download busybox-static >/dev/null
    dpkg-deb -x busybox-static_*.deb pkg
    mkdir -p img/bin img/etc img/dev img/proc img/sys img/tmp img/root img/run img/var/run img/var/lock img/var/tmp
    chmod 1777 img/tmp img/var/tmp
    cp "$(find pkg -path '*bin/busybox' -type f | head -1)" img/bin/busybox
    for a in $(img/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "img/bin/$a"; done
    ln -s bin img/sbin; mkdir -p img/usr; ln -s ../bin img/usr/bin
    echo 'root:x:0:0:root:/root:/bin/sh' > img/etc/passwd; echo 'root:x:0:' > img/etc/group
    touch img/etc/hostname img/etc/hosts img/etc/resolv.conf  # Enroot mounts the host's over them
    printf 'PRETTY_NAME="busybox test image"\\nID=busybox\\n' > img/etc/os-release
    mkdir -p /srv/containers; mksquashfs img {IMAGE} -noappend -all-root -quiet -no-progress
    cd /; rm -rf "$work"
""")
# The test cluster's people, the inventory's (Identity), made on every machine by the deploy; carol is in no account
# of the inventory.
USERS = {person.name: person.uid for person in load_cluster(INVENTORY_OF_TWO_NODES).identity.people}


@pytest.fixture(scope="module")
def container_users(testbed):
    """The people, the same uid and gid everywhere, and the test image on every node. Their home is /home/<user> on
    the test cluster's shared /home (one host directory in every lxc machine, as an NFS home on a real cluster).
    Their accounts in the accounting database come from the inventory (Accounting(users=...))."""
    for address in addresses(testbed)[1:]:
        testbed.run(address, f"[ -f {IMAGE} ] || sh -c {shlex.quote(BUSYBOX_IMAGE)}", 300)
    return list(USERS)


def as_user(user: str, command: str) -> str:
    return f"cd /tmp && runuser -u {user} -- {command}"


def test_pyxis_is_loaded_where_jobs_are_submitted(testbed):
    for address in (LOGIN, CTL):
        assert "--container-image" in testbed.run(address, "srun --help")


def test_a_container_job_runs_the_image_not_the_host(testbed, container_users):
    out = testbed.run(LOGIN, as_user("alice", f"srun --container-image={IMAGE} cat /etc/os-release"))
    assert 'PRETTY_NAME="busybox test image"' in out and "Debian" not in out
    nodes = testbed.run(LOGIN, as_user("alice", f"srun --nodes=2 --container-image={IMAGE} hostname"))
    assert sorted(nodes.split()) == ["gpu01", "gpu02"]


def test_every_user_can_run_containers_one_after_the_other(testbed, container_users):
    # The directories Enroot shares between users are 1777: the first user's job does not make them private.
    for user in ("alice", "bob"):
        assert testbed.run(LOGIN, as_user(user, f"srun --nodelist=gpu01 --container-image={IMAGE} id -u")).strip() \
            == str(USERS[user])


def test_a_container_job_on_both_nodes_has_the_profiles_nccl_settings(testbed, container_users):
    # /etc/nccl.conf is the host's: the same values reach the container through Enroot's environ.d.
    script = shlex.quote('echo "$(hostname) $NCCL_IB_HCA $NCCL_SOCKET_IFNAME"')
    out = testbed.run(LOGIN, as_user("alice", f"srun --nodes=2 --container-image={IMAGE} sh -c {script}"))
    assert sorted(out.splitlines()) == [f"{node} =mlx5_0:1,mlx5_1:1,mlx5_4:1,mlx5_5:1 =eth0"
                                        for node in ("gpu01", "gpu02")]


def test_container_mounts_and_a_named_container_kept_within_a_job(testbed, container_users):
    out = testbed.run(LOGIN, as_user("alice", f"srun --nodelist=gpu02 --container-image={IMAGE} "
                                              "--container-mounts=/etc/hostname:/host-hostname:ro cat /host-hostname"))
    assert out.strip() == "gpu02"
    script = (f"#!/bin/sh\nsrun --container-image={IMAGE} --container-name=keep touch /kept\n"
              "srun --container-name=keep ls /kept\n")
    out = testbed.run(LOGIN, as_user("alice", f"sh -c 'printf \"{script}\" > /tmp/named.sh && sbatch --wait "
                                              "--nodelist=gpu01 --output=/tmp/named-%j.out --parsable /tmp/named.sh'"))
    assert testbed.run("10.77.0.11", f"cat /tmp/named-{out.strip()}.out").strip() == "/kept"


def test_a_batch_script_runs_inside_the_container(testbed, container_users):
    script = f"#!/bin/sh\n#SBATCH --container-image={IMAGE}\ngrep PRETTY /etc/os-release\n"
    job = testbed.run(LOGIN, as_user("alice", f"sh -c 'printf \"{script}\" > /tmp/inside.sh && sbatch --wait "
                                              "--nodelist=gpu01 --output=/tmp/inside-%j.out --parsable "
                                              "/tmp/inside.sh'")).strip()
    assert "busybox test image" in testbed.run("10.77.0.11", f"cat /tmp/inside-{job}.out")


def test_a_container_job_still_opens_only_its_own_gpus(testbed, container_users):
    needs_confinement(testbed)
    # ENROOT_RESTRICT_DEV hides the host's GPUs from the container (Enroot's NVIDIA hook adds the job's, which needs
    # nvidia-container-cli: not on this test cluster). With the host's /dev mounted in, the job's devices cgroup
    # still decides: ENXIO for its 2 GPUs, EPERM for the others, as outside a container.
    probe = "for i in 0 1 2 3 4 5 6 7; do cat /host-dev/nvidia$i 2>&1; done; true"
    out = testbed.run(LOGIN, as_user("alice", f"srun --nodes=1 --gres=gpu:2 --container-image={IMAGE} "
                                              f"--container-mounts=/dev:/host-dev sh -c {shlex.quote(probe)}"))
    errors = ["ENXIO" if "No such device or address" in line else "EPERM" if "not permitted" in line else line
              for line in out.strip().splitlines()]
    assert errors == ["ENXIO"] * 2 + ["EPERM"] * 6


def test_after_a_reboot_a_node_runs_container_jobs_again(testbed, container_users):
    # /run is a tmpfs: Enroot's runtime directory is gone after a reboot, and made again at boot (tmpfiles.d).
    booted = testbed.run("10.77.0.12", "ps -o lstart= -p 1")
    subprocess.run(["lxc-stop", "--name", "cf-gpu02", "--reboot", "--timeout", "60"], check=True)
    deadline = time.monotonic() + 180
    while True:  # until the machine answers again, from its new boot, with slurmd running
        try:
            answer = testbed.host("10.77.0.12").run("ps -o lstart= -p 1; systemctl is-active slurmd")
            if answer.rc == 0 and answer.stdout.split("\n")[0] != booted.strip():
                break
        except RuntimeError:  # sshd not up yet
            pass
        assert time.monotonic() < deadline, "gpu02 did not come back with slurmd running"
        time.sleep(2)
    testbed.run(CTL, "until [ \"$(sinfo --noheader --nodes=gpu02 --format=%T)\" = idle ]; do sleep 1; done", 120)
    assert testbed.run(LOGIN, as_user("bob", f"srun --nodelist=gpu02 --container-image={IMAGE} id -u")).strip() \
        == str(USERS["bob"])


def test_a_job_runs_in_the_users_shared_home_on_every_node(testbed, container_users):
    # Submitted from alice's home on the login host, each node's task starts there too and reads what she wrote.
    home = "/home/alice"
    testbed.run(LOGIN, f"runuser -u alice -- sh -c 'echo written-on-login > {home}/shared-probe'")
    out = testbed.run(LOGIN, f"cd {home} && runuser -u alice -- srun --nodes=2 --ntasks-per-node=1 "
                             "sh -c 'echo \"$(hostname) $(pwd) $(cat shared-probe)\"'")
    assert sorted(out.splitlines()) == [f"gpu01 {home} written-on-login", f"gpu02 {home} written-on-login"], out
    for address in [LOGIN, *addresses(testbed)]:  # one home, hers on every machine
        assert testbed.run(address, f"stat -c %u:%g {home}").strip() == f"{USERS['alice']}:{USERS['alice']}"
    testbed.run(LOGIN, f"rm {home}/shared-probe")


def job_field(bed: Testbed, job: str, field: str) -> str:
    return bed.run(CTL, f"sacct --noheader --parsable2 --jobs={job} --format={field} --starttime=2000-01-01 "
                        "| head -1").strip()


def test_people_submit_under_the_inventorys_accounts(testbed, container_users):
    # The inventory: research (60 shares) > vision (30); teaching (40); alice in vision; bob in teaching (his
    # default) and vision; carol in none.
    shares = testbed.run(CTL, "sshare --noheader --parsable2 --all --format=Account,User,RawShares")
    fields = [[f.strip() for f in line.split("|")] for line in shares.splitlines()]  # sshare indents the tree
    rows = {(f[0], f[1]): f[2] for f in fields}
    assert (rows[("research", "")], rows[("vision", "")], rows[("teaching", "")]) == ("60", "30", "40"), shares
    def submit(user: str, *options: str) -> str:
        return testbed.run(LOGIN, as_user(user, f"sbatch --parsable --wait {' '.join(options)} --wrap true")).strip()
    assert job_field(testbed, submit("alice"), "Account") == "vision"
    assert job_field(testbed, submit("bob"), "Account") == "teaching"
    assert job_field(testbed, submit("bob", "--account=vision"), "Account") == "vision"
    refused = testbed.host(LOGIN).run(as_user("alice", "sbatch --account=teaching --wrap true"))
    assert refused.rc != 0 and "Invalid account" in refused.stderr
    refused = testbed.host(LOGIN).run(as_user("carol", "sbatch --wrap true"))
    assert refused.rc != 0 and "Invalid account" in refused.stderr


def test_a_limit_holds_a_job_until_the_inventory_raises_it(testbed, container_users, tmp_path):
    job = testbed.run(LOGIN, as_user("bob", "sbatch --parsable --gres=gpu:2 --wrap true")).strip()
    # The scheduler gives a pending job its reason on its next pass; until then the reason reads "None".
    testbed.run(CTL, f"while squeue --noheader --jobs={job} --format=%r | grep -qw None; do sleep 1; done", 60)
    state, reason = testbed.run(CTL, f"squeue --noheader --jobs={job} --format='%T %r'").split()
    assert state == "PENDING" and "MaxGRESPerJob" in reason, reason  # teaching: max_tres_per_job gres/gpu=1
    raised = tmp_path / "vagrant.py"
    text = testbed.inventory.read_text()
    assert 'max_tres_per_job="gres/gpu=1"' in text
    raised.write_text(text.replace('max_tres_per_job="gres/gpu=1"', 'max_tres_per_job="gres/gpu=2"'))
    before, testbed.inventory = testbed.inventory, raised
    try:
        run = testbed.deploy()
        assert run.returncode == 0, run.output[-4000:]
        assert "accounts, users and QOS: account teaching: MaxTRESPerJob=gres/gpu=2" in run.output, \
            run.output[-4000:]
        testbed.run(CTL, f"until [ \"$(sacct --noheader -X --parsable2 --jobs={job} --format=State)\" = COMPLETED ]; "
                         "do sleep 1; done", 120)
        assert testbed.deploy().changed == 0
    finally:
        testbed.inventory = before
        assert testbed.deploy().returncode == 0  # the limit back as the inventory says


def associated(bed: Testbed) -> set[str]:
    """The accounts of this cluster (an account record itself is shared by every cluster of the database)."""
    return set(bed.run(CTL, "sacctmgr --noheader --parsable2 show associations where cluster=vagrant "
                            "format=account").split())


def test_an_account_the_inventory_drops_stays_unless_pruned_and_never_while_it_has_jobs(testbed, container_users,
                                                                                      tmp_path):
    text = testbed.inventory.read_text()
    research = 'Account("research", fairshare=60, description="research groups", organization="lab")'
    assert research in text
    # research and vision leave the inventory; alice moves to teaching.
    teaching = 'Account("teaching", fairshare=40, max_tres_per_job="gres/gpu=1")'
    dropped = (text.replace(research + ",", "").replace('Account("vision", parent="research", fairshare=30),', "")
               .replace(teaching + ")", teaching + ",)")
               .replace('User("alice", accounts=("vision",))', 'User("alice", accounts=("teaching",))')
               .replace('User("bob", accounts=("teaching", "vision"), default_account="teaching")',
                        'User("bob", accounts=("teaching",))'))
    inventory = tmp_path / "vagrant.py"
    before = testbed.inventory
    try:
        inventory.write_text(dropped)
        testbed.inventory = inventory
        kept = testbed.deploy()
        assert kept.returncode == 0, kept.output[-4000:]
        assert "left in the accounting database, not in the inventory" in kept.output
        assert {"research", "vision", "teaching"} <= set(associated(testbed))

        # With prune, and a job pending under vision (a hold keeps it pending): vision stays, research (its parent)
        # too; the deploy does everything else, then fails naming each with slurmdbd's reason: the database is not
        # yet as the inventory says.
        job = testbed.run(LOGIN, as_user("bob", "sbatch --parsable --hold --account=vision --wrap true")).strip()
        inventory.write_text(dropped.replace("accounting=Accounting(", "accounting=Accounting(prune=True, "))
        pruned = testbed.deploy()
        assert pruned.returncode != 0, pruned.output[-4000:]
        refused = pruned.output.split("The accounting database is not yet as the inventory says; slurmdbd refused:")
        assert len(refused) == 2, pruned.output[-4000:]
        assert "delete account vision (" in refused[1] and "delete account research (an account under it stays)" in \
            refused[1], refused[1]
        assert "vision" in associated(testbed)
        testbed.run(CTL, f"scancel {job}")
        # slurmdbd counts a job as active until slurmctld has told it the job ended.
        testbed.run(CTL, f"until sacct --noheader -X --parsable2 --jobs={job} --format=State | grep -q CANCELLED; "
                         "do sleep 1; done", 60)
        pruned = testbed.deploy()
        assert pruned.returncode == 0, pruned.output[-4000:]
        accounts = associated(testbed)
        assert "vision" not in accounts and "research" not in accounts and "teaching" in accounts
        assert testbed.deploy().changed == 0
    finally:
        testbed.inventory = before
        assert testbed.deploy().returncode == 0  # the inventory's accounts again


def test_nfs_server_exports_what_the_inventory_says(testbed):
    # This kernel has no NFS client, so the export is read with libnfs, a user-space client, from the machine the
    # containers run on; mounting with the kernel client is exercised only where the kernel has NFS. The clients'
    # mount units are written and enabled (the inventory says mount_now=False).
    valid = inventory_of(testbed)
    nfs = valid.nfs
    testbed.run(CTL, f"echo e2e > {nfs.exports[0].path}/probe")
    export = nfs.exports[0]
    url = f"nfs://{nfs.server.address}{export.path}"
    read = subprocess.run(["timeout", "30", "nfs-cat", f"{url}/probe"], capture_output=True, text=True)
    assert read.stdout == "e2e\n", read.stderr
    # NFSv4 too; a file read may wait out the server's grace period after a restart, a listing does not.
    listing = subprocess.run(["timeout", "30", "nfs-ls", f"{url}?version=4"], capture_output=True, text=True)
    assert listing.stdout.split()[-1:] == ["probe"], listing.stderr
    for node in valid.nodes:
        unit = testbed.host(node.address).file("/etc/systemd/system/shared.mount")
        assert f"What={nfs.server.address}:{nfs.mounts[0].export}" in unit.content_string
        assert testbed.host(node.address).service("shared.mount").is_enabled


def test_the_first_deploy_shows_no_secret(testbed):
    if testbed.first_deploy is None:
        pytest.skip("CLUSTERFORGE_E2E_REUSE: this run did not make the first deploy")
    import base64

    secrets = vault_secrets(testbed)
    key = secrets.munge_key().reveal() if auth_of(testbed) == "munge" else secrets.slurm_key().reveal()
    password = secrets.db_password().reveal()
    output = testbed.first_deploy.output.encode()
    for shown in (password, base64.b64encode(key), key.hex().encode(), key[:16]):
        assert shown not in output


def test_a_second_deploy_changes_nothing(testbed):
    again = testbed.deploy()
    assert again.returncode == 0, again.output[-4000:]
    assert again.changed == 0, "\n".join(again.changed_operations())


def test_a_wrong_artifact_checksum_stops_the_deploy_before_any_host_is_touched(testbed, tmp_path):
    pinned = "063653ba39125ac29796cc6079701d1ec34dd4c5baf698efacc0f36bf3619681"  # Pyxis' source
    wrong = tmp_path / "vagrant.py"
    text = testbed.inventory.read_text()
    assert pinned in text
    wrong.write_text(text.replace(pinned, "f" * 64))
    before, testbed.inventory = testbed.inventory, wrong
    try:
        run = testbed.deploy()
    finally:
        testbed.inventory = before
    assert run.returncode != 0
    assert "artifact pyxis-0.24.0.tar.gz" in run.output and f"pins {'f' * 64}" in run.output and pinned in run.output
    assert "Starting operation" not in run.output


def test_a_deploy_interrupted_between_the_files_and_the_reconfigure_is_completed_by_the_next(testbed, tmp_path):
    # A partition added, the deploy stopped with Ctrl-C once slurm.conf is on every host, before the reconfigure.
    # The next run still owes, and makes, the reconfigure; the one after changes nothing.
    job = testbed.run(CTL, "sbatch --parsable --nodelist=gpu01 --ntasks=1 --mem=64 --wrap 'sleep 600'").strip()
    grown = tmp_path / "vagrant.py"
    text = testbed.inventory.read_text()
    old = 'partitions=(Partition("gpu", profiles=("test-gpu",), default=True, max_time="01:00:00"),)'
    assert old in text
    grown.write_text(text.replace(old, old[:-2] + ', Partition("short", nodes="gpu02", max_time="00:10:00"),)'))
    testbed.inventory = grown
    # The first step after the files that every Slurm host runs: slurm.conf is on every host by then.
    interrupted = testbed.deploy_killed_at("slurmdbd | slurmdbd runs with its config", signal.SIGINT)
    assert interrupted.returncode == 130, interrupted.output[-3000:]
    assert "Interrupted" in interrupted.output
    assert "PartitionName=short" in testbed.run(CTL, "cat /etc/slurm/slurm.conf")
    assert "short" not in testbed.run(CTL, "sinfo --noheader --format=%P").split()  # not applied yet

    again = testbed.deploy()
    assert again.returncode == 0, again.output[-4000:]
    assert "short" in testbed.run(CTL, "sinfo --noheader --format=%P").split()
    assert testbed.run(CTL, f"squeue --noheader --jobs={job} --format=%T").strip() == "RUNNING"
    testbed.run(CTL, f"scancel {job}")
    last = testbed.deploy()
    assert last.changed == 0, "\n".join(last.changed_operations())


def test_a_key_change_killed_before_any_restart_is_restarted_by_the_next_deploy(testbed):
    # SIGKILL, as a dropped SSH session or a killed terminal would: the new key is on the hosts, no daemon has it.
    kind = "slurm-key" if auth_of(testbed) == "slurm" else "munge-key"
    path = SLURM_KEY if auth_of(testbed) == "slurm" else "/etc/munge/munge.key"
    rotate = subprocess.run([str(REPO / ".venv" / "bin" / "clusterforge"), "secrets", "rotate", str(testbed.inventory),
                             kind], check=False, cwd=REPO, env=testbed.env(), text=True, capture_output=True,
                            timeout=120)
    assert rotate.returncode == 0, rotate.stdout + rotate.stderr
    first_restart = "munged | munged runs with the key from Vault" if kind == "munge-key" else \
        "slurmdbd | slurmdbd runs with its config"
    killed = testbed.deploy_killed_at(first_restart, signal.SIGKILL)
    assert killed.returncode == -signal.SIGKILL
    secrets = vault_secrets(testbed)
    wanted = hashlib.sha256((secrets.slurm_key() if kind == "slurm-key" else secrets.munge_key()).reveal()).hexdigest()
    assert set(key_fingerprints(testbed, path).values()) == {wanted}

    again = testbed.deploy()
    assert again.returncode == 0, again.output[-4000:]
    assert sorted(testbed.run(CTL, "srun --nodes=2 hostname").split()) == ["gpu01", "gpu02"]
    last = testbed.deploy()
    assert last.changed == 0, "\n".join(last.changed_operations())


DAEMONS = {"ctl": ["munge", "mariadb", "slurmdbd", "slurmctld", "nfs-ganesha"], "gpu": ["munge", "slurmd"]}


def started_at(bed: Testbed, address: str, units: list[str]) -> dict[str, str]:
    out = bed.run(address, "systemctl show --property=ActiveEnterTimestampMonotonic " + " ".join(units))
    return dict(zip(units, re.findall(r"=(\d+)", out), strict=True))


def all_started_at(bed: Testbed) -> dict[str, dict[str, str]]:
    return {"ctl": started_at(bed, CTL, DAEMONS["ctl"]),
            "gpu01": started_at(bed, "10.77.0.11", DAEMONS["gpu"]),
            "gpu02": started_at(bed, "10.77.0.12", DAEMONS["gpu"])}


def restarted_between(before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]) -> list[str]:
    return sorted(f"{host}:{unit}" for host in before for unit in before[host]
                  if before[host][unit] != after[host][unit])


def test_a_rotated_slurm_key_reaches_every_host_and_jobs_run_again(testbed):
    needs_auth(testbed, "slurm")
    old = key_fingerprints(testbed, SLURM_KEY)
    job = testbed.run(CTL, "sbatch --parsable --nodelist=gpu01 --ntasks=1 --mem=64 --wrap 'sleep 600'").strip()
    testbed.run(CTL, f"until squeue --noheader --jobs={job} --format=%T | grep -qx RUNNING; do sleep 1; done", 60)
    before = all_started_at(testbed)

    rotate = subprocess.run([str(REPO / ".venv" / "bin" / "clusterforge"), "secrets", "rotate", str(testbed.inventory),
                             "slurm-key"], check=False, cwd=REPO, env=testbed.env(), text=True, capture_output=True,
                            timeout=120)
    assert rotate.returncode == 0, rotate.stdout + rotate.stderr
    assert "slurmdbd, slurmctld, slurmd, sackd" in rotate.stdout
    run = testbed.deploy()
    assert run.returncode == 0, run.output[-6000:]

    new = key_fingerprints(testbed, SLURM_KEY)
    wanted = hashlib.sha256(vault_secrets(testbed).slurm_key().reveal()).hexdigest()
    assert set(new.values()) == {wanted} and wanted not in old.values()
    # Every daemon that reads the key restarted, nothing else; the running job kept running through it.
    assert restarted_between(before, all_started_at(testbed)) == ["ctl:slurmctld", "ctl:slurmdbd", "gpu01:slurmd",
                                                                    "gpu02:slurmd"]
    assert testbed.run(CTL, f"squeue --noheader --jobs={job} --format=%T").strip() == "RUNNING"
    assert sorted(testbed.run(CTL, "srun --nodes=2 hostname").split()) == ["gpu01", "gpu02"]
    testbed.run(CTL, f"scancel {job}")
    again = testbed.deploy()
    assert again.returncode == 0, again.output[-4000:]
    assert again.changed == 0, "\n".join(again.changed_operations())


def test_an_added_node_joins_and_a_running_job_keeps_running(testbed, tmp_path):
    # A small job, so the node it runs on still has room for others.
    job = testbed.run(CTL, "sbatch --parsable --nodelist=gpu01 --ntasks=1 --mem=64 --wrap 'sleep 900'").strip()
    testbed.run(CTL, f"until squeue --noheader --jobs={job} --format=%T | grep -qx RUNNING; do sleep 1; done", 60)
    before = all_started_at(testbed)

    # What an admin does: one more node in the inventory (the Vagrantfile reads it), `vagrant up`, deploy again.
    grown = tmp_path / "vagrant.py"
    text = testbed.inventory.read_text()
    assert 'Nodes("gpu[01-02]", address="10.77.0.[11-12]"' in text
    grown.write_text(text.replace('Nodes("gpu[01-02]", address="10.77.0.[11-12]"',
                                  'Nodes("gpu[01-03]", address="10.77.0.[11-13]"'))
    testbed.inventory = grown
    testbed.up("gpu03")
    run = testbed.deploy()
    assert run.returncode == 0, run.output[-6000:]
    testbed.add_node_deploy = run

    state = testbed.run(CTL, "sinfo --noheader --Node --nodes=gpu03 --format=%T").strip()
    assert state == "idle"
    assert testbed.run(CTL, f"squeue --noheader --jobs={job} --format=%T").strip() == "RUNNING"
    assert testbed.run(CTL, "srun --nodes=1 --nodelist=gpu03 hostname").strip() == "gpu03"

    restarted = restarted_between(before, all_started_at(testbed))
    if testbed.slurm >= "24.11":
        assert restarted == [], "Slurm 24.11 adds nodes with scontrol reconfigure alone"
    else:
        # SchedMD's procedure up to 24.05: slurmctld stopped and started, every slurmd restarted; nothing else.
        assert restarted == ["ctl:slurmctld", "gpu01:slurmd", "gpu02:slurmd"]
    testbed.run(CTL, f"scancel {job}")
    again = testbed.deploy()
    assert again.changed == 0, "\n".join(again.changed_operations())


def test_a_removed_node_leaves_once_its_job_ends_and_an_admins_drain_stays(testbed):
    # After the node added above: gpu01-03. An admin drained gpu01 for their own reason; a job runs on gpu03, which
    # leaves the inventory.
    assert "gpu03" in testbed.run(CTL, "sinfo --noheader --Node --format=%N").split()
    testbed.run(CTL, "scontrol update NodeName=gpu01 State=DRAIN Reason='admin: fan'")
    job = testbed.run(CTL, "sbatch --parsable --nodelist=gpu03 --ntasks=1 --mem=64 --wrap 'sleep 600'").strip()
    testbed.run(CTL, f"until squeue --noheader --jobs={job} --format=%T | grep -qx RUNNING; do sleep 1; done", 60)
    three_nodes = testbed.inventory
    testbed.inventory = INVENTORY_OF_TWO_NODES
    try:
        stopped = testbed.deploy()
        assert stopped.returncode != 0
        assert "gpu03 left the inventory and is drained" in stopped.output and f"{job} root gpu03" in stopped.output
        assert testbed.run(CTL, "sinfo --noheader --Node --nodes=gpu03 --format='%T|%E'").strip() == \
            "draining|cf:removed from the inventory"
        assert "gpu[01-03]" in testbed.run(CTL, "cat /etc/slurm/slurm.conf"), "nothing changed while the job runs"

        # The admin changes their mind: gpu03 back in the inventory. The next deploy lifts clusterforge's own drain
        # (plan says so first), and only that one; the job never noticed.
        testbed.inventory = three_nodes
        planned = testbed.plan()
        assert "resume gpu03: back in the inventory" in planned.stdout, planned.stdout[-3000:]
        back = testbed.deploy()
        assert back.returncode == 0, back.output[-4000:]
        # UNDRAIN asks slurmd to register again (slurmctld's _require_node_reg): "mixed*" until it has.
        testbed.run(CTL, "until sinfo --noheader --Node --nodes=gpu03 --format='%T|%E' | "
                         "grep -Eqx '(mixed|allocated)[|]none'; do sleep 1; done", 120)
        assert testbed.run(CTL, "sinfo --noheader --Node --nodes=gpu01 --format='%T|%E'").strip() == \
            "drained|admin: fan"
        assert testbed.run(CTL, f"squeue --noheader --jobs={job} --format=%T").strip() == "RUNNING"

        testbed.inventory = INVENTORY_OF_TWO_NODES  # and out again, for good
        assert testbed.deploy().returncode != 0

        testbed.run(CTL, f"scancel {job}; while squeue --noheader --jobs={job} | grep -q .; do sleep 1; done", 60)
        run = testbed.deploy()
        assert run.returncode == 0, run.output[-4000:]
        assert testbed.run(CTL, "sinfo --noheader --Node --format=%N").split() == ["gpu01", "gpu02"]
        assert testbed.run(CTL, "sinfo --noheader --Node --nodes=gpu01 --format='%T|%E'").strip() == \
            "drained|admin: fan"
        assert testbed.deploy().changed == 0
    finally:
        # Whatever failed above, the tests after this one find the two-node inventory and no job of this one.
        testbed.inventory = INVENTORY_OF_TWO_NODES
        testbed.run(CTL, f"scancel {job} || true")
        testbed.run(CTL, "scontrol update NodeName=gpu01 State=RESUME")
