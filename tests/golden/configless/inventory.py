"""Configless Slurm with a backup controller: slurm.conf enables it beside the site's own SlurmctldParameters, and
every compute node's slurmd gets a drop-in naming both controllers as its --conf-server. The same inventory on 22.05
(Debian 12, whose unit needs its condition cleared) is the configless-22.05 case."""

from clusterforge.model import Cluster, Gpus, Host, Nodes, Partition, Profile

H100 = Profile("hgx-h100", sockets=2, cores_per_socket=48, threads_per_core=2, real_memory=1_900_000,
               gpus=Gpus(type="h100", count=8, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}))

cluster = Cluster(
    "fetching",
    slurm_version="24.11",
    configless=True,
    controller=Host("ctl1", address="10.50.0.2"),
    backup_controller=Host("ctl2", address="10.50.0.3"),
    database=Host("db", address="10.50.0.4", memory=16_384),
    login=(Host("login1", address="10.50.0.5"),),
    profiles=(H100,),
    nodes=(Nodes("gpu[01-04]", address="10.50.1.[1-4]", profile="hgx-h100"),),
    partitions=(Partition("gpu", profiles=("hgx-h100",), default=True, max_time="2-00:00:00"),),
    slurm_conf_extra={"SlurmctldParameters": "idle_on_node_suspend"},
)
