"""The admission gate (gate/) against the real slurmctld and slurmd of 26.05 (the release whose root has slurmd, so
jobs run): a node held before its slurmd first starts takes no one else's job, runs its tests as Slurm jobs in its
reservation, is drained with the number when one fails, waits for an admin's resume (and never lifts its own drain
nor touches an admin's), and is released when they pass; a gate started afresh mid-round finds its job again by
name; a hold an admin deletes is recorded as an admission by hand.

The tests' scripts and verdict are stand-ins for admission.tests' (each script prints the number a file under the
scratch directory holds, the verdict holds it to a floor, as the real ones hold a tool's number): what is proved
here is the gate's orchestration, on Slurm's real reservations, jobs, drains and states."""

from __future__ import annotations

import json
import time

import pytest
from realslurm import gate_fixtures, harness
from realslurm.gate_fixtures import ADMIN, judge, stand_in_script

from clusterforge.gate.passes import Gate
from clusterforge.gate.store import Store
from clusterforge.slurm import reservations

NODE = "gpu01"
HOLD = reservations.name("new", NODE)
PLAN = {"nodes": {NODE: {"tests": [{"name": "allreduce", "timeout": 30}, {"name": "dcgm", "timeout": 30}]}}}


def node_state(ctld: harness.Slurmctld) -> dict[str, str]:
    return gate_fixtures.node(ctld, NODE)


def job_state(ctld: harness.Slurmctld, job_id: str) -> str:
    return harness.parse_oneliner(ctld.scontrol("-o", "show", "job", job_id.strip()))[0]["JobState"]


def holds(ctld: harness.Slurmctld) -> list[str]:
    return [r.name for r in gate_fixtures.shown_reservations(ctld)]


@pytest.mark.realslurm
def test_a_held_node_is_tested_in_its_reservation_drained_on_a_failure_and_released_on_a_pass():
    runtime = harness.require("26.05")
    with harness.scratch_dir() as scratch:
        etc = gate_fixtures.slurm_conf(scratch, "gate", {NODE: "127.0.0.1"})
        values = gate_fixtures.values(scratch, allreduce="300", dcgm="999")
        with harness.running_slurmctld(runtime, etc, scratch) as ctld:
            # The deploy's hold, before the node's slurmd first starts.
            ctld.run(*reservations.create_argv(HOLD, NODE))
            with harness.running_slurmd(ctld, NODE):
                said: list[str] = []
                run = gate_fixtures.argv_runner(ctld)

                def gate() -> Gate:  # a gate started afresh: nothing of the last one's memory
                    return Gate(Store(str(scratch / "state")), PLAN, run, stand_in_script(values), judge,
                                str(scratch / "scripts"), log=said.append)

                # A job outside the reservation waits: the node is the gate's.
                user = ctld.run("sbatch", "--parsable", "--job-name=user", "--output=/dev/null", "--wrap=true")
                first = gate()
                first.one_pass()
                assert f"{NODE}: held by {HOLD}" in said
                assert any("allreduce submitted as job" in line for line in said), said
                # Killed here: a new gate finds the job by its name and reservation and does not submit it twice.
                second = gate()
                gate_fixtures.passes_until(second, lambda: node_state(ctld)["State"].startswith("IDLE+DRAIN"), "drained")
                assert node_state(ctld)["Reason"].startswith("cf:gate:allreduce 300 GB/s < 460")
                assert sum("allreduce submitted" in line for line in said) == 1, said
                assert holds(ctld) == [HOLD]  # a failed node stays held
                records = Store(str(scratch / "state")).records(NODE)
                assert [(r["test"], r["passed"], r["value"], r["source"]) for r in records] == [
                    ("allreduce", False, 300.0, "gate"), ("dcgm", True, 999.0, "gate")]
                assert job_state(ctld, user.stdout) == "PENDING"
                # The gate never lifts its own drain: passes change nothing.
                for _ in range(3):
                    second.one_pass()
                assert node_state(ctld)["Reason"].startswith("cf:gate:allreduce")
                # An admin takes the node over: their drain is theirs, the gate waits and runs nothing.
                ctld.scontrol("update", f"NodeName={NODE}", "State=DRAIN", f"Reason={ADMIN}")
                jobs_before = ctld.run("scontrol", "-o", "show", "job").stdout.count("cf-gate:allreduce")
                for _ in range(3):
                    second.one_pass()
                assert node_state(ctld)["Reason"].startswith(ADMIN)
                assert ctld.run("scontrol", "-o", "show", "job").stdout.count("cf-gate:allreduce") == jobs_before
                # Repaired, the admin resumes it: the gate tests it again, it passes and is released.
                (values / "allreduce").write_text("480\n")
                ctld.scontrol("update", f"NodeName={NODE}", "State=RESUME")
                gate_fixtures.passes_until(second, lambda: holds(ctld) == [], "released")
                admitted = json.loads((scratch / "state" / "admitted" / NODE).read_text())
                assert admitted["how"] == "passed" and admitted["reservation"] == HOLD
                assert not (scratch / "state" / "held" / f"{NODE}.json").exists()
                state = node_state(ctld)
                assert "DRAIN" not in state["State"] and "MAINTENANCE" not in state["State"], state
                assert [r["passed"] for r in Store(str(scratch / "state")).records(NODE)][-2:] == [True, True]
                deadline = time.monotonic() + 60
                while job_state(ctld, user.stdout) != "COMPLETED":  # released: the waiting job runs
                    assert time.monotonic() < deadline, job_state(ctld, user.stdout)
                    time.sleep(1)
                # Held again (repaired), then admitted by hand: deleting the reservation is the admin's admission.
                repaired = reservations.name("repaired", NODE)
                ctld.run(*reservations.create_argv(repaired, NODE))
                second.one_pass()
                assert any("allreduce submitted" in line for line in said[-1:]), said
                # slurmctld refuses to delete a reservation a job waits or runs in ("Requested reservation is in use"):
                # the admin cancels the gate's job first (docs/operations/admission.md says so).
                refused = ctld.run(*reservations.delete_argv(repaired), check=False)
                assert refused.returncode == 1 and "in use" in refused.stderr
                ctld.run("scancel", f"--reservation={repaired}")
                ctld.run(*reservations.delete_argv(repaired))
                second.one_pass()
                admitted = json.loads((scratch / "state" / "admitted" / NODE).read_text())
                assert admitted["how"] == "admitted by hand" and admitted["reservation"] == repaired
                # Held again while its profile loses admission (the plan, read whole, lists other nodes): released,
                # its running test cancelled first. A plan that cannot be read releases no one.
                ctld.run(*reservations.create_argv(repaired, NODE))
                second.one_pass()
                assert any("allreduce submitted" in line for line in said[-1:]), said
                second.plan = {}
                for _ in range(2):
                    second.one_pass()
                assert holds(ctld) == [repaired]
                second.plan = {"nodes": {"gpu99": PLAN["nodes"][NODE]}}
                gate_fixtures.passes_until(second, lambda: holds(ctld) == [], "released without admission")
                admitted = json.loads((scratch / "state" / "admitted" / NODE).read_text())
                assert admitted["how"] == "released: its profile has no admission"
