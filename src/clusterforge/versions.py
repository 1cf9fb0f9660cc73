"""Slurm release numbers (major.minor) and the releases clusterforge renders for."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

from .errors import ClusterforgeError

_VERSION = re.compile(r"^(\d{2})\.(\d{2})$")


@total_ordering
@dataclass(frozen=True, slots=True)
class SlurmVersion:
    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> SlurmVersion:
        match = _VERSION.match(str(text).strip())
        if not match:
            raise ClusterforgeError(f"{text!r} is not a Slurm release; write major.minor, e.g. 22.05 or 24.11")
        version = cls(int(match.group(1)), int(match.group(2)))
        if version not in SUPPORTED:
            known = ", ".join(str(v) for v in SUPPORTED)
            raise ClusterforgeError(f"Slurm {version} is not supported; clusterforge renders for {known}")
        return version

    def __lt__(self, other: SlurmVersion) -> bool:
        return (self.major, self.minor) < (other.major, other.minor)

    def __str__(self) -> str:
        return f"{self.major:02d}.{self.minor:02d}"


def v(text: str) -> SlurmVersion:
    """Shorthand for a literal release in comparisons: ``version >= v("23.11")``."""
    major, minor = text.split(".")
    return SlurmVersion(int(major), int(minor))


# One entry per Slurm release whose slurm.conf and cgroup.conf key tables ship in slurm_keys/.
SUPPORTED: tuple[SlurmVersion, ...] = tuple(
    v(t) for t in ("21.08", "22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11")
)


# Where Slurm's behaviour changes between releases, named once; everything else compares against these.
CGROUP_V2 = v("22.05")             # the cgroup/v2 plugin exists, CgroupPlugin=autodetect is safe
AUTH_SLURM = v("23.11")            # auth/slurm and cred/slurm, with /etc/slurm/slurm.key
HOSTLIST_SUFFIX = v("23.11")       # text after the last bracket of a hostlist (gpu[1-2]-ib) parses
RECONFIGURE_RESTARTS = v("23.11")  # `scontrol reconfigure` starts new daemons, which read every file and plugin
DAEMONS_AS_SLURM = v("23.11")      # packaged units run slurmctld/slurmdbd as slurm, pid files in RuntimeDirectory
TOPOLOGY_DEFAULT = v("23.11")      # the flat topology plugin is topology/default (topology/none before)
TOPOLOGY_BLOCK = v("23.11")        # topology/block exists: every block the same size, aggregated by BlockLevels=
BLOCK_SIZES = v("24.05")           # BlockSizes= (in nodes) replaces BlockLevels=; a block may exceed the base size
NODES_BY_RECONFIGURE = v("24.11")  # nodes are added and removed with `scontrol reconfigure` alone
AUTODETECT_NVIDIA = v("24.11")     # gres.conf AutoDetect=nvidia (without NVML)
TOPOLOGY_FLAT = v("25.05")         # ... and topology/flat
BLOCK_GAPS = v("25.05")            # a block may hold fewer nodes than the base block size
TOPOLOGY_YAML = v("25.05")         # slurmctld reads topology.yaml, where it exists, instead of topology.conf
