"""End to end: a seeded random interleaving on the running test cluster, real slurmctld and slurmd: an admin's drains
and lifts, Slurm-style drains, hardware and application Xid records, the health check run as slurmd runs it, and
rolls of one node with a reboot through Slurm. After each of clusterforge's actions (a check, a roll), read back
from slurmctld: a node someone else held just before keeps its drain and reason, and was not rebooted; a node whose
hardware fault a check has seen in this boot is drained for it as soon as no one else holds it. The seed is
CLUSTERFORGE_E2E_SEED (0 by default) and is named by a failure; the unit tier and benchmarks/interleavings.py run
thousands of sequences of the same kind (tests/health/test_interleavings.py, tests/realslurm).
"""

from __future__ import annotations

import os
import random

import pytest
from e2e.test_health import CTL, NODES, XID13, XID79, check_now, kernel_record, sinfo
from e2e.test_health import clean  # noqa: F401  (the fixture that puts the nodes back)
from e2e.test_roll import boot_times, booted, roll

pytestmark = pytest.mark.e2e

SEED = int(os.environ.get("CLUSTERFORGE_E2E_SEED", "0"))
STEPS = 24


def held_by_another(state: str, reason: str) -> bool:
    return ("drain" in state or "down" in state) and not reason.startswith("cf:")


def test_a_seeded_interleaving_never_undoes_anothers_hold_nor_forgets_a_fault(clean):
    bed = clean
    rng = random.Random(SEED)
    written = {n: False for n in NODES}   # a hardware Xid in the node's kernel log of this boot
    seen = {n: False for n in NODES}      # ... and read by a check since
    done: list[str] = []
    for _ in range(STEPS):
        node = rng.choice(NODES)
        what = rng.choice(["admin drains", "admin lifts", "slurm drains", "hardware xid", "application xid", "check",
                           "check", "roll"])
        done.append(f"{what} {node}")
        state, reason = sinfo(bed)[node]
        if what == "admin drains":
            bed.run(CTL, f"scontrol update nodename={node} state=drain reason='admin: fan'")
        elif what == "admin lifts" and "drain" in state:
            bed.run(CTL, f"scontrol update nodename={node} state=undrain")
        elif what == "slurm drains" and "drain" not in state:
            bed.run(CTL, f"scontrol update nodename={node} state=drain reason='Kill task failed'")
        elif what == "hardware xid":
            kernel_record(bed, node, XID79)
            written[node] = True
        elif what == "application xid":
            kernel_record(bed, node, XID13)
        elif what in ("check", "roll"):
            before = sinfo(bed)
            boots = boot_times(bed)
            if what == "check":
                check_now(bed, node)
                seen[node] = seen[node] or written[node]
            else:
                process = roll(bed, "--reboot", "--limit", node, "--wait", "60")
                output = process.communicate(timeout=300)[0]
                if node not in booted(boots, boot_times(bed)):
                    assert "already out of service" in output or process.returncode != 0, (SEED, done, output)
                else:  # rebooted through Slurm: a new boot, its kernel log empty (testbed/reboot)
                    written[node] = seen[node] = False
            after = sinfo(bed)
            for name in NODES:
                if held_by_another(*before[name]):
                    assert after[name] == before[name], (SEED, done, name, before[name], after[name])
                    assert name not in booted(boots, boot_times(bed)), (SEED, done, name)
            if what == "check" and seen[node] and not held_by_another(*after[node]):
                assert "drain" in after[node][0] and after[node][1].startswith("cf:gpu:xid79"), \
                    (SEED, done, after[node])
    assert {"check", "roll"} & {d.split()[0] for d in done}
