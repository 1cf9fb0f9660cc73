"""clusterforge: a Slurm cluster of H100 nodes, described once in a typed inventory."""

__version__ = "0.1.0"
