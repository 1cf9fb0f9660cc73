"""Rules for partitions: members, the default, limits, QOS, preemption."""

from __future__ import annotations

from clusters import only_problem, problems, small_cluster

from clusterforge.model import Account, Accounting, Fabric, Gpus, Leaf, Nodes, Partition, Profile, Qos, resolve
from clusterforge.model.base import deferring
from clusterforge.render import render_all


def test_partition_naming_an_unknown_node_points_at_the_partition_line():
    partition = Partition("batch", nodes="gpu[01-05]", default=True)
    line = partition.origin
    text = only_problem(small_cluster(partitions=(partition,)))
    assert text.startswith("partitions[batch].nodes: gpu05 is not a node of this cluster (")
    assert text.endswith(f"({line})") and "test_partitions.py" in line


def test_nodes_no_partition_takes_are_named_at_their_entry():
    # Slurm takes them, but never runs a job on them.
    nodes = (Nodes("gpu[01-04]", profile="gpu", leaf="leaf1"), Nodes("spare[1-2]", profile="gpu", leaf="leaf1"))
    parts = (Partition("batch", nodes="gpu[01-04]", default=True),)
    text = only_problem(small_cluster(nodes=nodes, partitions=parts))
    assert text == ("nodes[spare[1-2]]: spare[1-2] are in no partition: Slurm would never run a job on them; add "
                    f"them to a partition's nodes= or profiles= ({nodes[1].origin})")
    parts = (Partition("batch", nodes="gpu[01-04],spare1", default=True),)
    assert only_problem(small_cluster(nodes=nodes, partitions=parts)).startswith(
        "nodes[spare[1-2]]: spare2 is in no partition: Slurm would never run a job on it; add it to a partition's "
        "nodes= or profiles=")


def test_nodes_beside_an_entry_left_out_for_its_mistake_are_still_held_to_a_partition():
    with deferring():
        nodes = (Nodes("gpu[01-02]", profile="gpu", leaf=1), Nodes("gpu[03-04]", profile="gpu", leaf="leaf1"))
    parts = (Partition("batch", nodes="gpu[01-03]", default=True),)
    assert [p.split(" (")[0] for p in problems(small_cluster(nodes=nodes, partitions=parts))] == [
        "nodes[gpu[01-02]].leaf = 1: Input should be a valid string",
        "nodes[gpu[03-04]]: gpu04 is in no partition: Slurm would never run a job on it; add it to a partition's "
        "nodes= or profiles="]


def test_nodes_a_misspelt_partition_member_leaves_out_are_not_also_in_no_partition():
    parts = (Partition("batch", profiles=("gpuu",), default=True),)
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions[batch].profiles: 'gpuu' is not a profile of this cluster (did you mean 'gpu'?)")
    parts = (Partition("batch", nodes="gpu[01-03],gpo04", default=True),)
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions[batch].nodes: gpo04 is not a node of this cluster (did you mean gpu04?)")


def test_a_wrong_default_is_its_own_problem_only():
    # The partition is left out for its mistake: whether it was to be the default, and which nodes it takes,
    # cannot be known, so neither "no partition is the default" nor "no partition is defined" follows.
    for others in ((), (Partition("other", profiles=("gpu",)),)):
        with deferring():
            cluster = small_cluster(partitions=(Partition("batch", profiles=("gpu",), default="maybe"), *others))
        assert [p.split(" (")[0] for p in problems(cluster)] == [
            "partitions[batch].default = 'maybe': Input should be a valid boolean, unable to interpret input"]


def test_a_misspelt_node_name_is_named_with_the_node_meant():
    parts = (Partition("batch", nodes="gpo[01-04]", default=True),)
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions[batch].nodes: gpo[01-04] are not nodes of this cluster (did you mean gpu[01-04]?)")
    # zero-padding is a misspelling too
    parts = (Partition("batch", nodes="gpu[1-4]", default=True),)
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions[batch].nodes: gpu[1-4] are not nodes of this cluster (did you mean gpu[01-04]?)")
    # but a node past the end of a range is no misspelling of its neighbour
    parts = (Partition("batch", nodes="gpu[01-05]", default=True),)
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions[batch].nodes: gpu05 is not a node of this cluster (tests/")
    fabric = Fabric(leaves=(Leaf("leaf1", nodes="gpu[01-03],gpu-04"),))
    nodes = (Nodes("gpu[01-04]", profile="gpu"),)
    assert only_problem(small_cluster(nodes=nodes, fabric=fabric)).startswith(
        "fabric.leaves[leaf1].nodes: gpu-04 is not a node of this cluster (did you mean gpu04?)")


def test_a_misspelt_partition_to_preempt_is_named_with_the_partition_meant():
    parts = (Partition("batch", profiles=("gpu",), default=True),
             Partition("urgent", profiles=("gpu",), preempts=("bacth",), priority_tier=5))
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions[urgent].preempts: 'bacth' is not a partition of this cluster (did you mean 'batch'?)")


def test_no_default_partition():
    parts = (Partition("batch", profiles=("gpu",)),)
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions: no partition is the default: set default=True on one")


def test_two_default_partitions():
    parts = (Partition("a", profiles=("gpu",), default=True), Partition("b", profiles=("gpu",), default=True))
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions: 2 partitions are the default (a, b): keep one")


def test_preemption_needs_a_higher_tier():
    parts = (Partition("batch", profiles=("gpu",), default=True),
             Partition("urgent", profiles=("gpu",), preempts=("batch",)))
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions[urgent].preempts: preempting batch needs a higher priority_tier than its 1; this partition has 1")


def test_higher_tier_partition_must_declare_what_it_would_preempt():
    parts = (Partition("batch", profiles=("gpu",), default=True),
             Partition("urgent", profiles=("gpu",), preempts=("batch",), priority_tier=5),
             Partition("vip", profiles=("gpu",), priority_tier=9))
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions[vip]: priority_tier 9 is above preemptable batch's and they share nodes")


def test_partition_time_limits():
    parts = (Partition("batch", profiles=("gpu",), default=True, max_time="2 days", default_time="1:00:00"),)
    found = problems(small_cluster(partitions=parts))
    assert found[0].startswith("partitions[batch].max_time: '2 days' is not a Slurm time")
    parts = (Partition("batch", profiles=("gpu",), default=True, max_time="1:00:00", default_time="1-0"),)
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions[batch].default_time: 1-0 is longer than max_time 1:00:00")


def test_partition_qos_must_be_defined():
    parts = (Partition("batch", profiles=("gpu",), default=True, qos="gold"),)
    assert only_problem(small_cluster(partitions=parts)).startswith(
        "partitions[batch].qos: 'gold' is not a QOS of accounting.qos")
    resolve(small_cluster(partitions=parts, accounting=Accounting(qos=(Qos("gold"),))))


def test_qos_names_are_compared_as_slurm_keeps_them_and_each_unknown_one_is_named_where_written():
    # Slurm keeps QOS names in lower case: 'High' is the QOS high, in a partition as in an account.
    parts = (Partition("priority", profiles=("gpu",), default=True, qos="High", allow_qos=("High",)),)
    valid = resolve(small_cluster(partitions=parts, accounting=Accounting(qos=(Qos("high"),))))
    assert " QOS=high AllowQos=high " in render_all(valid)["slurm.conf"]  # as slurmdbd has it
    parts = (Partition("priority", profiles=("gpu",), default=True, qos="gold", allow_qos=("high", "Silver")),)
    found = problems(small_cluster(partitions=parts, accounting=Accounting(qos=(Qos("high"),))))
    assert [p.split(" (")[0] for p in found] == [
        "partitions[priority].qos: 'gold' is not a QOS of accounting.qos",
        "partitions[priority].allow_qos: 'Silver' is not a QOS of accounting.qos"]


def test_a_partition_may_allow_only_accounts_the_inventory_declares_and_a_near_miss_is_named():
    accounting = Accounting(accounts=(Account("research"), Account("prod")))
    parts = (Partition("batch", profiles=("gpu",), default=True, allow_accounts=("resaerch", "Prod", "root")),)
    assert only_problem(small_cluster(partitions=parts, accounting=accounting)).startswith(
        "partitions[batch].allow_accounts: 'resaerch' is not an account of accounting.accounts "
        "(did you mean 'research'?)")
    # Accounts the inventory does not manage are the site's business: any name is taken.
    resolve(small_cluster(partitions=(Partition("batch", profiles=("gpu",), default=True,
                                                allow_accounts=("anything",)),)))


def test_a_partition_may_be_called_all_but_not_default():
    # Checked against the real slurmctld in tests/realslurm: PartitionName=DEFAULT only sets defaults.
    resolve(small_cluster(partitions=(Partition("all", profiles=("gpu",), default=True),)))
    assert only_problem(small_cluster(partitions=(Partition("Default", profiles=("gpu",), default=True),))).startswith(
        "partitions[Default]: 'Default' is a reserved word in Slurm and cannot name a partition")


def test_jobs_that_ask_nothing_get_a_share_of_the_smallest_member_not_a_whole_node():
    small = Profile("small", sockets=1, cores_per_socket=8, real_memory=32000,
                    gpus=Gpus(type="h100", count=4, files="/dev/nvidia[0-3]"))
    big = Profile("big", sockets=2, cores_per_socket=16, real_memory=256000,
                  gpus=Gpus(type="h100", count=8, files="/dev/nvidia[0-7]"))
    cpu = Profile("cpu", sockets=2, cores_per_socket=32, real_memory=64000)
    nodes = (Nodes("s1", profile="small", leaf="leaf1"), Nodes("b1", profile="big", leaf="leaf1"),
             Nodes("c1", profile="cpu", leaf="leaf1"))
    parts = (Partition("gpu", profiles=("small", "big"), default=True), Partition("cpu", profiles=("cpu",)),
             Partition("tuned", profiles=("big",), def_mem_per_cpu=4000, def_mem_per_gpu=30000, def_cpu_per_gpu=2))
    valid = resolve(small_cluster(profiles=(small, big, cpu), nodes=nodes, partitions=parts))
    gpu, cpu_part, tuned = valid.partitions
    assert (gpu.def_mem_per_cpu, gpu.def_mem_per_gpu, gpu.def_cpu_per_gpu) == (4000, 8000, 2)
    assert (cpu_part.def_mem_per_cpu, cpu_part.def_mem_per_gpu, cpu_part.def_cpu_per_gpu) == (1000, None, None)
    assert (tuned.def_mem_per_cpu, tuned.def_mem_per_gpu, tuned.def_cpu_per_gpu) == (4000, 30000, 2)


def test_a_default_that_hands_out_a_whole_node_is_refused():
    parts = (Partition("batch", profiles=("gpu",), default=True, def_mem_per_cpu=4000, def_cpu_per_gpu=8),)
    found = problems(small_cluster(partitions=parts))
    assert found[0].startswith("partitions[batch].def_mem_per_cpu: 4000 MiB per CPU hands a one-CPU job all 4000 "
                               "MiB of a gpu node by default")
    assert found[1].startswith("partitions[batch].def_cpu_per_gpu: 8 CPUs per GPU hands a one-GPU job all 8 CPUs "
                               "of a gpu node, so its other 3 GPUs sit idle")


def test_a_per_gpu_default_a_job_of_all_the_nodes_gpus_could_never_get_is_refused():
    # 8 CPUs and 4000 MiB, 4 GPUs: 3 CPUs or 1500 MiB per GPU would ask 12 CPUs or 6000 MiB for a 4-GPU job.
    parts = (Partition("batch", profiles=("gpu",), default=True, def_cpu_per_gpu=3, def_mem_per_gpu=1500),)
    found = problems(small_cluster(partitions=parts))
    assert found[0].startswith("partitions[batch].def_mem_per_gpu: 1500 MiB per GPU: a job asking all 4 GPUs of a "
                               "gpu node would need 6000 MiB by default, and the node has 4000, so it never starts; "
                               "at most 1000")
    assert found[1].startswith("partitions[batch].def_cpu_per_gpu: 3 CPUs per GPU: a job asking all 4 GPUs of a gpu "
                               "node would need 12 CPUs by default, and the node has 8, so it never starts; at most 2")
    assert len(found) == 2
