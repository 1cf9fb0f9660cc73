"""Containers for jobs: Enroot (the runtime, on compute nodes) and Pyxis (its Slurm plugin, wherever jobs are
submitted or run), from pinned, checksummed artifacts."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import Entry, slurm_key

# The hooks Enroot ships in /usr/share/enroot/hooks.d that a site may enable (copied to /etc/enroot/hooks.d).
EnrootHook = Literal["slurm-pmi", "slurm-pytorch", "mig-config", "sharp"]


class Artifact(Entry):
    """A file the deploy fetches once, on the machine that runs it, and checks against its sha256 before any host
    is touched."""

    source: str = Field(description="its release's https:// or http:// URL, or a path on the deploy machine (a "
                                    "relative one is found in Containers.artifact_dir); with Containers.artifact_dir, "
                                    "a container artifact's URL is read from that mirror by its file name instead")
    sha256: str = Field(description="its SHA-256, 64 hex digits: download it once and run `sha256sum FILE`")
    name: str | None = Field(default=None, description="its file name in a mirror directory and on the hosts, "
                                                       "where not the last part of source (a tag's archive: "
                                                       "'v0.24.0.tar.gz' kept as 'pyxis-0.24.0.tar.gz')")

    @property
    def filename(self) -> str:
        return self.name or self.source.rstrip("/").rsplit("/", 1)[-1]

    @property
    def url(self) -> str | None:
        return self.source if self.source.startswith(("https://", "http://")) else None


class Enroot(Entry):
    """NVIDIA's container runtime, on every compute node. Paths may hold ``$(id -u)`` / ``$(id -g)``: Enroot
    expands them for each user; their parent directories are created 1777 at every boot."""

    version: str = Field(description="e.g. '4.1.2'; the installed package must have it")
    package: Artifact | None = Field(default=None, description="NVIDIA's release .deb (enroot_<version>-1_amd64.deb)")
    source: Artifact | None = Field(default=None, description="a source tarball with its submodules, built once "
                                                              "into a .deb on the controller")
    runtime_path: str = Field(default="/run/enroot/user-$(id -u)", description="ENROOT_RUNTIME_PATH, Enroot's "
                                                                               "working directory: one per user")
    data_path: str | None = Field(default=None, description="container root filesystems; default: on the "
                                                            "profile's local_disk, else /tmp/enroot-data/user-$(id -u)")
    cache_path: str | None = Field(default=None, description="image layers; default: on the profile's local_disk, "
                                                             "else /var/lib/enroot/cache/group-$(id -g)")
    temp_path: str | None = Field(default=None, description="default: the profile's local_disk, else /tmp")
    squash_options: str = Field(default="-noI -noD -noF -noX -no-duplicates",
                                description="ENROOT_SQUASH_OPTIONS, the options Enroot gives mksquashfs")
    mount_home: bool = Field(default=False, description="ENROOT_MOUNT_HOME")
    restrict_dev: bool = Field(default=True, description="ENROOT_RESTRICT_DEV: only the job's GPUs in /dev")
    rootfs_writable: bool = Field(default=True, description="ENROOT_ROOTFS_WRITABLE: container root filesystems "
                                                            "are writable")
    hooks: tuple[EnrootHook, ...] = Field(default=(), description="extra hooks Enroot ships, e.g. 'slurm-pmi'")


class Pyxis(Entry):
    """NVIDIA's SPANK plugin (srun --container-image), built from source for the cluster's Slurm release on the
    controller and installed on every Slurm host."""

    version: str = Field(description="e.g. '0.24.0'")
    source: Artifact = Field(description="Pyxis' source tarball, built on the controller against the cluster's Slurm "
                                         "release")
    container_scope: Literal["job", "global"] = Field(
        default="job", description="'job': named containers live as long as the job (removed by its epilog)",
        json_schema_extra=slurm_key("pyxis.conf", "container_scope"))
    sbatch_support: bool = Field(default=True, description="sbatch_support in pyxis.conf: the --container-* options "
                                                           "are offered by sbatch and salloc too, not only srun",
                                 json_schema_extra=slurm_key("pyxis.conf", "sbatch_support"))
    runtime_path: str = Field(default="/run/pyxis", description="runtime_path in pyxis.conf: the absolute path where "
                                                                "Pyxis keeps its runtime files, best on a tmpfs",
                              json_schema_extra=slurm_key("pyxis.conf", "runtime_path"))
    execute_entrypoint: bool = Field(default=False, description="execute_entrypoint in pyxis.conf: run the image's "
                                                                "ENTRYPOINT before the job's command",
                                     json_schema_extra=slurm_key("pyxis.conf", "execute_entrypoint"))


class AptRepository(Entry):
    """An apt repository, signed by a key the deploy pins like any artifact."""

    url: str = Field(description="e.g. 'https://nvidia.github.io/libnvidia-container/stable/deb/amd64'")
    suite: str = Field(default="/", description="'/' for a flat repository")
    components: tuple[str, ...] = Field(default=(), description="the components after the suite on its deb line; "
                                                                "none for a flat repository")
    key: Artifact = Field(description="the repository's signing key (armored or binary)")


class Containers(Entry):
    enroot: Enroot = Field(description="Enroot, the container runtime, on every compute node")
    pyxis: Pyxis = Field(description="Pyxis, Slurm's plugin for container jobs, on every Slurm host")
    artifact_dir: str | None = Field(default=None, description="a site's mirror: a directory on the deploy machine "
                                                               "holding Enroot's and Pyxis' files (and the NVIDIA "
                                                               "repository's key) by file name, read there instead "
                                                               "of downloaded; relative paths are found in it too")
    nvidia_repository: AptRepository | None = Field(
        default=None, description="NVIDIA's libnvidia-container repository: GPU images need nvidia-container-cli, "
                                  "which Debian does not have")
