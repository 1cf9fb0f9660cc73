"""Gaps in names and addresses, mixed padding, an address block crossing an octet and names written one by one."""

from clusterforge.model import Cluster, Fabric, Gpus, Host, Leaf, Nodes, Partition, Profile, Spine

GPU = Profile("gpu", sockets=2, cores_per_socket=32, threads_per_core=2, real_memory=1_000_000,
              gpus=Gpus(type="h100", count=4, files="/dev/nvidia[0-3]", sockets={0: [0, 1], 1: [2, 3]}))

cluster = Cluster(
    "gaps",
    slurm_version="22.05",
    controller=Host("head", address="10.30.0.1"),
    database=Host("head", address="10.30.0.1", memory=3072),
    profiles=(GPU,),
    nodes=(
        Nodes("gn[001-004,007,010-012]", address="10.30.1.[1-4,7,10-12]", profile="gpu"),
        Nodes("gn[250-257]", address="10.30.1.[250-255],10.30.2.[0-1]", profile="gpu"),
        Nodes("gn9", address="10.30.3.9", profile="gpu"),
        Nodes("gn020", address="10.30.3.20", profile="gpu"),
        Nodes("gn021", address="10.30.3.22", profile="gpu"),
    ),
    fabric=Fabric(leaves=(Leaf("sw-a", nodes="gn[001-004,007,010-012]"), Leaf("sw-b", nodes="gn[250-257],gn9,gn[020-021]")),
                  spines=(Spine("core", switches="sw-a,sw-b"),)),
    partitions=(Partition("whole", profiles=("gpu",), default=True),
                Partition("odd", nodes="gn[001,003,007,011,251,253,255,257],gn9,gn021")),
)
