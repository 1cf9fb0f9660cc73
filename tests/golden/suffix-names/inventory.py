"""Node names with text after the number: bracketed from Slurm 23.11 on, written out one by one before."""

from clusterforge.model import Cluster, Gpus, Host, Nodes, Partition, Profile

GPU = Profile("gpu", sockets=2, cores_per_socket=8, real_memory=120_000,
              gpus=Gpus(type="h100", count=2, files="/dev/nvidia[0-1]"))

cluster = Cluster(
    "suffix",
    slurm_version="24.11",
    controller=Host("ctl", address="10.60.0.2"),
    database=Host("ctl", address="10.60.0.2", memory=16_384),
    profiles=(GPU,),
    nodes=(Nodes("gpu[1-4]-ib", address="10.60.1.[1-4]", profile="gpu"),),
    partitions=(Partition("main", profiles=("gpu",), default=True),),
)
