"""The resolve stage as a whole: every problem at once, each with its line, and results per cluster object."""

from __future__ import annotations

import re

from clusters import gpu_profile, problems, small_cluster

from clusterforge.model import Nodes, Partition, resolve
from clusterforge.render import slurm_files
from clusterforge.versions import SlurmVersion


def at_line(text: str) -> int:
    match = re.search(r"\(tests/\S+\.py:(\d+)\)$", text)
    assert match, f"no file:line origin in {text!r}"
    return int(match.group(1))


def test_the_small_cluster_is_valid():
    valid = resolve(small_cluster())
    assert [n.name for n in valid.nodes] == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert [n.address for n in valid.nodes] == ["10.9.1.1", "10.9.1.2", "10.9.1.3", "10.9.1.4"]


def test_every_problem_is_reported_at_once():
    cluster = small_cluster(
        controller=None,
        profiles=(gpu_profile(real_memory=-1),),
        nodes=(Nodes("gpu[01-04]", profile="gpu", leaf="leaf1"), Nodes("gpu04", profile="gpu", leaf="leaf1")),
        partitions=(Partition("batch", nodes="gpu[01-09]"),),
        slurm_conf_extra={"NoSuchKey": 1},
    )
    found = problems(cluster)
    assert [p.split(":")[0] for p in found] == [
        "controller", "profiles[gpu].real_memory", "nodes[gpu04]", "partitions[batch].nodes", "partitions",
        "slurm_conf_extra[NoSuchKey]",
    ]
    for text in found:
        assert at_line(text) > 0


def test_a_copied_cluster_is_validated_afresh():
    original = small_cluster()
    assert "MaxJobCount" not in resolve(original).slurm_conf
    copy = original.model_copy(update={"slurm_conf_extra": {"MaxJobCount": 5}})
    assert resolve(copy).slurm_conf["MaxJobCount"] == "5"
    assert "MaxJobCount" not in resolve(original).slurm_conf


def test_from_25_05_the_hosts_get_topology_yaml_and_topology_conf_is_removed():
    # slurmctld 25.05+ reads topology.yaml instead of topology.conf where one exists: one file, by release.
    files = slurm_files(resolve(small_cluster(), SlurmVersion.parse("25.05")))
    assert files["topology.yaml"] is not None and files["topology.conf"] is None
    older = slurm_files(resolve(small_cluster(), SlurmVersion.parse("24.11")))
    assert "topology.yaml" not in older and older["topology.conf"] is not None


def test_without_a_fabric_neither_topology_file_is_kept():
    unfabric = small_cluster(fabric=None, nodes=(Nodes("gpu[01-04]", address="10.9.1.[1-4]", profile="gpu"),))
    files = slurm_files(resolve(unfabric, SlurmVersion.parse("26.05")))
    assert files["topology.yaml"] is None and files["topology.conf"] is None
