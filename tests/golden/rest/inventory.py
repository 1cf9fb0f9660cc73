"""slurmrestd on a login host, listening on that host's address only, with JWT authentication: slurm.conf and
slurmdbd.conf accept tokens (AuthAltTypes, with the key's path), and slurmrestd's drop-in runs it as its own user
with the release's OpenAPI plugins. The same inventory on 22.05 is the rest-22.05 case."""

from clusterforge.model import Cluster, Gpus, Host, Nodes, Partition, Profile, Rest

H100 = Profile("hgx-h100", sockets=2, cores_per_socket=48, threads_per_core=2, real_memory=1_900_000,
               gpus=Gpus(type="h100", count=8, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}))

cluster = Cluster(
    "restful",
    slurm_version="24.11",
    controller=Host("ctl", address="10.40.0.2"),
    database=Host("db", address="10.40.0.3", memory=16_384),
    login=(Host("login1", address="10.40.0.5"),),
    profiles=(H100,),
    nodes=(Nodes("gpu[01-04]", address="10.40.1.[1-4]", profile="hgx-h100"),),
    partitions=(Partition("gpu", profiles=("hgx-h100",), default=True, max_time="2-00:00:00"),),
    rest=Rest(host=Host("login1"), listen="10.40.0.5"),
)
