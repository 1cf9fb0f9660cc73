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
    v(t) for t in ("21.08", "22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11", "26.05")
)


# Where Slurm's behaviour changes between releases, named once; everything else compares against these.
CGROUP_V2 = v("22.05")             # the cgroup/v2 plugin exists, CgroupPlugin=autodetect is safe
AUTH_SLURM = v("23.11")            # auth/slurm and cred/slurm, with /etc/slurm/slurm.key
HOSTLIST_SUFFIX = v("23.11")       # text after the last bracket of a hostlist (gpu[1-2]-ib) parses
RECONFIGURE_RESTARTS = v("23.11")  # `scontrol reconfigure` starts new daemons, which read every file and plugin
DAEMONS_AS_SLURM = v("23.11")      # packaged units run slurmctld/slurmdbd as slurm, pid files in RuntimeDirectory
TOPOLOGY_DEFAULT = v("23.11")      # the flat topology plugin is topology/default (topology/none before)
TOPOLOGY_BLOCK = v("23.11")        # topology/block exists: every block the same size, aggregated by BlockLevels=
OPENAPI_BY_DAEMON = v("23.11")     # slurmrestd's plugins are openapi/slurmctld and openapi/slurmdbd (NEWS 23.11.0rc1)
BLOCK_SIZES = v("24.05")           # BlockSizes= (in nodes) replaces BlockLevels=; a block may exceed the base size
NODES_BY_RECONFIGURE = v("24.11")  # nodes are added and removed with `scontrol reconfigure` alone
AUTODETECT_NVIDIA = v("24.11")     # gres.conf AutoDetect=nvidia (without NVML)
TOPOLOGY_FLAT = v("25.05")         # ... and topology/flat
BLOCK_GAPS = v("25.05")            # a block may hold fewer nodes than the base block size
TOPOLOGY_YAML = v("25.05")         # slurmctld reads topology.yaml, where it exists, instead of topology.conf
PARTITION_TOPOLOGY = v("25.05")    # PartitionName's Topology= places the partition's jobs by one named topology
SLURMRESTD_NO_HUP = v("25.05")     # slurmrestd's own unit lost ExecReload: SIGHUP ends it (Debian's 26.05 keeps it)
JOB_SLUID = v("25.11")             # Prolog and Epilog get SLURM_JOB_SLUID, the job's identifier beside its id
SLUID_CGROUPS = v("26.05")         # cgroup/v2 names a job's directory by its SLUID, not job_<id> (RELEASE_NOTES 26.05)
HEALTH_CHECK_TIMEOUT = v("26.05")  # HealthCheckTimeout= bounds HealthCheckProgram (60 s, fixed before)
MUNGE_RECOMMENDED = v("26.05")     # the daemons' packages only Recommend munge: a munge cluster installs it itself
# Debian's 26.05 packages ship no mpi/pmix plugin (26.05.5-1's changelog: "Remove pmix", #1149781; mpi_pmi2.so is
# there): MpiDefault=pmix would make every srun without --mpi= exit.
NO_PMIX_PLUGIN = v("26.05")

# CgroupJobIdPaths=yes (cgroup.conf) gives back job_<id> directories from 26.05.2 on; 26.05.0 and .1 lack the key, and
# an unknown cgroup.conf key is fatal (slurm-26-05-2-1 src/interfaces/cgroup.c).
JOB_ID_PATHS = "26.05.2"


def below_patch(package_version: str, patch: str) -> bool:
    """Whether a Debian package version of ``patch``'s release is older than ``patch``: '26.05.1-1' < '26.05.2'."""
    found = re.match(r"^(?:\d+:)?(\d+)\.(\d+)\.(\d+)", package_version)
    if not found:
        return False
    numbers = tuple(int(n) for n in found.groups())
    wanted = tuple(int(n) for n in patch.split("."))
    return numbers[:2] == wanted[:2] and numbers < wanted

# Before OPENAPI_BY_DAEMON, slurmrestd has a plugin per API version (openapi/v0.0.N for slurmctld's paths,
# openapi/dbv0.0.N for slurmdbd's); the newest of each release (its NEWS; 22.05's seen with `slurmrestd -s list`).
OPENAPI_NEWEST = {v("21.08"): "v0.0.37", v("22.05"): "v0.0.38", v("23.02"): "v0.0.39"}


# Slurm's major releases in order, and the releases each one's daemons upgrade from (their state files, RPCs and
# slurmdbd's database): the two previous majors up to 24.05 (slurm-22-05-8-1 doc/html/quickstart_admin.shtml,
# "Upgrades"; src/common/slurm_protocol_common.h SLURM_MIN_PROTOCOL_VERSION), the three previous from 24.11
# (slurm-24-11-6-1 doc/html/upgrades.shtml: "24.11 ... compatible with 24.05, 23.11, 23.02"; slurm-26-05-3-1
# RELEASE_NOTES.md: "26.05 supports upgrading directly from 25.11, 25.05, and 24.11"). "Upgrades from
# incompatible versions will fail immediately upon startup", and jobs outside the window are lost.
RELEASES: tuple[SlurmVersion, ...] = tuple(
    v(t) for t in ("20.02", "20.11", "21.08", "22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11",
                                          "26.05"))
THREE_BACK = v("24.11")


def upgrades_from(release: SlurmVersion) -> tuple[SlurmVersion, ...]:
    """The releases a daemon of ``release`` takes over from, besides its own; () for a release not in the table."""
    if release not in RELEASES:
        return ()
    index = RELEASES.index(release)
    back = 3 if release >= THREE_BACK else 2
    return RELEASES[max(0, index - back):index]


def upgrade_path(old: SlurmVersion, new: SlurmVersion) -> tuple[SlurmVersion, ...] | None:
    """The fewest releases from ``old`` to ``new``, each taking over from the one before: ``(old, ..., new)``;
    None where there is none (a downgrade, or a release not in the table)."""
    if old == new:
        return (old,)
    if old > new or old not in RELEASES or new not in RELEASES:
        return None
    path = [new]
    while old not in upgrades_from(path[-1]):
        # The oldest release the current one takes over from: the longest step back.
        steps = upgrades_from(path[-1])
        if not steps or steps[0] <= old:
            return None
        path.append(steps[0])
    return (old, *reversed(path))


def upgrade_problem(old: SlurmVersion, new: SlurmVersion) -> str | None:
    """Why Slurm cannot go from ``old`` to ``new`` in one step, with the supported path; None where it can."""
    if new < old:
        return f"Slurm {old} -> {new} is a downgrade, which Slurm does not support once its daemons have started"
    path = upgrade_path(old, new)
    if path is None or len(path) <= 2:
        return None if path else f"Slurm {old} -> {new}: no release table covers it"
    steps = " -> ".join(str(p) for p in path)
    return (f"Slurm {new} takes over only from {', '.join(str(r) for r in upgrades_from(new))}, not from {old}: its "
            f"daemons would refuse {old}'s state and slurmdbd its database, and running jobs would be lost. Go "
            f"through {steps}, each release in Slurm's order (slurmdbd, then slurmctld, then the nodes)")
