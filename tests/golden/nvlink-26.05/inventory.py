"""Blocks from a profile's NVLink domain (Slurm 25.05+): GB200 NVL72 racks, 72 GPUs across 18 nodes of 4 GPUs each,
written as one Nodes entry per row of racks and no Block by hand. The profile's ``nvlink_domain`` cuts each entry,
in hostlist order, into one block per rack: a block topology named after the profile (gb200-nvlink1 to 3), which
the gb200 partition places its jobs by. The InfiniBand tree under every node stays the cluster's default, and the
wide partition is placed by it."""

from clusterforge.model import Cluster, Fabric, Gpus, Host, Leaf, Nodes, Partition, Profile, Spine

GB200 = Profile("gb200", sockets=2, cores_per_socket=72, threads_per_core=1, real_memory=860_000,
                gpus=Gpus(type="gb200", count=4, files="/dev/nvidia[0-3]", sockets={0: [0, 1], 1: [2, 3]}),
                nvlink_domain=72)

cluster = Cluster(
    "nvl72",
    slurm_version="26.05",
    controller=Host("ctl", address="10.71.0.2"),
    database=Host("ctl", address="10.71.0.2", memory=131_072),
    profiles=(GB200,),
    nodes=(
        Nodes("gb[001-036]", address="10.71.1.[1-36]", profile="gb200"),    # row A: two racks
        Nodes("gb[101-118]", address="10.71.2.[1-18]", profile="gb200"),    # row B: one rack
    ),
    fabric=Fabric(
        topology="ib",
        leaves=(
            Leaf("leaf1", nodes="gb[001-027]"),
            Leaf("leaf2", nodes="gb[028-036],gb[101-118]"),
        ),
        spines=(Spine("spine1", switches="leaf[1-2]"),),
    ),
    partitions=(
        Partition("gb200", profiles=("gb200",), default=True, topology="gb200"),
        Partition("wide", profiles=("gb200",)),
    ),
)
