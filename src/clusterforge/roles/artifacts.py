"""Artifacts (Enroot's package or source, Pyxis' source, a repository key, a site directory's CA certificate):
fetched once per run on the machine that runs the deploy, checked against the sha256 the inventory pins, and only
then handed to the roles, which upload them over SSH. Every artifact is checked before any host is touched; a
mismatch stops the run naming the artifact, the digest pinned and the digest found.

Where an artifact comes from (``location``): a container artifact's URL is read from the site's mirror
(``Containers.artifact_dir``) by its file name when there is one; otherwise a URL is downloaded once into
``$XDG_CACHE_HOME/clusterforge/artifacts/<sha256>/`` (kept only when it matches), so a later run reads it from there;
a path is read where it is (relative to ``Containers.artifact_dir``). A file missing from the mirror is named with
the URL and the digest to fetch.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from ..errors import DeployError, for_pyinfra
from ..model import Artifact, ValidCluster
from ..engine.run import DeployRun

DOWNLOAD_TIMEOUT_S = 60  # a connection silent this long fails the download


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "clusterforge" / "artifacts"


def container_artifacts(valid: ValidCluster) -> list[Artifact]:
    """Enroot's and Pyxis' files and the NVIDIA repository's key: what a site's mirror (artifact_dir) holds."""
    if valid.containers is None:
        return []
    spec = valid.containers.spec
    repo = spec.nvidia_repository
    return [a for a in (spec.enroot.package, spec.enroot.source, spec.pyxis.source, repo.key if repo else None)
            if a is not None]


def artifacts(valid: ValidCluster) -> list[Artifact]:
    found = container_artifacts(valid)
    if valid.stack is not None and valid.stack.repository is not None and valid.stack.gpu:
        found.append(valid.stack.repository.key)
    if valid.identity is not None and valid.identity.directory is not None:
        found.append(valid.identity.directory.ca_certificate)  # the site directory's CA (roles/directory.py)
    return found


def prefetch(run: DeployRun) -> None:
    """Fetch and check every artifact of the cluster, once per run, before any operation exists."""
    for artifact in artifacts(run.valid):
        content(run, artifact)


def content(run: DeployRun, artifact: Artifact) -> bytes:
    """The artifact's bytes, checked."""
    valid = run.valid
    directory = valid.containers.spec.artifact_dir if valid.containers else None
    mirrored = any(artifact is a for a in container_artifacts(valid))
    return run.once(("artifact", artifact.source, artifact.sha256),
                    lambda: _fetch(artifact, location(artifact, directory, mirrored)))


def location(artifact: Artifact, directory: str | None, mirrored: bool) -> str | Path:
    """Where this run takes the artifact from: the URL to download (a str), or the file to read (a Path). A mirrored
    artifact's URL is its file in ``directory`` when there is one; a relative path is always found there."""
    url = artifact.url
    if url is not None:
        return Path(directory) / artifact.filename if mirrored and directory is not None else url
    path = Path(artifact.source.removeprefix("file://"))
    return Path(directory) / path if not path.is_absolute() and directory is not None else path


def _fetch(artifact: Artifact, where: str | Path) -> bytes:
    if isinstance(where, str):
        return _download(artifact)
    try:
        data = where.read_bytes()
    except FileNotFoundError:
        raise for_pyinfra(DeployError(missing(artifact, where))) from None
    except OSError as error:
        raise for_pyinfra(DeployError(f"artifact {artifact.filename}: cannot read {where}: "
                                      f"{error.strerror or error}")) from None
    _check(artifact, data, str(where))
    return data


def missing(artifact: Artifact, path: Path) -> str:
    """What to fetch, and where to put it, for an artifact whose file is not there."""
    digest = artifact.sha256.lower()
    if artifact.url is not None:
        return (f"artifact {artifact.filename}: {path} does not exist: download {artifact.url} into {path.parent} as "
                f"{artifact.filename} and check that its sha256 is {digest} (or give no mirror directory: the deploy "
                "then downloads it)")
    return f"artifact {artifact.filename}: {path} does not exist: put the file there (its sha256 is {digest})"


def _check(artifact: Artifact, data: bytes, where: str) -> None:
    actual = hashlib.sha256(data).hexdigest()
    if actual != artifact.sha256.lower():
        raise for_pyinfra(DeployError(
            f"artifact {artifact.filename} ({where}) has sha256 {actual}, but the inventory pins "
            f"{artifact.sha256.lower()}: nothing was deployed. If the new file is the one you want, pin its digest"))


def _download(artifact: Artifact) -> bytes:
    import urllib.error
    import urllib.request

    kept = cache_dir() / artifact.sha256.lower() / artifact.filename
    if kept.is_file():
        data = kept.read_bytes()
        if hashlib.sha256(data).hexdigest() == artifact.sha256.lower():
            return data
    try:
        with urllib.request.urlopen(artifact.source, timeout=DOWNLOAD_TIMEOUT_S) as response:  # noqa: S310
            data = response.read()
    except (urllib.error.URLError, OSError) as error:
        raise for_pyinfra(DeployError(f"artifact {artifact.filename}: cannot download {artifact.source}: "
                                      f"{getattr(error, 'reason', error)}")) from None
    _check(artifact, data, artifact.source)
    kept.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=kept.parent, delete=False) as handle:
        handle.write(data)
    os.replace(handle.name, kept)
    return data
