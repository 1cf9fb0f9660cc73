"""topology/block on a rail-optimized fabric: four scalable units of four DGX, each cabled to eight rail leaves;
each unit is one block, and jobs are kept within one unit, two neighbouring units, or all four."""

from clusterforge.model import Cluster, Fabric, Gpus, Host, Leaf, Nodes, Partition, Profile, Spine

DGX = Profile("dgx-h100", sockets=2, cores_per_socket=56, threads_per_core=2, real_memory=2_000_000,
              gpus=Gpus(type="h100", count=8, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}))

cluster = Cluster(
    "blocks",
    slurm_version="24.11",
    controller=Host("ctl", address="10.60.0.2"),
    database=Host("ctl", address="10.60.0.2", memory=131_072),
    profiles=(DGX,),
    nodes=tuple(Nodes(f"su{u}-dgx[01-04]", address=f"10.60.{u}.[1-4]", profile="dgx-h100") for u in range(1, 5)),
    fabric=Fabric(
        plugin="block",
        block_sizes=(4, 8, 16),
        rail_optimized=True,
        leaves=tuple(Leaf(f"su{u}-rail{r}", nodes=f"su{u}-dgx[01-04]") for u in range(1, 5) for r in range(1, 9)),
        spines=tuple(Spine(f"spine{s}", switches="su[1-4]-rail[1-8]") for s in range(1, 3)),
    ),
    partitions=(Partition("train", profiles=("dgx-h100",), default=True),),
)
