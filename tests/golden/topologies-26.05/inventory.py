"""Two topologies in one topology.yaml (Slurm 25.05+): the InfiniBand tree, the cluster's default, under every
node; and the NVLink domains of the GB200 racks as blocks (72 GPUs across 18 nodes each). The GB200 partition
places its jobs by the blocks, the H100 one by the tree."""

from clusterforge.model import (
    Block,
    BlockTopology,
    Cluster,
    Fabric,
    Gpus,
    Host,
    Leaf,
    Nodes,
    Partition,
    Profile,
    Spine,
)

DGX = Profile("dgx-h100", sockets=2, cores_per_socket=56, threads_per_core=2, real_memory=2_000_000,
              gpus=Gpus(type="h100", count=8, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}))
GB200 = Profile("gb200", sockets=2, cores_per_socket=72, threads_per_core=1, real_memory=860_000,
                gpus=Gpus(type="gb200", count=4, files="/dev/nvidia[0-3]", sockets={0: [0, 1], 1: [2, 3]}))

cluster = Cluster(
    "mixed",
    slurm_version="26.05",
    controller=Host("ctl", address="10.70.0.2"),
    database=Host("ctl", address="10.70.0.2", memory=131_072),
    profiles=(DGX, GB200),
    nodes=(
        Nodes("dgx[01-08]", address="10.70.1.[1-8]", profile="dgx-h100"),
        Nodes("gb[001-036]", address="10.70.2.[1-36]", profile="gb200"),
    ),
    fabric=Fabric(
        topology="ib",
        leaves=(
            Leaf("leaf1", nodes="dgx[01-08]"),
            Leaf("leaf2", nodes="gb[001-018]"),
            Leaf("leaf3", nodes="gb[019-036]"),
        ),
        spines=(Spine("spine1", switches="leaf[1-3]"),),
    ),
    topologies=(
        BlockTopology(
            "nvl72",
            block_sizes=(18, 36),
            blocks=(Block("rack1", nodes="gb[001-018]"), Block("rack2", nodes="gb[019-036]")),
        ),
    ),
    partitions=(
        Partition("h100", profiles=("dgx-h100",), default=True),
        Partition("gb200", profiles=("gb200",), topology="nvl72"),
    ),
)
