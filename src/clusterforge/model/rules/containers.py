"""Rules for containers: every artifact pinned by a real sha256, one way to get Enroot, paths Enroot can share
between users, releases Pyxis' options exist in."""

from __future__ import annotations

import posixpath
import re

from ..base import Entry
from ..containers import Artifact, Containers
from .check import Check
from .paths import WHAT, plain_path

SHA256 = re.compile(r"^[0-9a-f]{64}$")
VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")
# What Enroot expands per user (or group) in a path: its config is sourced by bash for each user.
PER_USER = ("$(id -u)", "$(id -un)", "${USER}", "$USER", "${UID}", "$UID")
PER_GROUP = ("$(id -g)", "$(id -gn)")
ENROOT_MIN, PYXIS_MIN = (3, 1), (0, 12)  # Pyxis' Depends; sbatch_support= exists from Pyxis 0.12


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def artifact(check: Check, where: str, found: Artifact, artifact_dir: str | None) -> None:
    if not SHA256.match(found.sha256.lower()):
        check.add(f"{where}.sha256", f"{found.sha256!r} is not a SHA-256 (64 hex digits): download "
                  f"{found.source} once and pin the output of `sha256sum {found.filename}`", found, "sha256")
    source = found.source
    if re.match(r"^[a-z][a-z0-9+.-]*://", source):
        if not source.startswith(("https://", "http://", "file://")):
            check.add(f"{where}.source", f"{source!r}: only https://, http:// and file:// are fetched", found,
                      "source")
    elif not source.startswith("/") and artifact_dir is None:
        check.add(f"{where}.source", f"{source!r} is a relative path: give Containers(artifact_dir=...) or an "
                  "absolute path", found, "source")
    if found.name is not None and (not found.name or "/" in found.name or found.name in (".", "..")):
        check.add(f"{where}.name", f"{found.name!r} is not a file name (no directory, not empty)", found, "name")


def _path(check: Check, where: str, path: str | None, entry: Entry, field: str, shared_by: tuple[str, ...]) -> None:
    if path is None:
        return
    plain = path
    for token in PER_USER + PER_GROUP:
        plain = plain.replace(token, "")
    if not plain_path(plain):
        check.add(where, f"{path!r} is not {WHAT} (and $(id -u), $(id -g))", entry, field)
        return
    if shared_by and not any(token in path for token in shared_by):
        # The first user to run a job would create it private to them, and every other user's jobs would fail.
        check.add(where, f"{path!r} is the same directory for every user: end it with one per user (or group), "
                  f"e.g. {posixpath.dirname(path) or ''}/user-$(id -u)", entry, field)
    elif "$" in posixpath.dirname(path):
        check.add(where, f"{path!r}: only its last part may depend on the user; its parent is created for all "
                  "users at boot", entry, field)


def containers(check: Check) -> None:
    found: Containers | None = check.cluster.containers
    for index, profile in enumerate(check.cluster.profiles):
        disk = profile.local_disk
        if disk is not None and (not plain_path(disk) or disk == "/"):
            check.add(f"profiles[{index}].local_disk", f"{disk!r} is not the mount point of a disk, {WHAT}",
                      profile, "local_disk")
    if found is None:
        return
    where = "containers"
    if found.artifact_dir is not None and not plain_path(found.artifact_dir):
        check.add(f"{where}.artifact_dir", f"{found.artifact_dir!r} is not {WHAT}", found, "artifact_dir")
    enroot, pyxis = found.enroot, found.pyxis
    for name, entry, minimum in (("enroot", enroot, ENROOT_MIN), ("pyxis", pyxis, PYXIS_MIN)):
        if not VERSION.match(entry.version):
            check.add(f"{where}.{name}.version", f"{entry.version!r} is not a release such as '4.1.2'", entry,
                      "version")
        elif _release(entry.version)[:2] < minimum:
            check.add(f"{where}.{name}.version", f"{name} {entry.version} is older than clusterforge supports "
                      f"({'.'.join(map(str, minimum))})", entry, "version")
    if (enroot.package is None) == (enroot.source is None):
        check.add(f"{where}.enroot", "give exactly one of package= (NVIDIA's .deb) or source= (built on the "
                  "controller)", enroot)
    for field in ("package", "source"):
        if getattr(enroot, field) is not None:
            artifact(check, f"{where}.enroot.{field}", getattr(enroot, field), found.artifact_dir)
    artifact(check, f"{where}.pyxis.source", pyxis.source, found.artifact_dir)
    if found.nvidia_repository is not None:
        repo = found.nvidia_repository
        if not repo.url.startswith(("https://", "http://")):
            check.add(f"{where}.nvidia_repository.url", f"{repo.url!r} is not an http(s) URL", repo, "url")
        artifact(check, f"{where}.nvidia_repository.key", repo.key, found.artifact_dir)
    _path(check, f"{where}.enroot.runtime_path", enroot.runtime_path, enroot, "runtime_path", PER_USER)
    _path(check, f"{where}.enroot.data_path", enroot.data_path, enroot, "data_path", PER_USER)
    _path(check, f"{where}.enroot.cache_path", enroot.cache_path, enroot, "cache_path", PER_USER + PER_GROUP)
    _path(check, f"{where}.enroot.temp_path", enroot.temp_path, enroot, "temp_path", ())
    _path(check, f"{where}.pyxis.runtime_path", pyxis.runtime_path, pyxis, "runtime_path", ())
    if any(c in enroot.squash_options for c in "\n'\"$`;"):
        check.add(f"{where}.enroot.squash_options", f"{enroot.squash_options!r}: mksquashfs options only",
                  enroot, "squash_options")
