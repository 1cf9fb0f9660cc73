"""Partitions with limits, QOS, preemption by requeue and by suspension, and accounting settings."""

from clusterforge.model import (
    Accounting, Cluster, Fabric, Gpus, Host, Leaf, Nodes, Partition, PriorityWeights, Profile, Qos, Spine,
)

DGX = Profile("dgx-h100", sockets=2, cores_per_socket=56, threads_per_core=2, real_memory=2_000_000,
              gpus=Gpus(type="h100", count=8, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}))

cluster = Cluster(
    "parts",
    slurm_version="23.11",
    controller=Host("ctl", address="10.40.0.2"),
    database=Host("db", address="10.40.0.3", memory=262_144),
    profiles=(DGX,),
    nodes=(Nodes("dgx[01-16]", address="10.40.1.[1-16]", profile="dgx-h100"),),
    fabric=Fabric(leaves=(Leaf("leaf1", nodes="dgx[01-08]"), Leaf("leaf2", nodes="dgx[09-16]")),
                  spines=(Spine("spine", switches="leaf[1-2]"),)),
    partitions=(
        Partition("batch", profiles=("dgx-h100",), default=True, max_time="2-00:00:00", default_time="1:00:00",
                  def_mem_per_gpu=200_000, def_cpu_per_gpu=12, allow_accounts=("research", "prod")),
        Partition("interactive", nodes="dgx[15-16]", max_time="08:00:00", max_nodes=2, exclusive_user=True,
                  preempt_mode="suspend"),
        Partition("hero", profiles=("dgx-h100",), priority_tier=100, preempts=("batch", "interactive"),
                  qos="hero", allow_qos=("hero",), max_time="UNLIMITED"),
        Partition("debug", nodes="dgx16", max_time="30", max_nodes=1),
    ),
    accounting=Accounting(
        database="parts_acct", user="slurmdbd",
        weights=PriorityWeights(fairshare=100_000, age=5_000, job_size=1_000, partition=10_000, qos=50_000),
        decay_half_life="14-0",
        enforce=("associations", "limits", "qos"),
        qos=(Qos("hero", priority=1000, max_tres_per_user="gres/gpu=128"),),
    ),
    slurm_conf_extra={"MaxJobCount": 50000, "mpidefault": "pmi2", "KillOnBadExit": None},
    cgroup_conf_extra={"ConstrainSwapSpace": False, "AllowedSwapSpace": None},
)
