"""The pinned stack and NCCL in the inventory: what each GPU profile's nodes get, and every mismatch an admin can
write refused at its line (a fabric manager that is not the driver's version, one on a profile without NVSwitches,
Slurm's packages of another release, an NCCL HCA the profile does not have)."""

from __future__ import annotations

import pytest
from clusters import gpu_profile, only_problem, problems, small_cluster

from clusterforge.model import (
    AptRepository,
    Artifact,
    Fabric,
    GpuStack,
    Leaf,
    Nccl,
    Nodes,
    Partition,
    Profile,
    Rail,
    Stack,
    resolve,
)
from clusterforge.model.stack import parts, upstream

DRIVER = "550.163.01-1"
KEY = Artifact(source="/srv/keys/nvidia.gpg", sha256="a" * 64)


def nvswitch_cluster(stack: GpuStack, **profile: object) -> object:
    return small_cluster(profiles=(gpu_profile(nvswitch=True, **profile),), stack=Stack(gpu=stack))


def test_without_a_stack_nothing_is_pinned_or_held():
    assert resolve(small_cluster()).stack is None


def test_the_clusters_gpu_stack_goes_to_every_gpu_profile_and_a_profiles_own_replaces_it():
    own = GpuStack(driver="570.133.20-1")
    cpu = Profile("cpu", sockets=1, cores_per_socket=4, real_memory=1000)
    valid = resolve(small_cluster(
        profiles=(gpu_profile(), gpu_profile().model_copy(update={"name": "gpu-b", "gpu_stack": own}), cpu),
        nodes=(Nodes("gpu[01-02]", address="10.9.1.[1-2]", profile="gpu", leaf="leaf1"),
               Nodes("gpu[03-04]", address="10.9.1.[3-4]", profile="gpu-b", leaf="leaf1"),
               Nodes("cpu01", address="10.9.1.9", profile="cpu", leaf="leaf1")),
        partitions=(Partition("batch", profiles=("gpu", "gpu-b", "cpu"), default=True),),
        stack=Stack(slurm="22.05.8-4+deb12u3", gpu=(shared := GpuStack(driver=DRIVER, persistenced=DRIVER))),
    ))
    assert valid.stack is not None and valid.stack.slurm == "22.05.8-4+deb12u3"
    assert dict(valid.stack.gpu) == {"gpu": shared, "gpu-b": own}  # the same entries: none for the CPU profile


def test_each_part_is_its_packages_at_one_version_in_the_order_their_units_start():
    stack = GpuStack(driver=DRIVER, fabric_manager=DRIVER, persistenced=DRIVER, dcgm="1:3.3.9",
                     container_toolkit="1.17.4-1")
    assert [(p.name, p.packages, p.version, p.unit, p.pins) for p in parts(stack)] == [
        ("driver", ("cuda-drivers-550",), DRIVER, None, ("/.*/",)),
        ("persistenced", ("nvidia-persistenced",), DRIVER, "nvidia-persistenced.service", ("nvidia-persistenced",)),
        ("fabric manager", ("nvidia-fabricmanager-550",), DRIVER, "nvidia-fabricmanager.service",
         ("nvidia-fabricmanager-550",)),
        ("DCGM", ("datacenter-gpu-manager",), "1:3.3.9", "nvidia-dcgm.service", ("datacenter-gpu-manager*",)),
        ("container toolkit", ("nvidia-container-toolkit", "libnvidia-container-tools", "libnvidia-container1"),
         "1.17.4-1", None, ("nvidia-container-toolkit*", "libnvidia-container*")),
    ]
    four = GpuStack(driver=DRIVER, dcgm="1:4.5.2-1", dcgm_exporter="4.8.2-1")
    assert [(p.name, p.packages, p.version, p.unit, p.pins) for p in parts(four)][1:] == [
        ("DCGM", ("datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-proprietary"), "1:4.5.2-1",
         "nvidia-dcgm.service", ("datacenter-gpu-manager-4-*",)),
        ("DCGM exporter", ("datacenter-gpu-manager-exporter",), "4.8.2-1", "nvidia-dcgm-exporter.service",
         ("datacenter-gpu-manager-exporter",)),
    ]
    named = GpuStack(driver=DRIVER, driver_packages=("nvidia-open-550", "cuda-drivers-550"))
    assert parts(named)[0].packages == ("nvidia-open-550", "cuda-drivers-550")


@pytest.mark.parametrize(("version", "plain"), [("550.163.01-1", "550.163.01"), ("1:3.3.9", "3.3.9"),
                                                ("1:3.3.9-2", "3.3.9"), ("22.05.8-4+deb12u3", "22.05.8")])
def test_upstream_drops_the_epoch_and_the_debian_revision(version, plain):
    assert upstream(version) == plain


def test_a_fabric_manager_that_is_not_the_drivers_version_is_refused_at_its_line():
    problem = only_problem(nvswitch_cluster(GpuStack(driver=DRIVER, fabric_manager="550.144.03-1")))
    assert "stack.gpu.fabric_manager" in problem
    assert "'550.144.03-1' is not the driver's version '550.163.01-1'" in problem
    assert "test_stack.py" in problem


def test_the_same_upstream_version_with_another_debian_revision_is_the_drivers_version():
    assert resolve(nvswitch_cluster(GpuStack(driver=DRIVER, fabric_manager="550.163.01-2"))).stack is not None


def test_an_nvswitch_profile_needs_a_fabric_manager_and_one_without_nvswitches_may_not_have_one():
    missing = only_problem(nvswitch_cluster(GpuStack(driver=DRIVER)))
    assert "profile gpu has NVSwitches (nvswitch=True)" in missing and "fabric_manager='550.163.01-1'" in missing
    extra = only_problem(small_cluster(stack=Stack(gpu=GpuStack(driver=DRIVER, fabric_manager=DRIVER))))
    assert "profile gpu has no NVSwitches: nvidia-fabricmanager would fail to start" in extra


def test_a_gpu_stack_on_a_profile_without_gpus_and_one_no_profile_uses_are_refused():
    cpu = Profile("cpu", sockets=1, cores_per_socket=4, real_memory=1000, gpu_stack=GpuStack(driver=DRIVER))
    found = problems(small_cluster(profiles=(cpu,), nodes=(Nodes("n1", address="10.9.1.1", profile="cpu",
                                                                  leaf="leaf1"),),
                                   partitions=(Partition("batch", profiles=("cpu",), default=True),),
                                   stack=Stack(gpu=GpuStack(driver=DRIVER))))
    assert any("profiles[0].gpu_stack" in p and "profile cpu has no GPUs" in p for p in found)
    assert any(p.startswith("stack.gpu") and "no profile uses it" in p for p in found)
    assert len(found) == 2


def test_slurms_packages_of_another_release_and_versions_that_are_not_debians_are_refused():
    found = problems(small_cluster(stack=Stack(slurm="24.11.6-1", gpu=GpuStack(driver="r550", dcgm="latest"))))
    assert any("stack.slurm" in p and "'24.11.6-1' is Slurm 24.11, but the cluster runs 22.05" in p for p in found)
    assert any("stack.gpu.driver" in p and "'r550' is not a Debian package version" in p for p in found)
    assert any("stack.gpu.dcgm" in p and "'latest' is not a Debian package version" in p for p in found)
    assert len(found) == 3


def test_the_repository_is_http_and_its_key_pinned_and_absolute():
    repo = AptRepository(url="ftp://mirror/nvidia", suite="/", key=Artifact(source="nvidia.gpg", sha256="xyz"))
    found = problems(small_cluster(stack=Stack(repository=repo)))
    assert any("stack.repository.url" in p and "is not an http(s) URL" in p for p in found)
    assert any("stack.repository.key.source" in p and "give an absolute path or a URL" in p for p in found)
    assert any("stack.repository.key.sha256" in p and "is not a SHA-256" in p for p in found)
    assert len(found) == 3
    good = AptRepository(url="https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64",
                         suite="/", key=KEY)
    assert resolve(small_cluster(stack=Stack(repository=good))).stack.repository == good


def test_nccls_hcas_must_be_the_profiles_own_whether_declared_on_the_profile_or_by_the_rails():
    nccl = Nccl(ib_hca=("mlx5_0:1", "mlx5_3:1"), socket_ifname="=ib0")
    assert resolve(small_cluster(profiles=(gpu_profile(hcas=("mlx5_0", "mlx5_1", "mlx5_3"), nccl=nccl),)))
    wrong = only_problem(small_cluster(profiles=(gpu_profile(hcas=("mlx5_0", "mlx5_1"), nccl=nccl),)))
    assert "profiles[0].nccl.ib_hca" in wrong and "'mlx5_3' is not one of profile gpu's HCAs (mlx5_0, mlx5_1)" in wrong
    none = only_problem(small_cluster(profiles=(gpu_profile(nccl=nccl),)))
    assert "declares no HCAs to check 'mlx5_0:1' against" in none
    rails = Fabric(rail_optimized=True, leaves=(Leaf("r0", nodes="gpu[01-04]"), Leaf("r3", nodes="gpu[01-04]")),
                   rails=(Rail("rail0", hca="mlx5_0", leaves="r0"), Rail("rail3", hca="mlx5_3", leaves="r3")))
    cluster = small_cluster(profiles=(gpu_profile(nccl=nccl),), fabric=rails,
                            nodes=(Nodes("gpu[01-04]", address="10.9.1.[1-4]", profile="gpu"),))
    assert resolve(cluster).stack is None  # NCCL is not a pinned stack


def test_nccl_values_that_would_not_reach_nccl_as_written_are_refused():
    nccl = Nccl(ib_hca=("mlx5_0:0", "mlx5_0:1"), socket_ifname="ib0 eth0", ib_gid_index=300,
                extra={"NCCL_IB_HCA": "mlx5", "nccl_debug": "INFO", "NCCL_DEBUG": "$HOME"})
    found = problems(small_cluster(profiles=(gpu_profile(hcas=("mlx5_0",), nccl=nccl),)))
    for expected in ("'mlx5_0:0': the port after ':' is a number from 1", "an HCA is named twice",
                     "'ib0 eth0' is not a list of interface names", "300: a GID index is 0 to 255",
                     "NCCL_IB_HCA is Nccl(ib_hca=...)", "'nccl_debug' is not an NCCL variable",
                     "'$HOME': one word without quotes"):
        assert any(expected in p for p in found), (expected, found)
    assert len(found) == 7


def test_nccl_on_a_profile_without_gpus_is_refused():
    cpu = Profile("cpu", sockets=1, cores_per_socket=4, real_memory=1000, nccl=Nccl(socket_ifname="=ib0"))
    problem = only_problem(small_cluster(profiles=(gpu_profile(), cpu)))
    assert "profiles[1].nccl" in problem and "profile cpu has no GPUs" in problem


@pytest.mark.parametrize(("fields", "message"), [
    ({"dcgm": "1:5.0.1-1"}, "stack.gpu.dcgm: '1:5.0.1-1': clusterforge installs DCGM 3"),
    ({"dcgm_exporter": "4.8.2-1"}, "stack.gpu.dcgm_exporter: the exporter reads DCGM's host engine"),
    ({"dcgm": "1:3.3.9", "dcgm_exporter": "4.8.2-1"},
     "stack.gpu.dcgm_exporter: exporter '4.8.2-1' loads libdcgm.so.4, which DCGM '1:3.3.9' does not have"),
    ({"dcgm": "1:4.5.2-1", "dcgm_exporter": "3.3.9-3.6.1"},
     "stack.gpu.dcgm_exporter: '3.3.9-3.6.1': clusterforge installs DCGM exporter 4"),
    ({"dcgm": "1:4.5.2-1", "dcgm_exporter": "latest"}, "stack.gpu.dcgm_exporter: 'latest' is not a Debian package"),
])
def test_the_dcgm_exporter_needs_dcgm_4_beside_it(fields, message):
    cluster = small_cluster(stack=Stack(gpu=GpuStack(driver=DRIVER, **fields)))
    assert only_problem(cluster).startswith(message)


def test_dcgm_4_with_its_exporter_is_accepted():
    valid = resolve(small_cluster(stack=Stack(gpu=GpuStack(driver=DRIVER, dcgm="1:4.5.2-1",
                                                           dcgm_exporter="4.8.2-1"))))
    assert valid.stack is not None


def test_a_persistenced_of_another_driver_and_a_driver_too_old_for_h100_are_refused():
    stack = GpuStack(driver="520.61.05-1", persistenced="550.163.01-1")
    found = problems(small_cluster(profiles=(gpu_profile(),), stack=Stack(gpu=stack)))
    assert any(p.startswith("stack.gpu.persistenced: '550.163.01-1' is not the driver's version '520.61.05-1'")
               for p in found), found
    assert any(p.startswith("stack.gpu.driver: driver branch 520 is older than the first that drives profile gpu's "
                            "h100 (R525)") for p in found), found
    assert len(found) == 2
    resolve(small_cluster(profiles=(gpu_profile(),), stack=Stack(gpu=GpuStack(driver="525.60.13-1",
                                                                               persistenced="525.60.13-1"))))
