"""Rules and renders for containers: every artifact pinned by a real sha256 (missing or malformed: an inventory
error naming the line), one way to get Enroot, per-user paths, Enroot's data on the profile's local disk, the
plugstack line naming Pyxis built for the cluster's Slurm release, the AppArmor profile Enroot needs."""

from __future__ import annotations

import pytest
from clusters import gpu_profile, only_problem, problems, small_cluster

from clusterforge.errors import InventoryError
from clusterforge.model import Artifact, Containers, Enroot, Pyxis, resolve
from clusterforge.render import containers as render
from clusterforge.render import slurm_files, slurmd_dropin
from clusterforge.versions import v

SHA = "a" * 64


def containers(**enroot_fields) -> Containers:
    fields = {"version": "4.1.2", "package": Artifact(source="https://example.org/enroot_4.1.2-1_amd64.deb",
                                                      sha256=SHA)}
    fields.update(enroot_fields)
    return Containers(enroot=Enroot(**fields),
                      pyxis=Pyxis(version="0.24.0", source=Artifact(source="/srv/artifacts/pyxis.tar.gz", sha256=SHA)))


def test_a_missing_sha256_is_refused_where_the_artifact_is_written():
    with pytest.raises(InventoryError) as raised:
        Artifact(source="https://example.org/enroot.deb")
    assert "Artifact.sha256: Field required" in str(raised.value)
    assert "test_containers.py" in str(raised.value)


@pytest.mark.parametrize("digest", ["abc", "g" * 64, SHA + "a"])
def test_a_malformed_sha256_says_how_to_pin_one(digest):
    cluster = small_cluster(containers=containers(package=Artifact(source="https://example.org/e.deb", sha256=digest)))
    problem = only_problem(cluster)
    assert "containers.enroot.package.sha256" in problem and "sha256sum e.deb" in problem
    assert "test_containers.py" in problem


def test_enroot_comes_from_exactly_one_of_package_or_source():
    both = containers(source=Artifact(source="/srv/enroot.tar.gz", sha256=SHA))
    assert "exactly one of package=" in only_problem(small_cluster(containers=both))
    neither = containers(package=None)
    assert "exactly one of package=" in only_problem(small_cluster(containers=neither))


def test_a_relative_artifact_needs_the_artifact_directory():
    cluster = small_cluster(containers=containers(package=Artifact(source="enroot.deb", sha256=SHA)))
    assert "Containers(artifact_dir=...)" in only_problem(cluster)


@pytest.mark.parametrize(("field", "path", "says"), [
    ("runtime_path", "/run/enroot", "same directory for every user"),
    ("data_path", "/tmp/enroot-data", "same directory for every user"),
    ("data_path", "/tmp/$(id -u)/data", "only its last part may depend on the user"),
    ("cache_path", "relative/group-$(id -g)", "not an absolute path"),
])
def test_paths_every_user_shares_are_refused(field, path, says):
    problem = only_problem(small_cluster(containers=containers(**{field: path})))
    assert f"containers.enroot.{field}" in problem and says in problem


def test_old_releases_and_bad_versions_are_refused():
    found = problems(small_cluster(containers=containers(version="2.0")))
    assert any("enroot 2.0 is older" in p for p in found)


def test_enroot_keeps_its_data_on_the_profiles_local_disk():
    valid = resolve(small_cluster(profiles=(gpu_profile(local_disk="/raid"),), containers=containers()))
    paths = valid.containers.paths["gpu"]
    assert paths.data == "/raid/enroot/data/user-$(id -u)" and paths.cache == "/raid/enroot/cache/group-$(id -g)"
    assert paths.shared == ("/raid/enroot/cache", "/raid/enroot/data", "/raid/enroot/tmp", "/run/enroot")
    conf = render.enroot_conf(valid, paths)
    assert "ENROOT_DATA_PATH /raid/enroot/data/user-$(id -u)\n" in conf and "ENROOT_RESTRICT_DEV y\n" in conf
    assert "d /run/enroot 1777 root root -\n" in render.enroot_tmpfiles(valid, paths)
    machine = next(m for m in valid.machines if m.node is not None)
    assert "RequiresMountsFor=/raid\n" in slurmd_dropin.render(valid, machine)


def test_without_a_local_disk_enroot_uses_tmp_and_var_lib():
    valid = resolve(small_cluster(containers=containers()))
    paths = valid.containers.paths["gpu"]
    assert (paths.data, paths.temp) == ("/tmp/enroot-data/user-$(id -u)", "/tmp")
    assert paths.shared == ("/run/enroot", "/tmp/enroot-data", "/var/lib/enroot/cache")


@pytest.mark.parametrize("release", ["22.05", "24.11"])
def test_the_plugstack_line_names_pyxis_built_for_the_clusters_release(release):
    valid = resolve(small_cluster(containers=containers()), v(release))
    line = slurm_files(valid)["plugstack.conf.d/pyxis.conf"].splitlines()[-1]
    assert line == (f"required /usr/local/lib/clusterforge/pyxis-0.24.0-slurm-{release}/spank_pyxis.so "
                    "runtime_path=/run/pyxis execute_entrypoint=0 container_scope=job sbatch_support=1")


def test_the_apparmor_profile_lets_enroot_nsenter_make_a_user_namespace():
    valid = resolve(small_cluster(containers=containers()))
    assert render.enroot_apparmor(valid) == (
        "# generated by clusterforge — do not edit\n"
        "# cluster t, Slurm 22.05: change the inventory and render again.\n"
        "abi <abi/4.0>,\n"
        "include <tunables/global>\n"
        "\n"
        "/usr/bin/enroot-nsenter flags=(unconfined) {\n"
        "    allow userns create,\n"
        "    include if exists <local/enroot>\n"
        "}\n")


def test_a_cluster_without_containers_has_no_plugstack_file():
    assert slurm_files(resolve(small_cluster()))["plugstack.conf.d/pyxis.conf"] is None
