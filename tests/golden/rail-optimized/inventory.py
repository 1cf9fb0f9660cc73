"""Each DGX is cabled to 8 rail leaves per scalable unit; identical rail leaves become one scheduling unit."""

from clusterforge.model import Cluster, Fabric, Gpus, Host, Leaf, Nodes, Partition, Profile, Spine

DGX = Profile("dgx-h100", sockets=2, cores_per_socket=56, threads_per_core=2, real_memory=2_000_000,
              gpus=Gpus(type="h100", count=8, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}))

cluster = Cluster(
    "rails",
    slurm_version="24.11",
    controller=Host("ctl", address="10.50.0.2"),
    database=Host("ctl", address="10.50.0.2", memory=131_072),
    profiles=(DGX,),
    nodes=(Nodes("su1-dgx[01-04]", address="10.50.1.[1-4]", profile="dgx-h100"),
           Nodes("su2-dgx[01-04]", address="10.50.2.[1-4]", profile="dgx-h100")),
    fabric=Fabric(
        rail_optimized=True,
        leaves=tuple(Leaf(f"su1-rail{r}", nodes="su1-dgx[01-04]") for r in range(1, 9))
        + tuple(Leaf(f"su2-rail{r}", nodes="su2-dgx[01-04]") for r in range(1, 9)),
        spines=(Spine("spine1", switches="su1-rail[1-8],su2-rail[1-8]"),
                Spine("spine2", switches="su1-rail[1-8],su2-rail[1-8]")),
    ),
    partitions=(Partition("train", profiles=("dgx-h100",), default=True),),
)
