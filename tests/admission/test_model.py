"""The inventory's admission entry: floors default per GPU type and are overridable, every mistake is named where
the inventory wrote it, and the resolve stage gives each node of the profile its plan once, floors filled in."""

from __future__ import annotations

import pytest
from clusters import gpu_profile, only_problem, problems, small_cluster

from clusterforge.errors import InventoryError
from clusterforge.model import Admission, Artifact, Containers, Enroot, Floors, Gpus, Programs, Pyxis, resolve
from clusterforge.model.base import deferring

BIN = "/opt/acceptance/bin"


def admitted(**fields) -> Admission:
    fields.setdefault("programs", Programs(bin_dir=BIN))
    return Admission(**fields)


def cluster_with(admission: Admission | None, **profile_fields):
    profile_fields.setdefault("hcas", ("mlx5_0", "mlx5_1"))
    return small_cluster(profiles=(gpu_profile(admission=admission, **profile_fields),))


def test_an_h100_profile_gets_the_default_floors_and_every_node_its_plan():
    valid = resolve(cluster_with(admitted()))
    assert sorted(valid.admission) == ["gpu01", "gpu02", "gpu03", "gpu04"]
    plan = valid.admission["gpu03"]
    assert plan is valid.admission["gpu01"]  # one plan per profile
    assert dict(plan.floors) == {"host_to_device": 48.0, "device_to_device": 335.0, "allreduce": 460.0,
                                 "ib_write_bw": 380.0, "allreduce_multi": 350.0}
    assert plan.hcas == ("mlx5_0", "mlx5_1")
    assert [t["name"] for t in plan.tests] == ["dcgm", "nvbandwidth", "allreduce", "ib_write_bw", "allreduce_multi"]
    allreduce = plan.tests[2]
    assert allreduce["argv"] == [f"{BIN}/all_reduce_perf", "-b", "16G", "-e", "16G", "-g", "4"]
    assert allreduce["floors"] == {"allreduce": 460.0} and allreduce["unit"] == "GB/s"
    assert sum(t["timeout"] for t in plan.tests if t["name"] != "allreduce_multi") <= plan.budget == 1800


def test_h200_defaults_differ_and_a_floor_given_wins():
    h200 = Gpus(type="h200", count=4, files="/dev/nvidia[0-3]", sockets={0: [0, 1], 1: [2, 3]})
    plan = resolve(cluster_with(admitted(floors=Floors(ib_write_bw=370)), gpus=h200)).admission["gpu01"]
    assert plan.floors["allreduce"] == 431.0
    assert plan.floors["ib_write_bw"] == 370.0


def test_without_admission_no_node_has_a_plan():
    assert dict(resolve(cluster_with(None)).admission) == {}


def test_a_gpu_type_without_defaults_must_give_its_floors_naming_the_profile():
    a100 = Gpus(type="a100", count=4, files="/dev/nvidia[0-3]")
    problem = only_problem(cluster_with(admitted(tests=("allreduce", "nvbandwidth")), gpus=a100))
    assert problem.startswith("profiles[gpu].admission.floors: clusterforge has no default floors for GPU type "
                              "'a100' (only h100, h200): give Floors(allreduce=..., host_to_device=..., "
                              "device_to_device=...)")
    assert "test_model.py" in problem
    given = Floors(allreduce=200, host_to_device=20, device_to_device=200)
    plan = resolve(cluster_with(admitted(tests=("allreduce", "nvbandwidth"), floors=given), gpus=a100))
    assert plan.admission["gpu01"].floors["allreduce"] == 200.0


def test_dcgm_alone_needs_no_floor_on_any_gpu_type():
    a100 = Gpus(type="a100", count=4, files="/dev/nvidia[0-3]")
    assert resolve(cluster_with(admitted(tests=("dcgm",)), gpus=a100)).admission["gpu01"].floors == {}


def test_ib_write_bw_tests_the_hcas_nccl_uses_or_those_the_admission_names():
    from clusterforge.model import Nccl

    nccl = Nccl(ib_hca=("mlx5_0:1", "mlx5_3:1"))
    four = ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3")
    assert resolve(cluster_with(admitted(), hcas=four, nccl=nccl)).admission["gpu01"].hcas == ("mlx5_0", "mlx5_3")
    named = resolve(cluster_with(admitted(hcas=("mlx5_2",)), hcas=four, nccl=nccl))
    assert named.admission["gpu01"].tests[3]["hcas"] == ["mlx5_2"]
    problem = only_problem(cluster_with(admitted(hcas=("mlx5_9",)), hcas=four))
    assert problem.startswith("profiles[gpu].admission.hcas: mlx5_9: not among the profile's HCAs")


def test_ib_write_bw_needs_a_declared_hca():
    problem = only_problem(cluster_with(admitted(), hcas=()))
    assert problem.startswith("profiles[gpu].admission.tests: ib_write_bw runs once per HCA the profile declares")
    assert resolve(cluster_with(admitted(tests=("dcgm", "allreduce")), hcas=()))


def test_programs_come_from_exactly_one_place():
    for programs in (Programs(), Programs(bin_dir=BIN, image="nvcr.io#nvidia/pytorch:24.05-py3")):
        assert "give exactly one of image (run through Pyxis) or bin_dir" in only_problem(
            cluster_with(admitted(programs=programs)))


@pytest.mark.parametrize("bin_dir", ["opt/bin", "/opt/my bin", "/opt/$HOME"])
def test_bin_dir_is_an_absolute_plain_directory(bin_dir):
    problem = only_problem(cluster_with(admitted(programs=Programs(bin_dir=bin_dir))))
    assert problem.startswith(f"profiles[gpu].admission.programs.bin_dir: {bin_dir!r} is not an absolute directory")


def test_an_image_needs_pyxis():
    image = Programs(image="nvcr.io#nvidia/hpc-benchmarks:24.03")
    problem = only_problem(cluster_with(admitted(programs=image)))
    assert "runs through Pyxis, which this cluster does not have: give Cluster(containers=...)" in problem
    sha = "a" * 64
    containers = Containers(
        enroot=Enroot(version="4.1.2", package=Artifact(source="https://example.org/enroot_4.1.2-1_amd64.deb",
                                                          sha256=sha)),
        pyxis=Pyxis(version="0.24.0", source=Artifact(source="/srv/artifacts/pyxis.tar.gz", sha256=sha)))
    profile = gpu_profile(admission=admitted(programs=image), hcas=("mlx5_0",))
    plan = resolve(small_cluster(profiles=(profile,), containers=containers)).admission["gpu02"]
    assert plan.tests[0]["image"] == "nvcr.io#nvidia/hpc-benchmarks:24.03"
    assert plan.tests[0]["argv"] == ["dcgmi", "diag", "-r", "2", "-j"]


@pytest.mark.parametrize("level", [0, 5])
def test_a_dcgm_level_out_of_range_is_named_where_written(level):
    with pytest.raises(InventoryError) as raised:
        Admission(programs=Programs(bin_dir=BIN), dcgm_level=level)
    assert "Admission.dcgm_level" in str(raised.value) and "test_model.py" in str(raised.value)
    with deferring():
        found = problems(cluster_with(Admission(programs=Programs(bin_dir=BIN), dcgm_level=level)))
    assert [p for p in found if p.startswith(f"profiles[gpu].admission.dcgm_level = {level}:")], found


def test_a_budget_the_tests_cannot_fit_in_is_refused():
    problem = only_problem(cluster_with(admitted(dcgm_level=4)))
    assert problem.startswith("profiles[gpu].admission.budget: 1800 s is less than the 3900 s its tests take")
    assert resolve(cluster_with(admitted(dcgm_level=4, budget=3900)))


def test_no_test_or_a_test_twice_or_no_gpu():
    assert "no test: the gate would admit every node untested" in only_problem(cluster_with(admitted(tests=())))
    assert "allreduce is listed 2 times" in only_problem(cluster_with(admitted(tests=("allreduce", "allreduce"))))
    assert "the tests measure GPUs and this profile has none" in only_problem(cluster_with(admitted(), gpus=None))


def test_an_unknown_test_is_a_type_mistake():
    with pytest.raises(InventoryError) as raised:
        Admission(programs=Programs(bin_dir=BIN), tests=("hpl",))
    assert "Admission.tests.0" in str(raised.value)


def test_a_budget_whose_longest_test_no_partition_of_a_node_can_run_is_refused_naming_it():
    """Issue 46: with EnforcePartLimits=ALL sbatch refuses a job its partition's MaxTime cannot hold, and a node held
    for a test none of its partitions can run stays held. dcgm level 3's share of 2640 s is 2112 s: the gate's job
    asks 37 minutes where the node's only partition allows 30."""
    from clusterforge.model import Partition

    thirty = (Partition("batch", profiles=("gpu",), default=True, max_time="00:30:00"),)
    problem = only_problem(small_cluster(profiles=(gpu_profile(admission=admitted(dcgm_level=3, budget=2640),
                                                               hcas=("mlx5_0", "mlx5_1")),), partitions=thirty))
    assert problem.startswith(
        "profiles[gpu].admission.budget: the gate's dcgm job asks 37 min (its share of 2640 s, dcgm level 3, and a "
        "minute), more than the max_time of every partition of gpu[01-04]: batch (00:30:00); sbatch would refuse "
        "it there and the node stay held"), problem
    # A partition of theirs that lets it run: the gate sends its jobs there alone (gate/passes.py).
    long = (*thirty, Partition("long", profiles=("gpu",), max_time="1-00:00:00"))
    assert resolve(small_cluster(profiles=(gpu_profile(admission=admitted(dcgm_level=3, budget=2640),
                                                       hcas=("mlx5_0", "mlx5_1")),), partitions=long))
    # The same budget at level 2 fits in 30 minutes.
    assert resolve(small_cluster(profiles=(gpu_profile(admission=admitted(dcgm_level=2, budget=1500),
                                                       hcas=("mlx5_0", "mlx5_1")),), partitions=thirty))


def test_the_name_slurms_autodetection_gives_an_h100_gets_the_h100_floors():
    # Seen on the test cluster: this type validated and deployed, but with admission on it was refused for having
    # "no default floors (only h100, h200)". Every rule now finds a type's family one way (gpu_names.family).
    nvml = Gpus(type="nvidia_h100_80gb_hbm3", count=4, files="/dev/nvidia[0-3]", sockets={0: [0, 1], 1: [2, 3]})
    plan = resolve(cluster_with(admitted(), gpus=nvml)).admission["gpu01"]
    assert dict(plan.floors) == dict(resolve(cluster_with(admitted())).admission["gpu01"].floors)


def test_an_h100_type_slurm_cannot_match_is_refused_once_as_an_h100_not_again_for_its_floors():
    sxm5 = Gpus(type="h100_sxm5", count=4, files="/dev/nvidia[0-3]", sockets={0: [0, 1], 1: [2, 3]})
    problem = only_problem(cluster_with(admitted(), gpus=sxm5))
    assert problem.startswith("profiles[gpu].gpus.type: 'h100_sxm5' matches no H100 the way Slurm matches a type")


def test_the_models_test_names_and_floors_are_the_registrys():
    from clusterforge.admission import tests

    assert list(Floors.model_fields) == [floor.key for floor in tests.FLOORS]
    assert Admission.model_fields["tests"].default == tests.DEFAULT
    a100 = Gpus(type="a100", count=4, files="/dev/nvidia[0-3]")
    plan = resolve(cluster_with(admitted(tests=("dcgm_quick", "allreduce"), dcgm_level=3,
                                         floors=Floors(allreduce=200)), gpus=a100)).admission["gpu01"]
    assert [(t["name"], t["argv"][1:]) for t in plan.tests] == [
        ("dcgm_quick", ["diag", "-r", "1", "-j"]), ("allreduce", ["-b", "16G", "-e", "16G", "-g", "4"])]
    with pytest.raises(InventoryError, match="'allreduce_multi' or 'dcgm_quick'"):
        admitted(tests=("dcgm_quick", "hpl"))
