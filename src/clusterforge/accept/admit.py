"""Admitting a node by hand (`clusterforge admit`): an admin's decision that a node held by the admission gate takes
users' jobs now, tested or not. Through the controller, as accept runs: the node's hold is deleted once the jobs in
it (the gate's tests) are cancelled, and the gate's own drain of a failed test lifted; any other drain (an admin's,
the health check's) stays, and is said. The gate records the node "admitted by hand" at its next pass.

Pure but for ``controller``, the session with it (reach's Controller, whose ControllerRefused stops the admission
where the controller refuses a command or answers what is not Slurm's): the commands are slurm/reservations.py's and
slurm/drains.py's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..reach.controller import Controller
from ..slurm import drains, reservations
from ..slurm import nodes as slurm_nodes


@dataclass(frozen=True, slots=True)
class Admitted:
    node: str
    hold: str | None        # the gate's hold deleted; None where the node was not held
    lifted: bool = False    # the gate's drain of a failed test lifted
    kept: str = ""          # another's drain, left as it is

    def line(self) -> str:
        if self.hold is None:
            return f"{self.node}: not held by the admission gate; nothing to do"
        said = f"{self.node}: admitted by hand ({self.hold} deleted"
        said += ", the gate's drain lifted)" if self.lifted else ")"
        if self.kept:
            said += f"; still drained by another, left as it is: {self.kept}"
        return said


def _gates_drain(state: slurm_nodes.Node | None) -> bool:
    drain = drains.parse_reason(state.reason) if state is not None and state.reason else None
    return drain is not None and drain.cause == drains.GATE


def _drained(state: slurm_nodes.Node | None) -> bool:
    return state is not None and "drain" in state.state


def admit(nodes: Iterable[str], controller: Controller) -> list[Admitted]:
    """Admit each of ``nodes`` that the gate holds, in the order given."""
    holds: dict[str, list[str]] = {}
    for reservation in controller.reservations():
        if reservation.gate is not None:
            holds.setdefault(reservation.gate[1], []).append(reservation.name)
    before = controller.states()
    done = []
    for node in nodes:
        held = sorted(holds.get(node, []))
        if not held:
            done.append(Admitted(node, None))
            continue
        for name in held:
            controller.ask(reservations.admit_command(name), f"admitting {node} ({name})")
        # Only the gate's own drain, read again just before it is lifted: an admin's taken over meanwhile stays.
        controller.ask(drains.resume_command([node], drains.GATE), f"lifting the gate's drain of {node}")
        after = controller.states().get(node)
        kept = after.reason if _drained(after) and not _gates_drain(after) else ""
        done.append(Admitted(node, ", ".join(held), lifted=_gates_drain(before.get(node)) and not _drained(after),
                             kept=kept))
    return done
