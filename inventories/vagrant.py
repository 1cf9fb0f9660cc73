"""The local test cluster: a controller, two GPU nodes and a login host as Vagrant machines (the built-in default
target), with Enroot and Pyxis from their releases, or from a site's mirror directory (CLUSTERFORGE_ARTIFACTS).

    bash scripts/example.sh                      # bring the machines up and deploy this inventory to them
    pyinfra inventories/vagrant.py deploy/cluster.py -y      # re-run the deploy by hand (docs/getting-started.md)

The Vagrantfile reads its machines from this file (`clusterforge hosts --json`), so adding a node here is all it
takes: `vagrant up` the new machine and run the deploy again. CLUSTERFORGE_TESTBED_DIST picks the Debian release
of every machine, and with it the Slurm release: bookworm (Debian 12) has 22.05, trixie (Debian 13) 24.11, forky
(Debian testing) 26.05.
CLUSTERFORGE_TESTBED_AUTH picks the authentication: auth/slurm (slurm.key, no munged) by default on trixie and forky, munge
elsewhere (auth/slurm needs Slurm 23.11; Ubuntu's 23.11 packages are untested with it).
"""

import hashlib
import os

import hostlist

from clusterforge.inventory import host_groups
from clusterforge.model import (
    Acceptance, Account, Accounting, Admission, AptRepository, Artifact, Bmc, Cluster, Containers, Directory, Enroot,
    Fabric, GpuStack, Gpus, Group, Health, Host, Identity, Leaf, Monitoring, Nccl, Nfs, NfsExport, NfsMount, Nodes,
    Partition, Person, Profile, Programs, Pyxis, Repair, Rest, Setup, Stack, User, Vault,
)

DIST = os.environ.get("CLUSTERFORGE_TESTBED_DIST", "bookworm")
# The Slurm each release ships; jammy and noble (Ubuntu) only with the libvirt or virtualbox provider.
SLURM = {"bookworm": "22.05", "trixie": "24.11", "forky": "26.05", "jammy": "21.08", "noble": "23.11"}
AUTH = os.environ.get("CLUSTERFORGE_TESTBED_AUTH", "munge" if DIST in ("bookworm", "jammy", "noble") else "slurm")
STATE = os.environ.get("CLUSTERFORGE_TESTBED_STATE", "/var/lib/clusterforge-testbed")
# Enroot and Pyxis come from their releases on GitHub, or from a site's mirror directory when CLUSTERFORGE_ARTIFACTS
# names one (this repository's tests and CI name ../shared/artifacts: their machines cannot reach GitHub). A mirror
# holds Enroot's source with its submodules, which the controller builds; NVIDIA publishes no such file, so without
# a mirror the nodes install NVIDIA's release package, whose digest is to be pinned from the download.
MIRROR = os.environ.get("CLUSTERFORGE_ARTIFACTS") or None
ENROOT_DEB_SHA256 = "0" * 64  # until pinned, the deploy stops before touching any host, naming the digest it found
PYXIS = Artifact(source="https://github.com/NVIDIA/pyxis/archive/refs/tags/v0.24.0.tar.gz", name="pyxis-0.24.0.tar.gz",
                 sha256="063653ba39125ac29796cc6079701d1ec34dd4c5baf698efacc0f36bf3619681")
ENROOT_SOURCE = Artifact(source="enroot-4.1.2-with-submodules.tar.gz",
                         sha256="19ef3a2b01f6af06cd2fde34b2b56a841737f8825f0ff2652b1b24b1575e1ca1")
ENROOT_PACKAGE = Artifact(source="https://github.com/NVIDIA/enroot/releases/download/v4.1.2/enroot_4.1.2-1_amd64.deb",
                          sha256=ENROOT_DEB_SHA256)
ENROOT = Enroot(version="4.1.2", source=ENROOT_SOURCE) if MIRROR else Enroot(version="4.1.2", package=ENROOT_PACKAGE)

# The GPU stack comes from the test cluster's own repository of stand-ins with NVIDIA's package names, two versions
# each (testbed/stack-repo.sh), served by its apt proxy and signed by a test-only key whose public half the inventory
# pins as NVIDIA's is pinned on a real cluster; its daemons succeed or fail on
# demand. Nothing of NVIDIA's is installed. CLUSTERFORGE_TESTBED_DRIVER picks the driver (the e2e tests move it).
STACK_REPO = "http://10.77.0.1:3142/clusterforge-stack"
DRIVER = os.environ.get("CLUSTERFORGE_TESTBED_DRIVER", "550.163.01-1")
# Slurm's packages stay at the version each host has, held, unless CLUSTERFORGE_TESTBED_SLURM pins one: the e2e tests
# move the cluster to a site's patch release that way (testbed/site-slurm.sh).
SLURM_PINNED = os.environ.get("CLUSTERFORGE_TESTBED_SLURM") or None

# The machines are containers on a 2-core host: one socket of two cores, and a little of its memory. The eight
# "H100s" are device nodes with no driver behind them (char 195:N), which is all slurmd and the devices cgroup need.
# Their nvidia-smi and ibstat replay real H100 captures (testbed/nvidia-smi, testbed/ibstat): these are its HCAs.
TEST_GPU_NODE = Profile(
    "test-gpu",
    sockets=1,
    cores_per_socket=2,
    real_memory=2048,
    gpus=Gpus(type="h100", count=8, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3, 4, 5, 6, 7]}),
    nvswitch=True,
    hcas=("mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"),
    nccl=Nccl(ib_hca=("mlx5_0:1", "mlx5_1:1", "mlx5_4:1", "mlx5_5:1"), socket_ifname="=eth0"),
    # The admission gate's tests, run by the testbed's stand-ins (testbed/accept/: the tools' real output formats,
    # with results a test sets per node); ib_write_bw from host memory, there being no GPU. Only with
    # CLUSTERFORGE_TESTBED_ADMISSION=on: a cluster's first deploy holds every node until it passes, which the other
    # e2e tests do not expect; the gate's own test turns it on.
    admission=Admission(programs=Programs(bin_dir="/usr/local/lib/clusterforge-testbed/accept"), dcgm_level=1,
                        ib_write_bw_cuda=False)
    if os.environ.get("CLUSTERFORGE_TESTBED_ADMISSION", "off") == "on" else None,
    # Automatic repair: off unless CLUSTERFORGE_TESTBED_REPAIR says observe or on (the gate's e2e module observes, and
    # its repair test turns the plan on for itself): the health tests drain nodes and expect them to stay drained.
    repair=Repair(mode=os.environ.get("CLUSTERFORGE_TESTBED_REPAIR", "off")),  # type: ignore[arg-type]
)

ctl = Host("ctl", address="10.77.0.10", memory=2048)


def _keys(name: str) -> tuple[str, ...]:
    """A person's public key, made by testbed/up.sh in $STATE/people/<name> (the private half never leaves this
    machine, nor is it committed); none where the test cluster was never brought up here."""
    path = os.path.join(STATE, "people", f"{name}.pub")
    return (open(path, encoding="utf-8").read().strip(),) if os.path.exists(path) else ()


# The test cluster's people, made by the deploy on every machine, nothing by hand. alice and bob are the accounting's
# users; carol is in no account but in ops, the admin group, who reach a GPU node over SSH without a job there.
# Everyone else reaches one only into a job of theirs (pam_slurm_adopt), where Slurm tracks jobs by cgroup: not on
# forky, whose test cluster runs Slurm without cgroups (slurm_conf_extra below), so there is nothing to adopt into.
# Their homes are /home/<name>: the test cluster's shared /home (one directory of this machine in every machine,
# as an NFS home; the Vagrantfile mounts it), which the NFS mount below is not.
IDENTITY = Identity(
    people=(Person("alice", uid=2001, ssh_keys=_keys("alice")),
            Person("bob", uid=2002, ssh_keys=_keys("bob")),
            Person("carol", uid=2003, groups=("ops",), ssh_keys=_keys("carol")),),
    groups=(Group("ops", gid=2100),),
    admin_group="ops",
    adopt=DIST != "forky",
)

# CLUSTERFORGE_TESTBED_IDENTITY=directory: the people come from a site directory instead, slapd on ctl (testbed/
# directory.sh: its CA, made there, pinned here; its bind password in the cluster's OpenBao), in which the test that
# turns it on (tests/e2e/test_directory.py) puts alice, bob and carol with the ids above, ops, and dave, a person the
# directory alone knows, whom the accounting below then names. The cache's bound is SSSD's least the inventory
# takes, 60 s (5400 s by default), so that a person removed from the directory is refused within a test's wait.
DIRECTORY_CA = os.path.join(STATE, "directory", "ca.pem")


def _digest(path: str) -> str:
    """The CA's sha256, read from the file the testbed made on this machine (a site pins its CA's from its PKI);
    none where it was never made, which validation refuses."""
    return hashlib.sha256(open(path, "rb").read()).hexdigest() if os.path.exists(path) else "0" * 64


FROM_DIRECTORY = os.environ.get("CLUSTERFORGE_TESTBED_IDENTITY", "declared") == "directory"
if FROM_DIRECTORY:
    IDENTITY = Identity(
        directory=Directory(uris=("ldap://ctl",), base_dn="dc=cluster,dc=test",
                            user_base="ou=people,dc=cluster,dc=test", group_base="ou=groups,dc=cluster,dc=test",
                            ca_certificate=Artifact(source=DIRECTORY_CA, sha256=_digest(DIRECTORY_CA)),
                            bind_dn="cn=sssd,ou=services,dc=cluster,dc=test", entry_cache_timeout=60),
        admin_group="ops",
        adopt=DIST != "forky",
    )



def with_bmcs(*entries: Nodes) -> tuple[Nodes, ...]:
    """Each machine's BMC: an IPMI simulator on this machine (testbed/bmc/sims.sh, started by testbed/up.sh with the
    account it keeps in OpenBao) at 10.77.0.2NN for the machine at 10.77.0.NN, whose chassis power stops and starts
    that machine's container. Made from the entries, so that an inventory edited to more machines (the e2e tests,
    the deploy benchmark) has as many BMCs; an entry with an address past 10.77.0.54 has none (no address is left
    for its BMC). OpenIPMI's simulator does not answer ipmitool's question for its cipher suites: suite 3 is asked
    for at once."""
    made = []
    for entry in entries:
        octets = [int(address.rsplit(".", 1)[1]) for address in hostlist.expand_hostlist(entry.address or "")]
        if octets and max(octets) + 200 <= 254:
            bmc = Bmc(address=",".join(f"10.77.0.{octet + 200}" for octet in octets), protocol="ipmi", cipher_suite=3)
            entry = entry.model_copy(update={"bmc": bmc})
        made.append(entry)
    return tuple(made)


cluster = Cluster(
    "vagrant",
    slurm_version=SLURM.get(DIST, DIST),
    auth=AUTH,
    controller=ctl,
    database=ctl,
    login=(Host("login1", address="10.77.0.9"),),  # below the nodes: they grow upwards from .11
    # CLUSTERFORGE_TESTBED_CONFIGLESS=on: the nodes' slurmd fetches the Slurm files from slurmctld (tests/e2e/
    # test_configless.py turns it on and off again); off, as every other e2e module runs.
    configless=os.environ.get("CLUSTERFORGE_TESTBED_CONFIGLESS", "off") == "on",
    nfs=Nfs(
        server=ctl,
        # No kernel NFS on the machine the containers run on: Ganesha serves in user space, and the clients get
        # their mount units without mounting them.
        software="ganesha",
        # Ganesha 6 (trixie, forky) stops when it may not mark itself an I/O flusher, which a container may not.
        ganesha_core={"allow_set_io_flusher_fail": "true"} if DIST in ("trixie", "forky") else {},
        mount_now=False,
        exports=(NfsExport(path="/srv/nfs/home", clients="10.77.0.0/24"),),
        mounts=(NfsMount(export="/srv/nfs/home", mount_point="/shared", options=("defaults", "_netdev", "nofail")),),
    ),
    profiles=(TEST_GPU_NODE,),
    nodes=with_bmcs(Nodes("gpu[01-02]", address="10.77.0.[11-12]", profile="test-gpu", leaf="leaf1"),),
    fabric=Fabric(leaves=(Leaf("leaf1"),)),
    partitions=(Partition("gpu", profiles=("test-gpu",), default=True, max_time="01:00:00"),),
    # The test cluster's OpenBao dev server listens on this machine's loopback without TLS (testbed/up.sh).
    vault=Vault(address="http://127.0.0.1:8210", allow_plain_http=True, auth="token"),
    identity=IDENTITY,
    # Two teams with fair-share weights; their users are people of the identity above.
    accounting=Accounting(
        accounts=(Account("research", fairshare=60, description="research groups", organization="lab"),
                  Account("vision", parent="research", fairshare=30),
                  Account("teaching", fairshare=40, max_tres_per_job="gres/gpu=1")),
        users=(User("alice", accounts=("vision",)),
               User("bob", accounts=("teaching", "vision"), default_account="teaching"),
               *((User("dave", accounts=("vision",)),) if FROM_DIRECTORY else ())),
    ),
    setup=Setup(apt_proxy="http://10.77.0.1:3142", etc_hosts=True),
    # Prometheus and Alertmanager on the login host; alerts go to a receiver on the machine the cluster runs on,
    # which the e2e tests listen with (nothing needs to: Alertmanager keeps trying). Posts come 5 s after an alert,
    # and 10 s after a change to a group already posted: a test's alert is not held back for Alertmanager's default
    # 5 minutes by an earlier test's alert on the same node. CLUSTERFORGE_TESTBED_MONITORING=off
    # leaves it and slurmrestd out (the deploy benchmark, to compare with a peer that has neither).
    monitoring=Monitoring(host=Host("login1"), scrape_interval=5, webhook="http://10.77.0.1:9095/alerts",
                          group_wait=5, group_interval=10)
    if os.environ.get("CLUSTERFORGE_TESTBED_MONITORING", "on") != "off" else None,
    # slurmrestd on the controller, JWT-authenticated with a key from the OpenBao above.
    rest=Rest() if os.environ.get("CLUSTERFORGE_TESTBED_MONITORING", "on") != "off" else None,
    # Checked every minute, the shortest interval, so a fault shows within a test. The containers share the kernel
    # log of the machine they run on, so kernel records reach the check through a root-owned file the tests write
    # (on real nodes there is no such file: only the kernel's own log).
    # A container cannot reboot its kernel: `scontrol reboot` runs testbed/reboot, which "loads" the installed
    # stand-in driver and, 3 s later, restarts slurmd with -b for that one start, so that Slurm sees a boot.
    # Nor does it get a boot id of its own: testbed/reboot writes a new one, and empties the kernel records.
    # Nor an HCA: its port counters are the files a test writes under /run/clusterforge-testbed/infiniband, laid out
    # as /sys/class/infiniband (mlx5_0/ports/1/counters/link_downed), read while that directory exists.
    health=Health(interval=60, kernel_log_extra="/run/clusterforge-testbed/kernel-records",
                  boot_id_file="/run/clusterforge-testbed/boot-id",
                  infiniband_sysfs="/run/clusterforge-testbed/infiniband",
                  reboot_program="/usr/local/sbin/clusterforge-testbed-reboot"),
    stack=Stack(
        slurm=SLURM_PINNED,
        gpu=GpuStack(driver=DRIVER, fabric_manager=DRIVER, persistenced=DRIVER, dcgm="1:4.5.3-1",
                     dcgm_exporter="4.8.2-1", container_toolkit="1.17.4-1"),
        repository=AptRepository(url=STACK_REPO, suite="/", key=Artifact(
            source=f"{STACK_REPO}/keyring.gpg",  # testbed/stack-repo/keyring.gpg, published with the packages
            sha256="3599d296bca0c376c34a434672d1753562250c00c6716642385ce3ca912b8ccb")),
    ),
    containers=Containers(artifact_dir=MIRROR, enroot=ENROOT, pyxis=Pyxis(version="0.24.0", source=PYXIS)),
    # A container's /proc/meminfo, which slurmd -C reads, is the whole machine's: RealMemory gives jobs 2048 MiB of
    # it, so `clusterforge check` judges only memory above what a node has, not how much of it jobs may use.
    acceptance=Acceptance(memory_tolerance=100),
    # This host binds every cgroup controller to v1 hierarchies; forky's systemd mounts cgroup v2 alone, which then
    # has no controller in a container here (Debian 12 and 13 containers mount the v1 ones), and Slurm 26.05 refuses
    # the host's mix ("Hybrid mode is not supported"). So on forky the test cluster runs Slurm without cgroups: no
    # confinement there, which the tests that need it say (a forky server boots with cgroup v2 and keeps all this).
    cgroup_conf_extra={"CgroupPlugin": "disabled"} if DIST == "forky" else {},
    slurm_conf_extra={
        # The containers get no cpu/cpuacct cgroup controllers (the devices, memory and cpuset ones they do get
        # carry the confinement under test), and jobacct_gather/cgroup refuses to start without cpuacct.
        "JobAcctGatherType": "jobacct_gather/linux",
        # A requeued job starts again only once its launch credential expired (120 s by default): the e2e tests
        # requeue jobs, and wait for that on every run. 30 s is ample for a prolog here.
        "AuthInfo": "cred_expire=30",
        **({"ProctrackType": "proctrack/linuxproc", "TaskPlugin": "task/affinity"} if DIST == "forky" else {}),
    },
)

controller, compute, login, database, nfs = host_groups(
    cluster,
    ssh_user="vagrant",  # root may not log in over SSH (testbed/build-box.sh); vagrant has sudo
    sudo=True,
    ssh_key=f"{STATE}/id_ed25519",
    ssh_strict_host_key_checking="off",
    ssh_known_hosts_file="/dev/null",
)
