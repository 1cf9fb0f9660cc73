"""One GPU node that is also the controller and database; no fabric, so no topology.conf."""

from clusterforge.model import Cluster, Gpus, Host, Nodes, Partition, Profile

cluster = Cluster(
    "solo",
    slurm_version="22.05",
    controller=Host("solo", address="192.168.10.5"),
    database=Host("solo", address="192.168.10.5", memory=6144),
    profiles=(Profile("workstation", sockets=1, cores_per_socket=16, threads_per_core=2, real_memory=60000,
                      gpus=Gpus(type="h100", count=2, files="/dev/nvidia[0-1]", sockets={0: [0, 1]})),),
    nodes=(Nodes("solo", address="192.168.10.5", profile="workstation"),),
    partitions=(Partition("main", nodes="solo", default=True),),
)
