"""Production: 32 DGX H100 nodes in 4 scalable-unit leaves under 2 spines.

    pyinfra inventories/prod.py deploy/cluster.py
    clusterforge validate inventories/prod.py
"""

import os

from clusterforge.inventory import host_groups
from clusterforge.model import (
    Accounting, Admission, AptRepository, Artifact, Cluster, Containers, Enroot, Fabric, GpuStack, Gpus, Host, Leaf,
    Nccl, Nfs, NfsExport, NfsMount, Nodes, Partition, PriorityWeights, Profile, Programs, Pyxis, Qos, Spine, Stack,
    Vault,
)

# The container artifacts, pinned by the admin: download each once on a connected machine and put the output of
# `sha256sum FILE` here (docs/inventory/containers.md). Until then the deploy stops before touching any host, naming the
# artifact and the digest it found. They are downloaded from their release URLs, or read by file name from a mirror
# directory on the deploy machine that CLUSTERFORGE_ARTIFACTS names (a site without access to GitHub).
MIRROR = os.environ.get("CLUSTERFORGE_ARTIFACTS") or None
ENROOT_DEB_SHA256 = "0" * 64
PYXIS_TAR_SHA256 = "063653ba39125ac29796cc6079701d1ec34dd4c5baf698efacc0f36bf3619681"  # kept as pyxis-0.24.0.tar.gz
CUDA_KEY_SHA256 = "0" * 64
DRIVER = "550.163.01-1"  # the fabric manager must be the driver's version: a new driver moves both

# DGX H100: 2 x Xeon 8480C (56 cores, 2 threads each), ~2 TiB RAM, 8 x H100 SXM.
# GPUs 0-3 hang off socket 0 and 4-7 off socket 1 (nvidia-smi topo -m on these boxes).
DGX_H100 = Profile(
    "dgx-h100",
    sockets=2,
    cores_per_socket=56,
    threads_per_core=2,
    real_memory=2_000_000,  # MiB, a little under the 2,063,425 `slurmd -C` reports
    gpus=Gpus(type="h100", count=8, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}),
    features=("ib-ndr",),
    local_disk="/raid",  # the DGX's NVMe RAID: container images and root file systems go there
    nvswitch=True,
    # A DGX H100's ConnectX-7s: eight single-port ones for the compute fabric, two dual-port ones for storage and
    # management. Their mlx5_N names depend on PCI enumeration: take them from `ibdev2netdev` on one node.
    hcas=tuple(f"mlx5_{n}" for n in range(12)),
    nccl=Nccl(ib_hca=tuple(f"mlx5_{n}:1" for n in (0, 3, 4, 5, 6, 9, 10, 11)), socket_ifname="=bond0"),
    # A new node, or one back from a hardware repair, takes no user's job before it passes DCGM's level 2, nvbandwidth,
    # all_reduce on its 8 GPUs and ib_write_bw on each of the 8 compute HCAs above, at H100's default floors. The
    # programs come from the site's own image (nccl-tests built with MPI, nvbandwidth, a CUDA-enabled perftest, dcgmi
    # talking to the node's nv-hostengine), pulled through Pyxis.
    admission=Admission(programs=Programs(image="registry.example.org#hpc/acceptance:2026.11")),
)

cluster = Cluster(
    "prod",
    slurm_version="22.05",
    controller=Host("slurm-ctl01", address="10.0.0.10"),
    database=Host("slurm-db01", address="10.0.0.20", memory=65_536),
    login=(Host("login01", address="10.0.0.31"), Host("login02", address="10.0.0.32")),
    nfs=Nfs(
        server=Host("nfs01", address="10.0.0.40"),
        exports=(NfsExport(path="/export/home", clients="10.0.0.0/16"),
                 NfsExport(path="/export/datasets", clients="10.0.0.0/16", options=("ro", "sync", "no_subtree_check"))),
        mounts=(NfsMount(export="/export/home", mount_point="/home"),
                NfsMount(export="/export/datasets", mount_point="/datasets")),
    ),
    profiles=(DGX_H100,),
    nodes=(
        Nodes("gpu-node-[001-008]", address="10.0.1.[1-8]", profile="dgx-h100", leaf="leaf01"),
        Nodes("gpu-node-[009-016]", address="10.0.1.[9-16]", profile="dgx-h100", leaf="leaf02"),
        Nodes("gpu-node-[017-024]", address="10.0.1.[17-24]", profile="dgx-h100", leaf="leaf03"),
        Nodes("gpu-node-[025-032]", address="10.0.1.[25-32]", profile="dgx-h100", leaf="leaf04"),
    ),
    fabric=Fabric(
        leaves=(Leaf("leaf01"), Leaf("leaf02"), Leaf("leaf03"), Leaf("leaf04")),
        spines=(Spine("spine01", switches="leaf[01-04]"), Spine("spine02", switches="leaf[01-04]")),
    ),
    partitions=(
        Partition("train", profiles=("dgx-h100",), default=True, max_time="7-00:00:00", default_time="04:00:00",
                  priority_tier=1, def_mem_per_gpu=240_000, def_cpu_per_gpu=24),
        Partition("debug", nodes="gpu-node-032", max_time="00:30:00", default_time="00:10:00", priority_tier=1,
                  max_nodes=1),
        Partition("priority", profiles=("dgx-h100",), max_time="2-00:00:00", priority_tier=10, preempts=("train",),
                  allow_qos=("high",), qos="high"),
    ),
    accounting=Accounting(
        weights=PriorityWeights(fairshare=10_000, age=1_000, job_size=0, partition=1_000, qos=2_000),
        qos=(Qos("high", priority=100, max_tres_per_user="gres/gpu=64"),),
    ),
    vault=Vault(address="https://vault.example.org:8200", auth="approle"),
    stack=Stack(
        gpu=GpuStack(driver=DRIVER, fabric_manager=DRIVER, persistenced=DRIVER, dcgm="1:3.3.9",
                     container_toolkit="1.17.4-1"),
        repository=AptRepository(
            url="https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64", suite="/",
            key=Artifact(source="https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub",
                         sha256=CUDA_KEY_SHA256)),
    ),
    containers=Containers(
        artifact_dir=MIRROR,
        enroot=Enroot(version="4.1.2", hooks=("slurm-pmi", "slurm-pytorch"), package=Artifact(
            source="https://github.com/NVIDIA/enroot/releases/download/v4.1.2/enroot_4.1.2-1_amd64.deb",
            sha256=ENROOT_DEB_SHA256)),
        pyxis=Pyxis(version="0.24.0", source=Artifact(
            source="https://github.com/NVIDIA/pyxis/archive/refs/tags/v0.24.0.tar.gz", name="pyxis-0.24.0.tar.gz",
            sha256=PYXIS_TAR_SHA256)),
    ),
)

controller, compute, login, database, nfs = host_groups(cluster, ssh_user="root")
