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
