"""Rules for accounting: enforcement, QOS, and the TRES their limits name."""

from __future__ import annotations

import pytest
from clusters import only_problem, small_cluster

from clusterforge.model import Accounting, Profile, Qos, resolve


def with_qos(**limits: str) -> Accounting:
    return Accounting(qos=(Qos("gold", **limits),))


def test_a_qos_limit_names_a_tres_the_cluster_has():
    qos = with_qos(max_tres_per_user="gpu=64")
    line = qos.qos[0].origin
    problem = only_problem(small_cluster(accounting=qos))
    assert problem.startswith("accounting.qos[gold].max_tres_per_user: 'gpu' is not a TRES of this cluster")
    assert "did you mean gres/gpu?" in problem and problem.endswith(f"({line})")


@pytest.mark.parametrize("limits", [
    {"max_tres_per_user": "gres/gpu=64"},
    {"max_tres_per_user": "gres/gpu:h100=16,cpu=512"},  # each GPU type is tracked (AccountingStorageTRES)
    {"grp_tres": "node=4,mem=2000G,billing=100"},
])
def test_tres_limits_the_cluster_can_enforce(limits):
    valid = resolve(small_cluster(accounting=with_qos(**limits)))
    assert "gres/gpu:h100" in valid.slurm_conf["AccountingStorageTRES"].split(",")


@pytest.mark.parametrize("limit, message", [
    ("gres/gpu:a100=8", "'gres/gpu:a100' is not a TRES of this cluster"),
    ("gres/gpu", "'gres/gpu' is not a TRES limit: write name=count"),
    ("gres/gpu=many", "'gres/gpu=many' is not a TRES limit"),
])
def test_tres_limits_slurm_would_refuse(limit, message):
    assert message in only_problem(small_cluster(accounting=with_qos(grp_tres=limit)))


def test_a_cluster_without_gpus_has_no_gpu_tres():
    cpu = Profile("gpu", sockets=2, cores_per_socket=4, real_memory=4000)
    problem = only_problem(small_cluster(profiles=(cpu,), accounting=with_qos(grp_tres="gres/gpu=8")))
    assert "'gres/gpu' is not a TRES of this cluster" in problem
