"""One stand-in for Slurm, for every test tier that cannot run the real daemons (slurm.py says what it is and is
not; tests/realslurm/test_standin.py holds it to the real slurmctld of each release)."""

from .cluster import Job, Node, Partition, Reservation
from .execute import Runner
from .slurm import Slurm

__all__ = ["Job", "Node", "Partition", "Reservation", "Runner", "Slurm"]
