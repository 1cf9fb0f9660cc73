"""Monitoring on a host of its own, with a webhook: GPU nodes and CPU-only nodes (no GPU rule for those, and
reached by name), a login host, and two partitions whose declared node counts the alert rules hold them to. The GPU
nodes run DCGM 4 and its exporter, which Prometheus scrapes too."""

from clusterforge.model import Cluster, GpuStack, Gpus, Host, Monitoring, Nodes, Partition, Profile, Stack

H100 = Profile("hgx-h100", sockets=2, cores_per_socket=48, threads_per_core=2, real_memory=1_900_000,
               gpus=Gpus(type="h100", count=8, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}))
CPU = Profile("cpu", sockets=2, cores_per_socket=32, real_memory=500_000)

cluster = Cluster(
    "watched",
    slurm_version="24.11",
    controller=Host("ctl", address="10.30.0.2"),
    database=Host("ctl", address="10.30.0.2", memory=16_384),
    login=(Host("login1", address="10.30.0.5"),),
    profiles=(H100, CPU),
    nodes=(
        Nodes("gpu[01-04]", address="10.30.1.[1-4]", profile="hgx-h100"),
        Nodes("cpu[1-2]", profile="cpu"),
    ),
    partitions=(
        Partition("gpu", profiles=("hgx-h100",), default=True, max_time="2-00:00:00"),
        Partition("cpu", profiles=("cpu",), max_time="1-00:00:00"),
    ),
    monitoring=Monitoring(host=Host("mon", address="10.30.0.9"), scrape_interval=15, retention_days=90,
                          webhook="https://hooks.example.org/alerts/watched", pending_minutes=20),
    stack=Stack(gpu=GpuStack(driver="550.163.01-1", dcgm="1:4.5.2-1", dcgm_exporter="4.8.2-1")),
)
