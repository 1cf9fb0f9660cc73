"""Issue 50 on the real slurmctld and slurmd of 26.05: the gate steps its held nodes at once (gate/passes.py). Three
nodes, a slurmd each, held before their slurmd first starts; once each node's test has ended, one pass reads the three
outputs back with three read jobs under way at once (srun, an allocation and a step each, in three holds), and each
node's verdict arrives in that pass; then each node is released. What makes "at once" a fact rather than a timing:
each read waits, before it runs, until the three are under way (a barrier), which reads one after another never pass.
"""

from __future__ import annotations

import threading
import time

import pytest
from realslurm import gate_fixtures, harness
from realslurm.gate_fixtures import judge, stand_in_script

from clusterforge.gate.passes import Gate
from clusterforge.gate.store import Store
from clusterforge.slurm import reservations

NODES = ["gpu01", "gpu02", "gpu03"]
PLAN = {"nodes": {node: {"tests": [{"name": "allreduce", "timeout": 30}]} for node in NODES}}
MEET_S = 60.0  # a guard against reads that never run at once, which would wait for ever; no figure is held to it


def conf(scratch):
    own, addresses = harness.side_by_side(scratch, NODES)
    return harness.bare_etc(scratch, "gateonce", "ReturnToService=2\nMinJobAge=300\n"
                            + "".join(f"{k}={v}\n" for k, v in own.items())
                            + "".join(f"NodeName={n} {a} CPUs=1 RealMemory=100 State=UNKNOWN\n"
                                      for n, a in addresses.items())
                            + f"PartitionName=all Nodes={','.join(NODES)} Default=YES State=UP\n")


def ended(ctld: harness.Slurmctld, count: int) -> bool:
    jobs = harness.parse_oneliner(ctld.run("scontrol", "-o", "show", "job").stdout)
    return sum(j["JobState"] == "COMPLETED" and j["JobName"].startswith("cf-gate:") for j in jobs) == count


@pytest.mark.realslurm
def test_the_gate_reads_three_held_nodes_at_once_on_real_slurm_and_releases_each():
    runtime = harness.require("26.05")
    with harness.scratch_dir() as scratch:
        values = gate_fixtures.values(scratch, allreduce="480")
        with harness.running_slurmctld(runtime, conf(scratch), scratch) as ctld:
            for node in NODES:  # the deploy's holds, before each node's slurmd first starts
                ctld.run(*reservations.create_argv(reservations.name("new", node), node))
            with harness.running_slurmds(ctld, NODES):
                said: list[str] = []
                real = gate_fixtures.argv_runner(ctld)
                meeting = threading.Barrier(len(NODES), timeout=MEET_S)

                def run(argv, timeout):
                    if argv[0] == "srun":
                        meeting.wait()
                    return real(argv, timeout)

                gate = Gate(Store(str(scratch / "state")), PLAN, run, stand_in_script(values), judge,
                            str(scratch / "scripts"), log=said.append, runs_dir=str(scratch / "runs"))
                gate.one_pass()  # each node's test submitted
                assert sum("allreduce submitted as job" in line for line in said) == len(NODES), said
                deadline = time.monotonic() + 90
                while not ended(ctld, len(NODES)):
                    assert time.monotonic() < deadline, ctld.run("scontrol", "-o", "show", "job").stdout
                    time.sleep(1)
                gate.one_pass()  # the three outputs read back at once, past the barrier, and each node released
                store = Store(str(scratch / "state"))
                assert {n: [(r["test"], r["passed"]) for r in store.records(n)] for n in NODES} == dict.fromkeys(
                    NODES, [("allreduce", True)]), said
                assert gate_fixtures.shown_reservations(ctld) == [], said
                assert all(store.admitted(n)["how"] == "passed" for n in NODES)
