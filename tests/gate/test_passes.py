"""gate/passes.py on the ends of a test that the real-Slurm tier cannot make in seconds (tests/realslurm/
test_gate_program.py runs the rest on the real slurmctld and slurmd 26.05): a run Slurm cut at its time limit is
judged as cut (exit 124, as timeout(1) says it), a job ended by anyone else (CANCELLED, NODE_FAIL) says nothing of
the node and is run again, and a pass that cannot read Slurm changes nothing. Slurm here is its stand-in
(tests/slurm_standin), the node held by the gate (held.py); the gate's jobs run on this machine."""

from __future__ import annotations

from pathlib import Path

from gate.held import NODE, by_admin, held
from slurm_standin import Runner, Slurm

from clusterforge.admission import records
from clusterforge.admission.verdict import Result
from clusterforge.gate.passes import Gate
from clusterforge.gate.store import Round, Store
from clusterforge.slurm import reservations

PLAN = {"nodes": {NODE: {"tests": [{"name": "allreduce", "timeout": 60}]}}}
CUT_SHORT = "# nccl-tests output, cut short\n"
SCRIPT = f"#!/bin/sh\necho '{CUT_SHORT.strip()}'\n"  # the test's output as far as it got


class CutAtItsLimit(Runner):
    """Each job runs its script, which prints what it got to, and Slurm ends it at its time limit: TIMEOUT, as
    slurmctld records a batch job it ended at its limit (SIGTERM). The stand-in's ``times_out`` runs no script, and a
    read of this test's output needs the script's directory and file."""

    def start(self, job, slurm) -> None:
        super().start(job, slurm)
        job.state, job.exit_code = "TIMEOUT", "0:15"


def gate(tmp_path: Path, slurm: Slurm, judged: list) -> Gate:
    def judge(test, node, output, exit_status):
        judged.append((output, exit_status))
        return [Result(node, test["name"], False, detail="cut at its bound of 60 s")] if exit_status == 124 else []
    return Gate(Store(str(tmp_path / "state")), PLAN, slurm, lambda test, nodes: SCRIPT, judge,
                str(tmp_path / "scripts"), log=lambda text: None, runs_dir=str(tmp_path / "runs"))


def test_a_run_cut_at_its_time_limit_is_judged_as_cut_and_fails_the_node(tmp_path):
    slurm, judged = held(runner=CutAtItsLimit()), []
    first = gate(tmp_path, slurm, judged)
    first.one_pass()   # submitted, and cut at its limit
    assert [a[0] for a in slurm.asked].count("sbatch") == 1
    first.one_pass()   # read and judged
    first.one_pass()   # decided
    assert judged == [(CUT_SHORT, 124)]
    drain = [a for a in slurm.asked if a[:2] == ["scontrol", "update"]]
    assert drain == [["scontrol", "update", "NodeName=gpu01", "State=DRAIN",
                      "Reason=cf:gate:allreduce cut at its bound of 60 s"]]


def test_a_job_ended_by_another_says_nothing_of_the_node_and_runs_again(tmp_path):
    slurm, judged = held(runner=Runner(never_ends={NODE})), []  # each test runs until someone ends it
    first = gate(tmp_path, slurm, judged)
    first.one_pass()
    ends = ([["scancel", "{job}"]],  # an admin cancels it: CANCELLED
            # the node fails under it (NODE_FAIL), and is back
            [["scontrol", "update", f"NodeName={NODE}", "State=DOWN", "Reason=not responding"],
             ["scontrol", "update", f"NodeName={NODE}", "State=RESUME"]])
    for end in ends:
        [running] = [j for j in slurm.jobs.values() if j.state == "RUNNING"]
        for argv in end:
            by_admin(slurm, *(word.format(job=running.job_id) for word in argv))
        slurm.answer_registration_requests()   # a node resumed registers again before it runs a job
        gate(tmp_path, slurm, judged).one_pass()  # a gate started afresh: the ended job is in its record
        gate(tmp_path, slurm, judged).one_pass()
    assert [j.state for j in slurm.jobs.values()] == ["CANCELLED", "NODE_FAIL", "RUNNING"]
    assert judged == []
    assert [a[0] for a in slurm.asked].count("sbatch") == 3
    assert not [a for a in slurm.asked if a[0] in ("srun", "scancel") or a[:2] == ["scontrol", "update"]]


def test_a_pass_that_cannot_read_slurm_changes_nothing(tmp_path):
    slurm, judged = held(), []
    slurm.down = True
    said: list[str] = []
    blind = gate(tmp_path, slurm, judged)
    blind.log = said.append
    blind.one_pass()
    blind.one_pass()
    assert [a[0] for a in slurm.asked] == ["scontrol", "scontrol"]  # each pass stopped at its first read
    assert said == ["*: this pass reads nothing: scontrol -o show: exit 1: slurm_load_reservations error: Unable to "
                    "contact slurm controller (connect failure)"]  # said once, not at every pass
    assert not (tmp_path / "state").exists()


def test_the_gates_records_are_the_admin_machines_format_readable_by_others_and_its_rounds_are_roots(tmp_path):
    store = Store(str(tmp_path / "state"))
    kept = {"node": "gpu03", "test": "allreduce", "passed": True, "value": 471.0, "unit": "GB/s", "floor": 460.0,
            "detail": "", "reason": "allreduce 471 GB/s >= 460", "source": "gate", "time": "2026-11-27T04:00:00Z"}
    store.append("gpu03", [kept])
    store.save("gpu03", Round("cf-gate-new-gpu03", "new"))
    assert records.read(tmp_path / "state" / "records", "gpu03") == store.records("gpu03") == [kept]
    assert (tmp_path / "state" / "records" / "gpu03.jsonl").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "state" / "held").stat().st_mode & 0o777 == 0o700


def test_the_plan_is_read_after_the_holds_so_a_node_held_after_its_plan_was_written_is_tested(tmp_path):
    """The deploy writes the plan listing a new node, then holds it (roles/gate.py). A pass that read the plan before
    that write and the holds after the hold saw a held node its plan lacked, and released it untested (seen growing
    the test cluster: benchmarks/scale.py). The plan is read once the pass has read the holds."""
    slurm, judged = held(), []
    asked_before_read: list[list[list[str]]] = []

    def reload() -> dict:
        asked_before_read.append([list(a) for a in slurm.asked])
        return PLAN  # the plan as written before the hold: it lists the node

    stale = {"nodes": {"gpu99": PLAN["nodes"][NODE]}}  # what a pass read before the deploy wrote the new plan
    first = Gate(Store(str(tmp_path / "state")), stale, slurm, lambda test, nodes: SCRIPT,
                 lambda *a: judged.append(a) or [], str(tmp_path / "scripts"), log=lambda text: None,
                 runs_dir=str(tmp_path / "runs"), reload=reload)
    first.one_pass()
    assert reservations.show_argv() in asked_before_read[0]
    assert [a[0] for a in slurm.asked].count("sbatch") == 1  # tested
    assert not [a for a in slurm.asked if a[:2] == ["scontrol", "delete"]]  # not released
