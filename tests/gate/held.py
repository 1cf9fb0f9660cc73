"""What the gate's tests start from, on Slurm's stand-in (tests/slurm_standin): gpu01, idle, held by the gate in the
reservation reservations.create_argv makes (as the deploy creates it), in the partitions a test gives; and an
admin's commands, which slurmctld carries out but which are not among those the gate asked."""

from __future__ import annotations

from slurm_standin import Node, Partition, Slurm

from clusterforge.slurm import reservations

NODE = "gpu01"
HOLD = reservations.name("new", NODE)


def held(partitions: dict[str, Partition] | None = None, kind: type[Slurm] = Slurm, **settings) -> Slurm:
    """gpu01 in its hold; in one default partition without a time limit unless ``partitions`` says otherwise.
    ``kind``: a test's Slurm, the stand-in with what the test makes happen meanwhile."""
    slurm = kind({NODE: Node()}, partitions or {"all": Partition([NODE], default=True)}, **settings)
    by_admin(slurm, *reservations.create_argv(HOLD, NODE))
    return slurm


def by_admin(slurm: Slurm, *argv: str) -> None:
    """An admin's command at the controller (or the deploy's): done, and kept out of what the gate asked."""
    answer = slurm.run(list(argv))
    slurm.asked.pop()
    assert answer.ok, (argv, answer)
