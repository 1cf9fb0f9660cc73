"""A site directory read through SSSD (StartTLS), with a bind DN whose password comes from Vault, a login group and
an admin group: every host's sssd.conf (the login host's lets the two groups in), without the password; the compute
nodes' sshd stack with pam_slurm_adopt as with declared people."""

from clusterforge.model import Artifact, Cluster, Directory, Gpus, Host, Identity, Nodes, Partition, Profile, Vault

H100 = Profile("hgx-h100", sockets=2, cores_per_socket=48, threads_per_core=2, real_memory=1_900_000,
               gpus=Gpus(type="h100", count=8, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}))

cluster = Cluster(
    "directory",
    slurm_version="24.11",
    controller=Host("ctl", address="10.50.0.2"),
    database=Host("ctl", address="10.50.0.2", memory=16_384),
    login=(Host("login1", address="10.50.0.5"),),
    profiles=(H100,),
    nodes=(Nodes("gpu[01-04]", address="10.50.1.[1-4]", profile="hgx-h100"),),
    partitions=(Partition("gpu", profiles=("hgx-h100",), default=True),),
    vault=Vault(address="https://vault.example.org:8200"),
    identity=Identity(
        directory=Directory(
            uris=("ldap://ldap1.example.org", "ldap://ldap2.example.org"),
            base_dn="dc=example,dc=org",
            user_base="ou=people,dc=example,dc=org",
            group_base="ou=groups,dc=example,dc=org",
            ca_certificate=Artifact(source="https://pki.example.org/ldap-ca.pem", sha256="0" * 63 + "1"),
            bind_dn="cn=sssd-cluster,ou=services,dc=example,dc=org",
            login_group="hpc-users",
        ),
        admin_group="hpc-admins",
    ),
)
