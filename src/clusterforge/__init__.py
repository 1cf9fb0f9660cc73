"""clusterforge: a Slurm cluster of H100 nodes, described once in a typed inventory."""

from importlib.metadata import PackageNotFoundError, version

try:
    # The installed build's, from git when it was built (hatch-vcs): two commits' builds never share one.
    __version__ = version("clusterforge")
except PackageNotFoundError:  # run from a source tree never installed
    __version__ = "0.0.0+unknown"
