"""Link health from the HCAs' port counters (ibsysfs.py): a watched counter that rises past the inventory's limit
between two checks drains the node, naming the port and the rise (``cf:ib:flap mlx5_4 port 1 link_downed +3``;
``cf:ib:errors`` for any other counter). Only the declared HCAs are read (every HCA where none is), and only their
ports that are not Ethernet (RoCE is not the compute fabric), as probes.infiniband judges them.

The check keeps its last reading in its state directory (``ib-counters.json``), with the boot it was read in. A
reading with no earlier one to compare with is a baseline, never a finding: the first check after an installation,
after a boot, or of a counter not read before. So is a counter that went down: its port's counters were reset (a
reboot, a driver reload, an admin's ``perfquery -R``).

A rise is held until its counter is reset, not lifted by the check once the counter stops rising. A drained node
carries no job's traffic, so the packet counters (receive errors, buffer overruns) cannot rise there: quiet checks
prove nothing, and lifting after them would return a bad cable to service until the next job dies on it. The fault
is a cable's, an optic's or a switch port's: the repair loop leaves it to a person (repair/faults.py), who reseats or
replaces it, clears the port's counters (``perfquery -R``, or a reboot), and the next check lifts the drain. NVIDIA's
NVSentinel holds its counter faults the same way, until the counters are cleared or the node reboots; Azure's
azurehpc-health-checks passes again 6 hours after a flap, but it reads the flaps from syslog, where nothing clears.
Lifted by hand meanwhile, the next check drains the node again, as for a hardware Xid.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..slurm.drains import Drain
from . import statedir
from .expect import Expectations
from .ibsysfs import Port
from .probes import Finding

STATE = "ib-counters.json"
FLAP = "link_downed"


@dataclass(frozen=True, slots=True)
class LinkRead:
    findings: list[Finding]
    state: dict               # saved once the check has acted on the findings
    values: dict[str, dict[str, int]]   # "<hca>/<port>" -> counter -> value, as read now (the metrics)
    notes: list[str] = field(default_factory=list)


def watched(expect: Expectations, ports: Sequence[Port]) -> list[Port]:
    """The ports judged: the declared HCAs' (every HCA's where none is declared), but Ethernet ones."""
    declared = {h.name for h in expect.hcas}
    return [p for p in ports if (not declared or p.hca in declared) and p.link_layer != "Ethernet"]


def load(state_dir: str) -> dict | None:
    try:
        saved = json.loads(statedir.load(state_dir, STATE) or "null")
    except ValueError:
        return None
    return saved if isinstance(saved, dict) and isinstance(saved.get("ports"), dict) else None


def save(state_dir: str, state: dict) -> None:
    statedir.save(state_dir, STATE, json.dumps(state, sort_keys=True) + "\n")


def _finding(held: str, rise: int) -> Finding:
    port, counter = held.rsplit(" ", 1)
    hca, number = port.rsplit("/", 1)
    return Finding(Drain("ib", "flap" if counter == FLAP else "errors", f"{hca} port {number} {counter} +{rise}"))


def judge(expect: Expectations, ports: Sequence[Port], saved: dict | None, boot: str) -> LinkRead:
    """This reading against the last one (``saved``, None where there is none): the rises held, each a finding, and
    the state to save."""
    limits = expect.link_errors
    now = {p.key: {name: value for name in limits if (value := p.counter(name)) is not None}
           for p in watched(expect, ports)}
    if saved is None or saved.get("boot") != boot:
        return LinkRead([], {"boot": boot, "ports": now, "held": {}}, now)
    before = saved.get("ports", {})
    declared = {h.name for h in expect.hcas}
    # A rise is held while its counter is watched with a limit, on a port still judged.
    held = {key: entry for key, entry in saved.get("held", {}).items()
            if isinstance(entry, dict) and limits.get(key.rsplit(" ", 1)[-1]) is not None
            and (not declared or key.split("/", 1)[0] in declared)}
    for port, values in now.items():
        for name, value in values.items():
            key = f"{port} {name}"
            if key in held and value < held[key].get("at", 0):
                del held[key]   # reset: what was held is cleared
            last, limit = before.get(port, {}).get(name), limits.get(name)
            if last is None or limit is None or value - last <= limit or key in held:
                continue
            held[key] = {"at": value, "rise": value - last}
    findings = [_finding(key, int(entry.get("rise", 0))) for key, entry in sorted(held.items())]
    return LinkRead(findings, {"boot": boot, "ports": {**before, **now}, "held": held}, now)
