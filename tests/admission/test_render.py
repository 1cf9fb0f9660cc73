"""admission.json: valid JSON, the same bytes for the same inventory, one line per node, each node's tests as the
resolve stage planned them, and absent for a cluster without admission. The golden cases hold the example
inventory's (tests/golden/prod-*/expected/admission.json)."""

from __future__ import annotations

import json

from clusters import gpu_profile, small_cluster
from golden_cases import PROD

from clusterforge.admission.tests import job_script
from clusterforge.loader import load_cluster
from clusterforge.model import Admission, Programs, resolve
from clusterforge.render import admission, render_all


def test_the_example_inventory_plans_every_dgx_node():
    valid = resolve(load_cluster(PROD))
    text = admission.render(valid)
    plan = json.loads(text)
    assert plan["cluster"] == "prod" and len(plan["nodes"]) == 32
    assert text.count("\n") == 34  # the opening line, a line per node, the closing one
    node = plan["nodes"]["gpu-node-017"]
    assert node["profile"] == "dgx-h100" and node["budget"] == 1800
    tests = {t["name"]: t for t in node["tests"]}
    assert tests["ib_write_bw"]["hcas"] == ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10",
                                            "mlx5_11"]
    assert tests["allreduce"]["floors"] == {"allreduce": 460.0}
    # What the gate does with an entry: its batch script.
    assert "--container-image=registry.example.org#hpc/acceptance:2026.11" in job_script(tests["dcgm"],
                                                                                          ["gpu-node-017"])


def test_allreduce_multi_holds_the_profiles_cpus_and_an_h100_nodes_script_is_the_one_rank_per_gpu_form():
    valid = resolve(load_cluster(PROD))
    [profile] = [h.profile for h in valid.hardware if h.name == "dgx-h100"]
    [multi] = [dict(t) for t in valid.admission["gpu-node-017"].tests if t["name"] == "allreduce_multi"]
    assert multi["cpus"] == profile.sockets * profile.cores_per_socket * profile.threads_per_core
    nodes = ["gpu-node-017", "gpu-node-018"]
    # Byte for byte the script of the entry without its CPUs, the form every entry had before they were given.
    without = {k: v for k, v in multi.items() if k != "cpus"}
    assert job_script(multi, nodes) == job_script(without, nodes)
    assert "--ntasks-per-node=8 --gpus-per-task=1" in job_script(multi, nodes)


def test_a_profile_with_fewer_cpus_than_gpus_gets_the_overcommitted_multi_node_script():
    spec = Admission(programs=Programs(bin_dir="/opt/t"), tests=("allreduce", "allreduce_multi"))
    profile = gpu_profile(cores_per_socket=1, admission=spec)   # 2 sockets of 1 core: 2 CPUs, 4 GPUs
    valid = resolve(small_cluster(profiles=(profile,)))
    [multi] = [t for t in valid.admission["gpu01"].tests if t["name"] == "allreduce_multi"]
    assert multi["cpus"] == 2
    assert "srun --nodes=2 --ntasks=8 --overcommit --gpus-per-node=4 " in job_script(multi, ["gpu01", "gpu02"])


def test_the_same_inventory_gives_the_same_bytes_in_node_name_order():
    profile = gpu_profile(admission=Admission(programs=Programs(bin_dir="/opt/t"), tests=("dcgm",)))
    first = admission.render(resolve(small_cluster(profiles=(profile,))))
    again = admission.render(resolve(small_cluster(profiles=(profile,))))
    assert first == again
    assert list(json.loads(first)["nodes"]) == ["gpu01", "gpu02", "gpu03", "gpu04"]


def test_a_cluster_without_admission_has_no_file():
    valid = resolve(small_cluster())
    assert admission.render(valid) is None
    assert admission.FILE not in render_all(valid)
