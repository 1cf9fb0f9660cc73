"""A GPU type's family, found one way (gpu_names.family) for validation, the admission floors and the names a
message offers; and Slurm's own match of a type to a GPU's name, which the health check and `check` use."""

from __future__ import annotations

import pytest

from clusterforge.health import gpu_names


@pytest.mark.parametrize("name, family", [
    ("nvidia_h100_80gb_hbm3", "h100"), ("H100", "h100"), ("h100_sxm5", "h100"), ("NVIDIA H100 80GB HBM3", "h100"),
    ("H100-SXM5-80GB", "h100"), ("h100nvl", "h100"), ("NVIDIA H200", "h200"), ("nvidia_h200_nvl", "h200"),
    ("h800", "h800"),
    # Grace Hopper is no H200 (no H200's floors), an A100 no family clusterforge knows, h1000 no H100.
    ("NVIDIA GH200 480GB", None), ("gh200", None), ("a100", None), ("h1000", None), ("", None)])
def test_a_type_and_a_gpus_name_are_judged_by_one_family(name, family):
    assert gpu_names.family(name) == family


def test_the_types_that_work_for_a_family_are_its_own_names_only():
    assert gpu_names.working_types("h200") == ["h200", "nvidia_h200", "nvidia_h200_nvl"]
    assert gpu_names.working_types("a100") == []


def test_slurm_matches_a_type_as_a_part_of_the_gpus_name_whatever_its_family():
    assert gpu_names.matches("nvidia_h100_80gb_hbm3", "NVIDIA H100 80GB HBM3")
    assert gpu_names.matches("H100", "NVIDIA H100 80GB HBM3")
    assert not gpu_names.matches("h100_sxm5", "NVIDIA H100 80GB HBM3")  # an H100, but Slurm would not match it
