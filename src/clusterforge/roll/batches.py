"""Which compute nodes a roll takes out, in which batches, from Slurm's view of them before it starts. Pure.

- A node drained by an earlier roll (``cf:roll``: it was interrupted) is taken first, so that its drain is
  continued, never forgotten.
- A node out of service for anyone else's reason (an admin's drain, Slurm's DOWN, a drain by the health check, a
  reboot already under way) is skipped, and named: its state and reason stay as they are.
- At most ``budget`` nodes are taken out by the roll at once; with ``count_out``, every compute node already out
  counts against it, as a disruption budget does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import ClusterforgeError
from ..slurm import drains
from ..slurm.nodes import Node

CAUSE = drains.ROLL


def rolls_it(node: Node) -> bool:
    """Drained by a roll."""
    drain = node.drain
    return drain is not None and drain.cause == CAUSE


@dataclass(frozen=True, slots=True)
class RollPlan:
    batches: tuple[tuple[str, ...], ...]
    continued: tuple[str, ...]      # drained by an earlier roll: in the first batches
    skipped: tuple[Node, ...]  # out of service for another reason: left alone
    out: tuple[Node, ...]      # every compute node out of service before the roll, not by a roll
    width: int                      # nodes per batch


def plan_roll(nodes: Sequence[str], states: Mapping[str, Node], budget: int, count_out: bool,
              compute: Sequence[str] | None = None) -> RollPlan:
    """``nodes``: those to roll, in order; ``states``: Slurm's view of every compute node (``compute``, all of
    them, for the budget; ``nodes`` where not given)."""
    if budget < 1:
        raise ClusterforgeError(f"--batch {budget}: at least one node must be taken out at a time")
    missing = [n for n in nodes if n not in states]
    if missing:
        raise ClusterforgeError(f"Slurm does not know {', '.join(missing)}: deploy the inventory first")
    everyone = compute if compute is not None else nodes
    out = tuple(states[n] for n in everyone if n in states and states[n].out_of_service and not rolls_it(states[n]))
    width = budget - len(out) if count_out else budget
    if width < 1:
        raise ClusterforgeError(
            f"{len(out)} compute nodes are already out of service ({', '.join(n.name for n in out)}), and --count-out "
            f"counts them against --batch {budget}: no node may be taken out. Bring them back, or raise --batch")
    continued = tuple(n for n in nodes if rolls_it(states[n]))
    skipped = tuple(states[n] for n in nodes if states[n] in out)
    rest = [n for n in nodes if n not in continued and states[n] not in out]
    batches = tuple(tuple(group[i:i + width]) for group in (list(continued), rest) for i in range(0, len(group), width))
    return RollPlan(batches, continued, skipped, out, width)
