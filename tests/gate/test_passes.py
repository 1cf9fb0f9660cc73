"""gate/passes.py on the ends of a test that the real-Slurm tier cannot make in seconds (tests/realslurm/
test_gate_program.py runs the rest on the real slurmctld and slurmd 26.05): a run Slurm cut at its time limit is
judged as cut (exit 124, as timeout(1) says it), a job ended by anyone else (CANCELLED, NODE_FAIL) says nothing of
the node and is run again, and a pass that cannot read Slurm changes nothing. Slurm here is a stand-in that answers
the gate's commands with the text the real ones print (lines as slurmctld 26.05 printed them), and fails anything
else."""

from __future__ import annotations

from pathlib import Path

from clusterforge.admission import records
from clusterforge.admission.verdict import Result
from clusterforge.gate.passes import Gate
from clusterforge.gate.store import Round, Store
from clusterforge.slurm.commands import Answer

FIXTURES = Path(__file__).parents[1] / "health" / "fixtures"
HOLD = (FIXTURES / "scontrol-show-reservation-26.05.txt").read_text().split("\n\n")[0].replace("gpu-b02", "gpu01")
NODES = "gpu01|all*|infinite|maint|idle+maintenance+reserved|(null)|(null)|none|\n"  # slurm/nodes.py's listing
PLAN = {"nodes": {"gpu01": {"tests": [{"name": "allreduce", "timeout": 60}]}}}


def job(job_id: int, state: str, exit_code: str) -> str:
    return (f"JobId={job_id} JobName=cf-gate:allreduce UserId=root(0) GroupId=root(0) JobState={state} "
            f"Reason=None ExitCode={exit_code} Partition=all Reservation=cf-gate-new-gpu01 NodeList=gpu01 "
            f"StdOut=/var/tmp/cf-gate-{job_id}.out")


class Slurm:
    """The gate's commands and what they print: holds, jobs, nodes; what it submitted and read."""

    def __init__(self) -> None:
        self.jobs: list[str] = []
        self.asked: list[list[str]] = []
        self.down = False

    def __call__(self, argv, timeout) -> Answer:
        argv = list(argv)
        self.asked.append(argv)
        if self.down:
            return Answer(1, "", "slurm_load_jobs error: Unable to contact slurm controller (connect failure)")
        if argv == ["scontrol", "-o", "show", "reservation"]:
            return Answer(0, " ".join(HOLD.split()) + "\n", "")
        if argv == ["scontrol", "-o", "show", "job"]:
            return Answer(0, "\n".join(self.jobs) + "\n" if self.jobs else "No jobs in the system\n", "")
        if argv[0] == "sinfo":
            return Answer(0, NODES, "")
        if argv[0] == "sbatch":
            return Answer(0, f"{len(self.jobs) + 1}\n", "")
        if argv[0] == "srun":  # the read back of a test's output
            return Answer(0, "# nccl-tests output, cut short\n", "")
        if argv[:3] == ["scontrol", "show", "node"]:  # read again just before a drain
            return Answer(0, "NodeName=gpu01 State=IDLE+MAINTENANCE+RESERVED Reason=(null)\n", "")
        if argv[:2] == ["scontrol", "update"]:
            return Answer(0, "", "")
        return Answer(1, "", f"not a command the gate runs: {argv}")


def gate(tmp_path: Path, slurm: Slurm, judged: list) -> Gate:
    def judge(test, node, output, exit_status):
        judged.append((output, exit_status))
        return [Result(node, test["name"], False, detail="cut at its bound of 60 s")] if exit_status == 124 else []
    return Gate(Store(str(tmp_path / "state")), PLAN, slurm, lambda test, nodes: "#!/bin/sh\n", judge,
                str(tmp_path / "scripts"), log=lambda text: None)


def test_a_run_cut_at_its_time_limit_is_judged_as_cut_and_fails_the_node(tmp_path):
    slurm, judged = Slurm(), []
    first = gate(tmp_path, slurm, judged)
    first.one_pass()
    assert [a[0] for a in slurm.asked].count("sbatch") == 1
    slurm.jobs = [job(1, "TIMEOUT", "0:15")]  # as slurmctld records a batch job it ended at its limit (SIGTERM)
    first.one_pass()   # read and judged
    first.one_pass()   # decided
    assert judged == [("# nccl-tests output, cut short\n", 124)]
    drain = [a for a in slurm.asked if a[:2] == ["scontrol", "update"]]
    assert drain == [["scontrol", "update", "NodeName=gpu01", "State=DRAIN",
                      "Reason=cf:gate:allreduce cut at its bound of 60 s"]]


def test_a_job_ended_by_another_says_nothing_of_the_node_and_runs_again(tmp_path):
    slurm, judged = Slurm(), []
    first = gate(tmp_path, slurm, judged)
    first.one_pass()
    for number, (state, code) in enumerate((("CANCELLED", "0:15"), ("NODE_FAIL", "0:0")), start=1):
        slurm.jobs.append(job(number, state, code))
        gate(tmp_path, slurm, judged).one_pass()  # a gate started afresh: the ended job is in its record
        gate(tmp_path, slurm, judged).one_pass()
    assert judged == []
    assert [a[0] for a in slurm.asked].count("sbatch") == 3
    assert not [a for a in slurm.asked if a[0] in ("srun", "scancel") or a[:2] == ["scontrol", "update"]]


def test_a_pass_that_cannot_read_slurm_changes_nothing(tmp_path):
    slurm, judged = Slurm(), []
    slurm.down = True
    said: list[str] = []
    blind = gate(tmp_path, slurm, judged)
    blind.log = said.append
    blind.one_pass()
    blind.one_pass()
    assert [a[0] for a in slurm.asked] == ["scontrol", "scontrol"]  # each pass stopped at its first read
    assert said == ["*: this pass reads nothing: scontrol -o show: exit 1: slurm_load_jobs error: Unable to contact "
                    "slurm controller (connect failure)"]  # said once, not at every pass
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
