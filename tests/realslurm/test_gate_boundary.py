"""Issue 46, nothing held is held silently, on the real slurmctld and slurmd of 26.05 with ``EnforcePartLimits=ALL``
(as clusterforge renders it): gpu01 is in a ``debug`` partition whose MaxTime (1 minute) its test (3 minutes with
Slurm's margin) does not fit, and in ``all``. sbatch given both refuses the job outright ("Requested time limit is
invalid"), which the gate retried every pass before, forever, the node held with no drain and no alert.

- the gate sends the test to ``all`` alone: it runs, passes, and the node is released;
- held again while ``all``'s MaxTime is 2 minutes (no partition fits): drained ``cf:gate:cannot run: ...`` with the
  partitions' limits named, nothing submitted; the Slurm exporter reads that drain as clusterforge's (its alert,
  GateCannotRun, fires on it: tests/monitoring/test_gate_alerts.py);
- resumed, with ``all``'s MaxTime back but MinNodes=2: slurmctld refuses the job, and the node is drained with
  Slurm's own reason; an admin's drain set meanwhile is never written over;
- admission turned off (reservations.release_all_command) deletes the gate's hold, not an admin's reservation that
  only bears a gate hold's name.

The output of each test is the job's own (gate/slurm.py's confined directory), on the real slurmd.
"""

from __future__ import annotations

import pytest
from realslurm import gate_fixtures, harness
from realslurm.gate_fixtures import ADMIN, judge, stand_in_script

from clusterforge.exporter.nodes import drain_owner
from clusterforge.slurm import nodes
from clusterforge.gate.passes import Gate
from clusterforge.gate.store import Store
from clusterforge.slurm import reservations

NODE = "gpu01"
PLAN = {"nodes": {NODE: {"tests": [{"name": "allreduce", "timeout": 90}]}}}  # --time=3: 90 s and a minute


def reason(ctld: harness.Slurmctld) -> str:
    return gate_fixtures.node(ctld, NODE).get("Reason", "")


@pytest.mark.realslurm
def test_a_test_goes_where_partition_limits_let_it_and_one_that_cannot_run_drains_the_node_with_why():
    runtime = harness.require("26.05")
    with harness.scratch_dir() as scratch:
        etc = gate_fixtures.slurm_conf(scratch, "gatelimits", {NODE: "127.0.0.1"})
        conf = (etc / "slurm.conf").read_text().replace(
            f"PartitionName=all Nodes={NODE} Default=YES State=UP\n",
            f"PartitionName=debug Nodes={NODE} Default=YES MaxTime=1 State=UP\n"
            f"PartitionName=all Nodes={NODE} State=UP\n")
        (etc / "slurm.conf").write_text("EnforcePartLimits=ALL\n" + conf)
        values = gate_fixtures.values(scratch, allreduce="480")
        with harness.running_slurmctld(runtime, etc, scratch) as ctld:
            hold = reservations.name("new", NODE)
            ctld.run(*reservations.create_argv(hold, NODE))
            with harness.running_slurmd(ctld, NODE):
                said: list[str] = []
                asked: list[list[str]] = []
                real = gate_fixtures.argv_runner(ctld)

                def run(argv, timeout):
                    asked.append(list(argv))
                    return real(argv, timeout)

                gate = Gate(Store(str(scratch / "state")), PLAN, run, stand_in_script(values), judge,
                            str(scratch / "scripts"), log=said.append)
                gate.runs_dir = str(scratch / "runs")

                # Sent to `all` alone: it runs there and passes; the node is released.
                gate_fixtures.passes_until(gate, lambda: gate_fixtures.shown_reservations(ctld) == [], "released", said)
                submitted = [a for a in asked if a[0] == "sbatch"]
                assert len(submitted) == 1 and "--partition=all" in submitted[0], (submitted, said)
                assert "cf:gate" not in reason(ctld)

                # Held again while no partition lets the test run: drained, with the limits, nothing submitted.
                repaired = reservations.name("repaired", NODE)
                ctld.run(*reservations.create_argv(repaired, NODE))
                ctld.scontrol("update", "PartitionName=all", "MaxTime=2")
                gate_fixtures.passes_until(gate, lambda: "cf:gate" in reason(ctld), "drained", said)
                assert reason(ctld).startswith(
                    "cf:gate:cannot run: allreduce needs 3 min, TimeLimit debug 1 min, all 2 min"), reason(ctld)
                assert len([a for a in asked if a[0] == "sbatch"]) == 1
                [seen] = [n for n in nodes.parse_sinfo(ctld.run(*nodes.sinfo_argv()).stdout) if n.name == NODE]
                assert seen.drained and drain_owner(seen) == "clusterforge" and reason(ctld).startswith(seen.reason)

                # Resumed by an admin with `all`'s limit back but MinNodes=2: slurmctld refuses the job itself.
                ctld.scontrol("update", "PartitionName=all", "MaxTime=UNLIMITED", "MinNodes=2")
                ctld.scontrol("update", f"NodeName={NODE}", "State=RESUME")
                gate_fixtures.passes_until(gate, lambda: "cf:gate" in reason(ctld), "drained again", said)
                assert reason(ctld).startswith("cf:gate:cannot run: allreduce: sbatch: "), reason(ctld)
                refusals = [a for a in asked if a[0] == "sbatch"]
                assert len(refusals) == 2, refusals  # one refusal, then the node waits for an admin
                for _ in range(3):
                    gate.one_pass()
                assert len([a for a in asked if a[0] == "sbatch"]) == 2
                # An admin takes the node over: their reason stays, whatever the gate finds after.
                ctld.scontrol("update", f"NodeName={NODE}", "State=RESUME")
                ctld.scontrol("update", f"NodeName={NODE}", "State=DRAIN", f"Reason={ADMIN}")
                for _ in range(3):
                    gate.one_pass()
                assert reason(ctld).startswith(ADMIN)

                # Admission turned off deletes the gate's holds only: an admin's reservation named as one (for
                # another user, as a user cannot make one at all) stays.
                for name, users in (("cf-gate-new-gpu01", "slurm"), ("cf-gate-new-gpu02", "root")):
                    ctld.run("scontrol", "create", "reservation", f"ReservationName={name}", "StartTime=now",
                             "Duration=60", f"Users={users}", "Flags=MAINT,OVERLAP,IGNORE_JOBS", f"Nodes={NODE}")
                shown = gate_fixtures.shown_reservations(ctld)
                assert reservations.held(shown) == {NODE: "repaired"}
                ctld.run("sh", "-c", reservations.release_all_command())
                assert sorted(r.name for r in gate_fixtures.shown_reservations(ctld)) == [
                    "cf-gate-new-gpu01", "cf-gate-new-gpu02"]
