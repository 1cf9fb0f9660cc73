"""People declared in the inventory, with an admin group: the compute nodes get sshd's PAM stack with
pam_slurm_adopt (no pam_systemd, no common-account), the access list letting root and the admins past it, and
logind's RemoveIPC=no drop-in."""

from clusterforge.model import Cluster, Gpus, Group, Host, Identity, Nodes, Partition, Person, Profile

H100 = Profile("hgx-h100", sockets=2, cores_per_socket=48, threads_per_core=2, real_memory=1_900_000,
               gpus=Gpus(type="h100", count=8, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}))
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHkdpqRbBT6ybJEhpxSUcU1xw07q7O6WZCVeLUmsohHF alice@site"

cluster = Cluster(
    "people",
    slurm_version="24.11",
    controller=Host("ctl", address="10.50.0.2"),
    database=Host("ctl", address="10.50.0.2", memory=16_384),
    login=(Host("login1", address="10.50.0.5"),),
    profiles=(H100,),
    nodes=(Nodes("gpu[01-04]", address="10.50.1.[1-4]", profile="hgx-h100"),),
    partitions=(Partition("gpu", profiles=("hgx-h100",), default=True),),
    identity=Identity(
        people=(Person("alice", uid=20001, groups=("hpc-admins", "vision"), ssh_keys=(KEY,)),
                Person("bob", uid=20002, groups=("vision",)),
                Person("carol", uid=20003, locked=True)),
        groups=(Group("hpc-admins", gid=30000), Group("vision", gid=30001)),
        admin_group="hpc-admins",
    ),
)
