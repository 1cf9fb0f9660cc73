"""The repaired hold: a node that held hardware faults in an earlier boot (faults.py) comes back from the reboot that
ended them held by the admission gate, in ``cf-gate-repaired-<node>`` (reservations.py), where its profile has
admission, until it passes its acceptance again (docs/development/admission-design.md). A reboot ends the faults the
health check holds, not the doubt: the GPU that fell off the bus may fall again under load, which only the gate's
tests show.

The check that slurmd runs at its start, before the node registers, is the first of a new boot: holding the node
then means no user's job reaches it in between. Kill-safe: the reservation is created first, the old boot's faults
forgotten only after, so a check killed in between creates it again (an existing one is fine) and forgets them then.

A hold slurmctld refuses to make keeps the node out of service all the same: the check drains it for that
(``cf:check:hold ...``, the check's own drain, through the node-state gate like any other), keeps the old boot's
faults, and tries the hold again at every check; once it is made the drain is lifted as any finding that clears, and
the node waits in its hold for the gate. A slurmctld that does not answer at all can be asked nothing, neither the
hold nor a drain: the next check tries both.
"""

from __future__ import annotations

from . import faults as held_faults
from ..slurm import reservations
from ..slurm.commands import Answer, Run, refused_after
from .decide import scontrol
from ..slurm.drains import Drain
from .expect import Expectations
from .probes import Finding, reason_of

# What scontrol says where the reservation exists already (slurm_errno.c, ESLURM_RESERVATION_NAME_DUP).
EXISTS = "Duplicate reservation name"


def created(answer: Answer) -> bool:
    return answer.rc == 0 or EXISTS in answer.err + answer.out


# Slurm's words where it answered and refused (as opposed to not answering): its errors begin so (scontrol.c).
_REFUSED = "Error creating the reservation"


def hold(expect: Expectations, run: Run, state_dir: str, node: str, boot: str) -> list[Finding]:
    """At the first check of a new boot, the node held by the gate where an earlier boot held hardware faults and its
    profile has admission; then those faults forgotten, with or without admission (a site that turns admission on
    later holds no node for a fault of a boot long past). A slurmctld that does not answer leaves both for the next
    check, which tries again; one that refuses the hold gives the finding that drains the node until it is made."""
    earlier = held_faults.earlier(state_dir, boot)
    if not earlier:
        return []
    if expect.admission:
        name = reservations.name(reservations.REPAIRED, node)
        answer = scontrol(run, reservations.create_argv(name, node))
        if not created(answer):
            print(f"could not hold {node} for the admission gate: scontrol {answer.why}; the next check tries again")
            # scontrol says a refusal and slurmctld not reached after the same words (create_res.c)
            why = refused_after(answer.err + answer.out, _REFUSED)
            if why is None:
                return []
            return [Finding(Drain("check", "hold", f"{name} not made: {why or 'refused'}"))]
        print(f"held {node} in {name} until it passes its acceptance: back from a boot with {reason_of(earlier)}")
    held_faults.forget(state_dir, boot)
    return []
