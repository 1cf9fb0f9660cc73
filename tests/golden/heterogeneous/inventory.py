"""H100 nodes, H200 nodes with NVML autodetect, and CPU-only nodes without addresses (resolved by DNS)."""

from clusterforge.model import Cluster, Fabric, Gpus, Host, Leaf, Nodes, Partition, Profile, Spine

H100 = Profile("hgx-h100", sockets=2, cores_per_socket=48, threads_per_core=2, real_memory=1_900_000,
               gpus=Gpus(type="h100", count=8, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}))
H200 = Profile("hgx-h200", sockets=2, cores_per_socket=56, threads_per_core=2, real_memory=1_950_000,
               gpus=Gpus(type="h200", count=8, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3], 1: [4, 5, 6, 7]},
                         autodetect="nvml"))
CPU = Profile("cpu", sockets=2, cores_per_socket=32, real_memory=500_000, features=("avx512",))

cluster = Cluster(
    "mixed",
    slurm_version="24.11",
    controller=Host("ctl", address="10.20.0.2"),
    backup_controller=Host("ctl-b", address="10.20.0.3"),
    database=Host("db", address="10.20.0.4", memory=6144),
    profiles=(H100, H200, CPU),
    nodes=(
        Nodes("h100-[01-04]", address="10.20.1.[11-14]", profile="hgx-h100", leaf="ib-leaf1"),
        Nodes("h200-[01-04]", address="10.20.2.[11-14]", profile="hgx-h200", leaf="ib-leaf2"),
        Nodes("cpu[1-6]", profile="cpu", leaf="ib-leaf3"),
    ),
    fabric=Fabric(leaves=(Leaf("ib-leaf1"), Leaf("ib-leaf2"), Leaf("ib-leaf3")),
                  spines=(Spine("ib-spine", switches="ib-leaf[1-3]"),)),
    partitions=(
        Partition("gpu", profiles=("hgx-h100", "hgx-h200"), default=True, max_time="3-00:00:00"),
        Partition("cpu", profiles=("cpu",), max_time="1-00:00:00"),
    ),
)
