"""Rules for hardware: profiles, CPUs and memory, GPUs and their sockets."""

from __future__ import annotations

import pytest
from clusters import gpu_profile, only_problem, problems, small_cluster

from clusterforge.errors import InventoryError
from clusterforge.model import Gpus, Profile, resolve


def test_gpu_count_must_match_device_files():
    profile = gpu_profile(gpus=Gpus(type="h100", count=4, files="/dev/nvidia[0-2]"))
    assert only_problem(small_cluster(profiles=(profile,))).startswith(
        "profiles[gpu].gpus.files: /dev/nvidia[0-2] names 3 device files but count is 4")


def test_typed_gpus_need_files_unless_autodetected():
    profile = gpu_profile(gpus=Gpus(type="h100", count=4))
    assert only_problem(small_cluster(profiles=(profile,))).startswith(
        "profiles[gpu].gpus.files: missing: typed GPUs need their device files unless autodetect is on")
    resolve(small_cluster(profiles=(gpu_profile(gpus=Gpus(type="h100", count=4, autodetect="nvml")),)))


def test_gpu_on_a_socket_the_profile_lacks():
    gpus = Gpus(type="h100", count=4, files="/dev/nvidia[0-3]", sockets={0: [0, 1], 2: [2, 3]})
    assert only_problem(small_cluster(profiles=(gpu_profile(gpus=gpus),))).startswith(
        "profiles[gpu].gpus.sockets: socket 2 does not exist: the profile has 2 sockets (0-1)")


def test_gpu_index_outside_the_profile_and_gpu_on_two_sockets():
    gpus = Gpus(type="h100", count=4, files="/dev/nvidia[0-3]", sockets={0: [0, 1, 7], 1: [1, 2, 3]})
    found = problems(small_cluster(profiles=(gpu_profile(gpus=gpus),)))
    assert found[0].startswith("profiles[gpu].gpus.sockets: GPU 7 on socket 0 does not exist: the profile has 4 GPUs")
    assert found[1].startswith("profiles[gpu].gpus.sockets: GPU 1 is placed on socket 0 and on socket 1")


def test_autodetect_nvidia_needs_24_11():
    profile = gpu_profile(gpus=Gpus(type="h100", count=4, files="/dev/nvidia[0-3]", autodetect="nvidia"))
    assert only_problem(small_cluster(profiles=(profile,))).startswith(
        "profiles[gpu].gpus.autodetect: AutoDetect=nvidia needs Slurm 24.11 or newer")
    resolve(small_cluster(profiles=(profile,), slurm_version="24.11"))


@pytest.mark.parametrize("field", ["sockets", "cores_per_socket", "threads_per_core", "real_memory"])
def test_non_positive_cores_and_memory(field):
    profile = gpu_profile(**{field: 0})
    found = problems(small_cluster(profiles=(profile,)))
    assert f"profiles[gpu].{field}: must be positive, not 0" in found[0]


def test_a_gpu_count_that_disagrees_with_the_device_files_is_one_problem():
    # The socket map is written for the eight files: GPUs 4-7 "not existing" follows from the count, so only the
    # count is reported.
    gpus = Gpus(type="h100", count=4, files="/dev/nvidia[0-7]", sockets={0: [0, 1, 2, 3], 1: [4, 5, 6, 7]})
    assert only_problem(small_cluster(profiles=(gpu_profile(gpus=gpus),))).startswith(
        "profiles[gpu].gpus.files: /dev/nvidia[0-7] names 8 device files but count is 4")


def test_gpus_missing_from_the_profile_are_named_together():
    gpus = Gpus(type="h100", count=4, sockets={0: [0, 1], 1: [2, 3, 4, 5, 6]}, autodetect="nvml")
    assert only_problem(small_cluster(profiles=(gpu_profile(gpus=gpus),))).startswith(
        "profiles[gpu].gpus.sockets: GPUs 4-6 on socket 1 do not exist: the profile has 4 GPUs (0-3)")


def test_a_misspelt_field_is_one_problem_that_names_the_field_meant():
    with pytest.raises(InventoryError) as raised:
        Profile("x", sockets=1, cores_per_sockt=2, real_memory=1000)
    (problem,) = raised.value.problems
    assert str(problem).startswith("Profile.cores_per_sockt: unknown field of Profile; did you mean "
                                   "cores_per_socket? (tests/model/test_hardware.py:")


def test_each_profile_knows_its_gpu_files_by_socket():
    valid = resolve(small_cluster())
    (hardware,) = valid.hardware
    assert hardware.device_files == ("/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3")
    assert [(g.socket, g.files, g.cores) for g in hardware.gpu_groups] == [
        (0, ("/dev/nvidia0", "/dev/nvidia1"), "0-3"), (1, ("/dev/nvidia2", "/dev/nvidia3"), "4-7")]
    assert valid.nodes[0].device_files is hardware.device_files  # one tuple, shared, not expanded per node


@pytest.mark.parametrize("type_", ["h100", "H100", "nvidia_h100_80gb_hbm3", "h100_80gb", "h100_nvl", "h200",
                                   "gh200", "a100"])
def test_a_gpu_type_slurm_matches_to_the_gpus_name_is_taken(type_):
    gpus = Gpus(type=type_, count=4, files="/dev/nvidia[0-3]")
    resolve(small_cluster(profiles=(gpu_profile(gpus=gpus),)))


def test_an_h100_type_that_matches_no_h100_name_as_slurm_matches_is_refused_with_the_names_that_work():
    gpus = Gpus(type="H100-SXM5-80GB", count=4, files="/dev/nvidia[0-3]")
    problem = only_problem(small_cluster(profiles=(gpu_profile(gpus=gpus),)))
    assert problem.startswith("profiles[gpu].gpus.type: 'H100-SXM5-80GB' matches no H100 the way Slurm matches")
    assert "types that work: h100, nvidia_h100_80gb_hbm3, nvidia_h100_pcie, nvidia_h100_nvl" in problem
