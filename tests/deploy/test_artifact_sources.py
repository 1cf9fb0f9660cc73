"""Where Enroot's and Pyxis' files come from (roles/artifacts.py): their release URLs, or a site's mirror directory
(Containers.artifact_dir) by file name when one is given; a file missing from the mirror stops the deploy before any
host is touched, naming the URL and the digest to fetch. No network: the URLs are resolved, never downloaded."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from deploy.fakedeploy import SimCluster

from clusterforge.errors import DeployError
from clusterforge.loader import load_cluster
from clusterforge.model import Artifact, resolve
from clusterforge.roles.artifacts import _fetch, container_artifacts, location

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "artifacts"  # this machine's mirror of the releases (no GitHub here)
PYXIS_URL = "https://github.com/NVIDIA/pyxis/archive/refs/tags/v0.24.0.tar.gz"
ENROOT_DEB_URL = "https://github.com/NVIDIA/enroot/releases/download/v4.1.2/enroot_4.1.2-1_amd64.deb"


def pyxis(sha256: str = "ab" * 32) -> Artifact:
    return Artifact(source=PYXIS_URL, name="pyxis-0.24.0.tar.gz", sha256=sha256)


def test_a_url_is_downloaded_without_a_mirror_and_read_from_the_mirror_by_its_file_name_with_one():
    assert location(pyxis(), None, mirrored=True) == PYXIS_URL
    assert location(pyxis(), "/srv/mirror", mirrored=True) == Path("/srv/mirror/pyxis-0.24.0.tar.gz")
    # The GPU stack's repository key is no container artifact: the mirror does not hold it.
    assert location(pyxis(), "/srv/mirror", mirrored=False) == PYXIS_URL
    assert location(Artifact(source=PYXIS_URL, sha256="ab" * 32), "/srv/mirror", mirrored=True) == \
        Path("/srv/mirror/v0.24.0.tar.gz")


def test_paths_are_read_where_they_are_a_relative_one_in_the_mirror():
    assert location(Artifact(source="pyxis.tar.gz", sha256="ab" * 32), "/srv/mirror", True) == \
        Path("/srv/mirror/pyxis.tar.gz")
    assert location(Artifact(source="file:///opt/p.tar.gz", sha256="ab" * 32), "/srv/mirror", True) == \
        Path("/opt/p.tar.gz")


def test_a_file_missing_from_the_mirror_names_the_url_and_the_digest_to_fetch(tmp_path):
    artifact = pyxis("AB" * 32)
    with pytest.raises(DeployError) as raised:
        _fetch(artifact, location(artifact, str(tmp_path), mirrored=True))
    assert str(raised.value) == (
        f"artifact pyxis-0.24.0.tar.gz: {tmp_path}/pyxis-0.24.0.tar.gz does not exist: download {PYXIS_URL} into "
        f"{tmp_path} as pyxis-0.24.0.tar.gz and check that its sha256 is {'ab' * 32} (or give no mirror directory: "
        "the deploy then downloads it)")


def test_the_example_takes_the_releases_by_default(monkeypatch):
    monkeypatch.delenv("CLUSTERFORGE_ARTIFACTS", raising=False)
    valid = resolve(load_cluster(REPO / "inventories" / "vagrant.py"))
    assert valid.containers is not None and valid.containers.spec.artifact_dir is None
    assert [location(a, None, True) for a in container_artifacts(valid)] == [ENROOT_DEB_URL, PYXIS_URL]


def test_the_example_with_a_mirror_reads_the_files_it_read_before_and_checks_them(monkeypatch):
    if not SHARED.is_dir():
        pytest.skip(f"no mirror at {SHARED}")
    monkeypatch.setenv("CLUSTERFORGE_ARTIFACTS", str(SHARED))
    valid = resolve(load_cluster(REPO / "inventories" / "vagrant.py"))
    found = container_artifacts(valid)
    # The same files, by the same names on the hosts, as when the example named them by their paths in the mirror.
    assert [a.filename for a in found] == ["enroot-4.1.2-with-submodules.tar.gz", "pyxis-0.24.0.tar.gz"]
    paths = [location(a, str(SHARED), True) for a in found]
    assert paths == [SHARED / "enroot-4.1.2-with-submodules.tar.gz", SHARED / "pyxis-0.24.0.tar.gz"]
    assert [_fetch(a, p) for a, p in zip(found, paths)] == [p.read_bytes() for p in paths]


def test_a_deploy_missing_a_mirrored_file_stops_before_any_host_is_touched(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "enroot_4.1.2-1_amd64.deb").write_bytes(b"enroot package")
    deb = hashlib.sha256(b"enroot package").hexdigest()
    extra = (f'containers=Containers(artifact_dir="{mirror}", enroot=Enroot(version="4.1.2", package=Artifact('
             f'source="{ENROOT_DEB_URL}", sha256="{deb}")), pyxis=Pyxis(version="0.24.0", source=Artifact('
             f'source="{PYXIS_URL}", name="pyxis-0.24.0.tar.gz", sha256="{"cd" * 32}")))')
    run = SimCluster(tmp_path / "sim", extra=extra).deploy()
    assert run.returncode != 0
    assert f"download {PYXIS_URL} into {mirror} as pyxis-0.24.0.tar.gz and check that its sha256 is {'cd' * 32}" \
        in run.output, run.output[-3000:]
    assert {h: s.events for h, s in run.sims.items() if s.events} == {}
