"""`clusterforge accept`'s run (accept/run.py) against Slurm's stand-in (tests/slurm_standin, with accept's own
around it in cluster.py): each test's real job script (admission.tests.job_script) run by bash with the testbed's
stand-in tools, their output judged by admission.tests.judge. Eight nodes under two leaves: a slow node found in
round 1, a slow rail found by bisection and named, a hung run cut at its bound, a job that never ends cancelled, an
admin's drain left alone, the cf-accept reservation made and deleted, the records written, and --dry-run changing
nothing."""

from __future__ import annotations

import json
import math
import shlex

import pytest
from accept.cluster import TOOLS, Cluster
from slurm_standin import Partition

from clusterforge.admission import records, tests
from clusterforge.accept import report
from clusterforge.accept.report import node_rows as report_rows
from clusterforge.accept.run import Accept, Stopped
from clusterforge.reach.controller import Controller
from clusterforge.accept.bisect import bound
from clusterforge.exporter import records as exporter_records
from clusterforge.gate.store import Store
from clusterforge.slurm.commands import Answer

NODES = [f"gpu{i:02d}" for i in range(1, 9)]
LEAVES = [("leaf1", NODES[:4]), ("leaf2", NODES[4:])]
HCAS = ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
FLOORS = {"allreduce": 460, "allreduce_multi": 350, "host_to_device": 48, "device_to_device": 335}
ADMIN = "RMA: fan (ada)"


def entries(names=("dcgm", "nvbandwidth", "allreduce", "allreduce_multi"), timeout=None):
    found = tests.entries(names, bin_dir=str(TOOLS), image=None, gpus=8, hcas=HCAS, dcgm_level=1, floors=FLOORS,
                          budget=1800, ib_cuda=False)
    return [{**e, "timeout": timeout} if timeout else e for e in found]


def slurm(tmp_path, results=None, drained=None, busy=(), **kwargs):
    """The eight nodes idle, but those an admin ``drained`` (node: reason) and those running a user's job (``busy``:
    on some of their CPUs, so sinfo lists them mixed)."""
    file = tmp_path / "home" / ".clusterforge-testbed" / "accept.json"
    file.parent.mkdir(parents=True)
    file.write_text(json.dumps(results or {}))
    cluster = Cluster.of(NODES, tmp_path, **kwargs)
    for name, reason in (drained or {}).items():
        cluster.drain(name, reason)
    for name in busy:
        cluster.busy(name)
    return cluster


def accept(standin, tmp_path, plan=None, **kwargs):
    said = []
    run = Accept(plan or {n: entries() for n in NODES}, LEAVES, {n: HCAS for n in NODES},
                 Controller("ctl", standin.controller), standin.node, said.append, tests.job_script, tests.judge,
                 tmp_path / "records", sleep=lambda s: None, output_base=standin.output_base, **kwargs)
    return run, said


def rounds(said):
    return [line for line in said if line.startswith("round ")]


def test_a_healthy_cluster_passes_in_three_rounds_and_every_result_is_recorded(tmp_path):
    standin = slurm(tmp_path)
    run, said = accept(standin, tmp_path)
    report = run.run()
    assert report.exit_status == 0 and report.findings == [] and report.tested == NODES
    assert [line.split(":")[0:2] for line in rounds(said)] == [
        ["round 1", " single-node tests on 8 nodes"], ["round 2", " allreduce_multi across 2 leaves"],
        ["round 3", " allreduce_multi across the spine (8 nodes)"]]
    assert rounds(said)[0].startswith("round 1: single-node tests on 8 nodes: 24 runs, 24 passed")
    names = [job.name for job in standin.submitted]
    assert names.count("cf-accept:allreduce_multi") == 3 and names.count("cf-accept:dcgm") == 8
    kept = records.read(tmp_path / "records", "gpu03")
    # dcgm, nvbandwidth's three cells, allreduce; the leaf's run and the spine's, each the node's too
    assert [r["test"] for r in kept] == ["dcgm", "nvbandwidth:h2d", "nvbandwidth:d2h", "nvbandwidth:d2d_read",
                                         "allreduce", "allreduce_multi", "allreduce_multi"]
    assert kept[4]["value"] == 478.52 and kept[4]["source"] == "accept"
    assert kept[5]["group"] == "gpu01+gpu02+gpu03+gpu04" and kept[6]["group"] == "+".join(NODES)
    assert not any("State=DRAIN" in c for c in standin.commands)


def test_a_node_slow_alone_is_found_by_its_single_node_test_and_drained_with_the_number(tmp_path):
    standin = slurm(tmp_path, {"gpu03": {"allreduce": 300}})
    run, said = accept(standin, tmp_path)
    report = run.run()
    assert report.exit_status == 1
    [finding] = report.findings
    assert (finding.node, finding.drain.reason) == ("gpu03", "cf:accept:allreduce 300 GB/s < 460")
    assert standin.state("gpu03") == ("drained", "cf:accept:allreduce 300 GB/s < 460")
    # It takes no part in the multi-node runs: its leaf runs with the other three.
    leaf = [j for j in standin.submitted if j.name == "cf-accept:allreduce_multi"][0]
    assert leaf.nodes == ["gpu01", "gpu02", "gpu04"]
    assert "gpu03 drained: 'cf:accept:allreduce 300 GB/s < 460'" in said


def test_a_node_failing_a_single_node_test_is_run_again_alone_before_its_drain(tmp_path):
    """gpu03's allreduce is slow in round 1 only (intermittent), gpu04's every time; an admin holds gpu06. Before,
    both were drained after their one run. Now each runs its failed test once more alone, in one round: gpu03 passes
    and is reported flaky with both numbers, not drained, and kept out of the multi-node runs; gpu04 fails again and
    is drained with the confirming run's figure; the admin's drain is untouched."""
    standin = slurm(tmp_path, {"gpu03": {"allreduce": 300}, "gpu04": {"allreduce": 300}},
                    drained={"gpu06": ADMIN})
    results = tmp_path / "home" / ".clusterforge-testbed" / "accept.json"
    said = []

    def say(line):
        said.append(line)
        if line.startswith("round 1: "):  # the single-node round ended: gpu03 healthy from now on, gpu04 slower
            results.write_text(json.dumps({"gpu04": {"allreduce": 280}}))

    run = Accept({n: entries(("allreduce", "allreduce_multi")) for n in NODES}, LEAVES, {n: HCAS for n in NODES},
                 Controller("ctl", standin.controller), standin.node, say, tests.job_script, tests.judge,
                 tmp_path / "records", sleep=lambda s: None, output_base=standin.output_base)
    done = run.run()
    assert standin.state("gpu03") == ("idle", ""), said
    assert standin.state("gpu04") == ("drained", "cf:accept:allreduce 280 GB/s < 460"), said
    assert standin.state("gpu06") == ("drained", ADMIN)
    assert [(f.node, f.drain.reason) for f in done.findings] == [("gpu04", "cf:accept:allreduce 280 GB/s < 460")]
    [flaky] = done.flaky
    assert (flaky.node, flaky.test) == ("gpu03", "allreduce")
    assert flaky.figures == ("300 GB/s < 460 (gpu03)", "478.52 GB/s >= 460 (gpu03)")
    assert done.exit_status == 1
    assert rounds(said)[1].startswith("round 2: confirming gpu03 alone (allreduce), gpu04 alone (allreduce): 2 runs, "
                                      "1 passed; failed: gpu04 (allreduce 280 GB/s < 460)"), said
    assert "gpu03 failed allreduce alone, passed alone: flaky, not drained" in said
    assert "gpu04 failed allreduce alone, failed again alone: slow" in said
    # Both runs recorded, as the first is.
    for node, runs in {"gpu03": [(False, 300), (True, 478.52)], "gpu04": [(False, 300), (False, 280)]}.items():
        kept = records.read(tmp_path / "records", node)
        assert [(r["passed"], r["value"]) for r in kept if r["test"] == "allreduce"] == runs, kept
    # Neither takes part in the multi-node runs.
    assert not any({"gpu03", "gpu04"} & set(j.nodes) for j in standin.submitted if j.name.endswith("_multi"))
    rows = {row[0]: row for row in report_rows(done)}
    assert rows["gpu03"][1:] == ("FLAKY", "allreduce flaky: 300 GB/s < 460 (gpu03), then 478.52 GB/s >= 460 (gpu03) "
                                          "(not drained)")
    assert rows["gpu04"][1:] == ("FOUND", "cf:accept:allreduce 280 GB/s < 460")
    lines = report.table(done).splitlines()
    assert lines[lines.index("single-node tests run again:") + 1:][:2] == [
        "  confirmed: gpu03 failed allreduce alone, passed alone: flaky, not drained",
        "  confirmed: gpu04 failed allreduce alone, failed again alone: slow"]
    body = json.loads(report.as_json("prod", done))
    assert body["flaky"] == [{"node": "gpu03", "test": "allreduce", "figures": list(flaky.figures),
                              "reason": flaky.reason}]
    assert {c["node"]: (c["test"], c["verdict"], c["peer"], c["reruns"]) for c in body["confirmations"]} == {
        "gpu03": ("allreduce", "flaky", None, [{"beside": None, "beside_passed": None, "passed": True}]),
        "gpu04": ("allreduce", "slow", None, [{"beside": None, "beside_passed": None, "passed": False}])}


def test_a_slow_rail_is_bisected_to_its_node_within_the_bound_and_its_hca_named(tmp_path):
    standin = slurm(tmp_path, {"gpu06": {"hca": {"mlx5_4": 190}}})
    run, said = accept(standin, tmp_path)
    report = run.run()
    assert report.exit_status == 1
    [bisection] = report.bisections
    assert bisection.nodes == ["gpu06"] and bisection.rounds <= bound(4)
    [finding] = report.findings
    assert finding.node == "gpu06" and finding.rail == "mlx5_4"
    assert finding.drain.reason.startswith("cf:accept:allreduce_multi ")
    # Found beside gpu02, confirmed beside gpu01 (which passed two runs by then) before the drain: that run's figure.
    assert "gpu06 failed beside gpu02, failed beside gpu01 (passed 2 runs): slow" in said
    assert finding.drain.reason.endswith("GB/s < 350 (gpu06+gpu01) rail mlx5_4")
    assert standin.state("gpu06") == ("drained", finding.drain.reason)
    [rail] = report.rails
    assert rail.slow == ["mlx5_4"] and "gpu06: slow rail mlx5_4 (beside gpu01)" in said
    rail_jobs = [j for j in standin.submitted if "export" in j.options]
    assert sorted(j.options["export"] for j in rail_jobs) == sorted(f"ALL,NCCL_IB_HCA={h}" for h in HCAS)
    # The leaf's failure explained, the spine runs across every node but the one found; each round said as it ended.
    [confirmed] = report.confirmations
    assert len(rounds(said)) == report.rounds == 2 + bisection.rounds + len(confirmed.reruns) + 1 + 1 == 7
    assert rounds(said)[-1].startswith("round 7: allreduce_multi across the spine (7 nodes): 1 run, 1 passed")
    assert "gpu06" not in standin.submitted[-1].nodes


def test_a_hung_multi_node_run_is_cut_at_its_bound_counted_a_failure_and_its_node_found(tmp_path):
    standin = slurm(tmp_path, {"gpu07": {"hang": 600}})
    # 3 s: a healthy stand-in run under srun's stand-in takes well under that, even on a loaded 2-core machine (with 1
    # s, one healthy run in the full suite's load was cut, and the extra confirming runs made that likelier).
    plan = {n: [e for e in entries(("allreduce_multi",), timeout=3)] for n in NODES}
    run, said = accept(standin, tmp_path, plan=plan)
    report = run.run()
    [finding] = report.findings
    assert finding.node == "gpu07"
    assert "cut at its bound of 3 s" in finding.reason
    assert "cut at its bound of 3 s (hung or too slow)" in rounds(said)[0]


def test_a_job_slurm_never_ends_is_cancelled_past_its_limit_and_counted_a_failure(tmp_path):
    """Cut at its bound, it is run once more alone (cut again) before the drain, as any failed single-node test."""
    standin = slurm(tmp_path, never_ends={"gpu02"})
    plan = {n: entries(("allreduce",), timeout=60) for n in NODES}
    run, said = accept(standin, tmp_path, plan=plan)
    report = run.run()
    [finding] = report.findings
    assert finding.node == "gpu02" and finding.reason == "allreduce did not finish within 60 s (cancelled)"
    stuck = [j for j in standin.submitted if j.nodes == ["gpu02"]]
    assert len(stuck) == 2 and all(f"scancel {j.job_id}" in standin.commands and j.state == "CANCELLED"
                                   for j in stuck)
    assert rounds(said)[1].startswith("round 2: confirming gpu02 alone (allreduce): 1 run, 0 passed; failed: gpu02 "
                                      "(allreduce did not finish within 60 s (cancelled))"), said
    kept = records.read(tmp_path / "records", "gpu02")
    assert [(r["passed"], r["detail"]) for r in kept] == [(False, "did not finish within 60 s (cancelled)")] * 2


def test_a_node_someone_else_holds_is_left_alone_named_and_never_drained_over(tmp_path):
    standin = slurm(tmp_path, {"gpu05": {"allreduce": 300}}, drained={"gpu05": ADMIN}, busy=["gpu02"])
    standin.hold("cf-gate-new-gpu08", "gpu08")
    run, said = accept(standin, tmp_path)
    report = run.run()
    assert report.left_alone == {"gpu02": "mixed", "gpu05": f"drained, {ADMIN!r}",
                                 "gpu08": "in reservation cf-gate-new-gpu08"}
    assert "gpu05 left alone: drained, 'RMA: fan (ada)'" in said
    assert not any({"gpu02", "gpu05", "gpu08"} & set(j.nodes) for j in standin.submitted)
    assert standin.state("gpu05") == ("drained", ADMIN)
    assert report.exit_status == 2  # nothing found, but not every node could be tested


def test_an_admins_drain_set_during_the_run_is_not_drained_over(tmp_path):
    standin = slurm(tmp_path, {"gpu03": {"allreduce": 300}})
    run, said = accept(standin, tmp_path)
    judge = run.judge
    judged = []

    def admin_drains_meanwhile(entry, node, *rest):
        # Once gpu03's confirming run (its allreduce, again alone) has ended: Slurm starts no job on a drained node,
        # so a drain before that run would hold it pending.
        judged.append((node, entry["name"]))
        if judged.count(("gpu03", "allreduce")) == 2:
            standin.drain("gpu03", ADMIN)
        return judge(entry, node, *rest)

    run.judge = admin_drains_meanwhile
    report = run.run()
    assert [f.node for f in report.findings] == ["gpu03"]
    assert standin.state("gpu03") == ("drained", ADMIN)
    assert (f"gpu03 left as it is, held by another (drained, {ADMIN!r}): not drained for "
            "'cf:accept:allreduce 300 GB/s < 460'") in said


def test_a_run_whose_node_another_drains_before_it_starts_is_given_up_and_leaves_no_record(tmp_path):
    """Drained once its first allreduce failed, before the confirming run: Slurm keeps that run waiting for ever
    (ReqNodeNotAvail). Accept gives it up, cancelled, and never drains over the admin's drain."""
    standin = slurm(tmp_path, {"gpu03": {"allreduce": 300}})
    run, said = accept(standin, tmp_path)
    judge = run.judge

    def admin_drains_meanwhile(entry, node, *rest):
        if (node, entry["name"]) == ("gpu03", "allreduce"):
            standin.drain("gpu03", ADMIN)
        return judge(entry, node, *rest)

    run.judge = admin_drains_meanwhile
    report = run.run()
    [confirming] = [j for j in standin.submitted if j.nodes == ["gpu03"] and j.name == "cf-accept:allreduce"][1:]
    assert confirming.state == "CANCELLED" and confirming.started is None
    assert any("never started (Slurm: ReqNodeNotAvail" in line for line in said), said
    assert standin.state("gpu03") == ("drained", ADMIN)
    assert [r["passed"] for r in records.read(tmp_path / "records", "gpu03") if r["test"] == "allreduce"] == [False]


def test_with_reserve_the_jobs_run_inside_cf_accept_which_is_deleted_before_the_drains(tmp_path):
    standin = slurm(tmp_path, {"gpu04": {"allreduce": 300}}, busy=["gpu01"])
    run, said = accept(standin, tmp_path, reserve=True, wait_s=0)
    report = run.run()
    create = next(c for c in standin.commands if "scontrol create reservation" in c)
    assert "ReservationName=cf-accept" in create and "Flags=MAINT,IGNORE_JOBS" in create
    assert "Nodes=gpu01,gpu02,gpu03,gpu04,gpu05,gpu06,gpu07,gpu08" in create
    # gpu01 still ran a user's job when the wait ran out: left alone, and nothing of accept's ran there.
    assert report.left_alone == {"gpu01": "still running jobs after 0 s"}
    assert all(j.options.get("reservation") == "cf-accept" for j in standin.submitted)
    assert standin.reserved == {}
    delete = standin.commands.index("scontrol delete ReservationName=cf-accept")
    drain = next(i for i, c in enumerate(standin.commands) if "State=DRAIN" in c)
    assert delete < drain and standin.state("gpu04")[0] == "drained"
    assert said[-2:] == ["reservation cf-accept deleted", "gpu04 drained: 'cf:accept:allreduce 300 GB/s < 460'"]


def test_the_reservation_is_deleted_and_the_jobs_cancelled_when_the_run_is_interrupted(tmp_path):
    standin = slurm(tmp_path, never_ends={"gpu01"})
    run, _ = accept(standin, tmp_path, reserve=True)

    def interrupted(seconds):
        raise KeyboardInterrupt

    run.sleep = interrupted
    with pytest.raises(KeyboardInterrupt):
        run.run()
    assert standin.reserved == {}
    assert [j.state for j in standin.submitted if j.nodes == ["gpu01"]][0] == "CANCELLED"


def test_dry_run_lists_every_job_with_its_sbatch_line_and_script_and_changes_nothing(tmp_path):
    standin = slurm(tmp_path, drained={"gpu05": ADMIN})
    run, _ = accept(standin, tmp_path, reserve=True)
    planned = run.dry_run()
    assert [title for title, _ in planned] == ["single-node tests on 7 nodes", "allreduce_multi across 2 leaves",
                                               "allreduce_multi across the spine (7 nodes)"]
    first = planned[0][1][0]
    assert first.argv() == ["sbatch", "--parsable", "--job-name=cf-accept:dcgm", "--reservation=cf-accept",
                            f"--output={run.output_dir}/%j.out"]
    assert run.output_dir.startswith(standin.output_base + "/run-")
    assert "#SBATCH --nodelist=gpu01" in first.script and "dcgmi diag -r 1 -j" in first.script
    assert planned[1][1][1].nodes == ("gpu06", "gpu07", "gpu08")
    assert not any(c.startswith(("sbatch", "scancel")) or "reservation Reservation" in c or "State=DRAIN" in c
                   or "scontrol create" in c for c in standin.commands)
    assert standin.slurm.jobs == {} and standin.reserved == {}
    assert not (tmp_path / "records").exists() and standin.node_commands == []


def test_the_submit_command_carries_the_script_to_sbatch_whole():
    job = Accept({}, [], {}, None, None, None, tests.job_script, tests.judge, None).job(entries()[3], NODES[:2])
    command = job.submit_command()
    head, _, body = command.partition("\n")
    assert shlex.split(head.split(" <<")[0]) == job.argv()
    assert body.endswith("\nCF_SCRIPT_END") and "export NCCL_ALGO=Ring" in body


def test_the_table_and_the_json_say_what_was_found_where_and_how(tmp_path):
    standin = slurm(tmp_path, {"gpu06": {"hca": {"mlx5_4": 190}}}, drained={"gpu08": ADMIN})
    run, _ = accept(standin, tmp_path, plan={n: entries(("allreduce", "allreduce_multi")) for n in NODES})
    done = run.run()
    lines = report.table(done).splitlines()
    assert lines[0].split() == ["NODE", "RESULT", "DETAIL"]
    rows = {line.split()[0]: line for line in lines[1:9]}
    # allreduce, its leaf's run, two bisection runs it padded (beside gpu07, then gpu05), the spine's run
    assert rows["gpu01"].split()[1:] == ["passed", "5", "results"]
    assert rows["gpu06"].split(None, 2)[1:] == [
        "FOUND", "cf:accept:allreduce_multi 182.4 GB/s < 350 (gpu06+gpu01) rail mlx5_4"]
    assert rows["gpu08"].split(None, 1)[1] == f"not tested  drained, {ADMIN!r}"
    assert "  gpu05..gpu07: found gpu06 (gpu06+gpu02) (2 rounds)" in lines
    assert "  confirmed: gpu06 failed beside gpu02, failed beside gpu01 (passed 3 runs): slow" in lines
    assert "  gpu06: slow rail mlx5_4 (beside gpu01)" in lines
    assert lines[-1] == "findings (7 rounds, exit 1)"
    body = json.loads(report.as_json("prod", done))
    assert body["status"] == 1 and body["rounds"] == 7
    assert body["findings"] == [{"node": "gpu06", "test": "allreduce_multi", "group": "gpu06+gpu01", "rail": "mlx5_4",
                                 "reason": "cf:accept:allreduce_multi 182.4 GB/s < 350 (gpu06+gpu01) rail mlx5_4"}]
    assert body["confirmations"][0]["verdict"] == "slow" and body["confirmations"][0]["reruns"] == [
        {"beside": "gpu01", "beside_passed": 3, "passed": False}]
    assert body["flaky"] == []
    assert body["rails"] == [{"node": "gpu06", "peer": "gpu01", "slow": ["mlx5_4"]}]
    assert body["results"] == done.results and len(body["nodes"]) == 8


def test_the_dry_run_prints_each_round_with_each_jobs_sbatch_line_and_script(tmp_path):
    standin = slurm(tmp_path)
    run, _ = accept(standin, tmp_path, plan={n: entries(("allreduce_multi",)) for n in NODES})
    text = report.dry_run(run.dry_run(), run.report.left_alone)
    assert text.startswith("round 1: allreduce_multi across 2 leaves: 2 jobs\n  $ sbatch --parsable "
                           f"--job-name=cf-accept:allreduce_multi --output={run.output_dir}/%j.out <<'")
    assert "    #SBATCH --nodelist=gpu05,gpu06,gpu07,gpu08" in text
    assert "round 2: allreduce_multi across the spine (8 nodes): 1 job" in text
    assert "a failed single-node test is run once more alone, in one more round, before its node is drained" in text
    body = json.loads(report.dry_run_json("prod", run.dry_run(), {}))
    assert [len(r["jobs"]) for r in body["rounds"]] == [2, 1]
    assert body["rounds"][1]["jobs"][0]["nodes"] == NODES


def test_with_reserve_a_cf_accept_left_by_another_run_stops_it_before_anything_is_submitted(tmp_path):
    standin = slurm(tmp_path)
    standin.hold("cf-accept", "gpu01,gpu02")
    run, _ = accept(standin, tmp_path, reserve=True)
    with pytest.raises(Stopped, match=r"^ctl: the reservation cf-accept exists already: another accept runs, or one "
                                      r"was killed; .* delete it with `scontrol delete ReservationName=cf-accept`"):
        run.run()
    assert standin.slurm.jobs == {} and standin.reserved == {"cf-accept": "gpu01,gpu02"}


def test_a_job_slurm_ends_at_its_time_limit_is_counted_a_failure(tmp_path):
    standin = slurm(tmp_path, times_out={"gpu04"})
    run, _ = accept(standin, tmp_path, plan={n: entries(("allreduce",), timeout=240) for n in NODES})
    [finding] = run.run().findings
    assert (finding.node, finding.reason) == ("gpu04", "allreduce did not finish within 240 s (Slurm's time limit)")


def test_two_failing_leaves_are_bisected_together(tmp_path):
    standin = slurm(tmp_path, {"gpu02": {"hca": {"mlx5_0": 100}}, "gpu07": {"hca": {"mlx5_9": 100}}})
    run, said = accept(standin, tmp_path, plan={n: entries(("allreduce_multi",)) for n in NODES})
    report = run.run()
    assert sorted(f.node for f in report.findings) == ["gpu02", "gpu07"]
    assert {f.node: f.rail for f in report.findings} == {"gpu02": "mlx5_0", "gpu07": "mlx5_9"}
    [bisection] = report.bisections
    # No node was known good after the leaves' round: the first halves clear some, then pairs beside them; both
    # leaves in the same rounds, both nodes' rails in one.
    assert bisection.rounds <= bound(4)
    assert "leaf1, leaf2: found gpu02 (gpu02+gpu04), gpu07 (gpu07+gpu05); more than one bad node in 2 rounds" in said
    # Each confirmed beside a node that passed two runs, neither of the nodes that padded them, in one round.
    assert ("round 4: confirming gpu02 beside gpu03, gpu07 beside gpu06, gpu04 beside gpu01, gpu05 beside gpu08: "
            "4 runs, 2 passed; failed: gpu02+gpu03") in " ".join(said)
    assert sum(line.startswith(f"round {1 + bisection.rounds + 2}: the rails of gpu02 beside gpu03, gpu07 beside "
                               "gpu06, one HCA each: 16 runs, 14 passed") for line in said) == 1


def test_each_rounds_records_are_added_to_the_gates_on_the_controller_where_the_exporter_reads_them(tmp_path):
    """accept's append command run by a real shell on the stand-in's controller: the gate's store and the Slurm
    exporter's reader see accept's results there, the same lines as here."""
    standin = slurm(tmp_path)
    run, _ = accept(standin, tmp_path, controller_records=records.ON_CONTROLLER)
    assert run.run().exit_status == 0
    assert sum(records.ON_CONTROLLER in c for c in standin.commands) == 3  # one command a round, every node's lines
    assert records.read_all(standin.controller_records) == records.read_all(tmp_path / "records")
    assert [r["test"] for r in Store(str(standin.controller_records.parent)).records("gpu03")][-2:] == [
        "allreduce_multi", "allreduce_multi"]
    seen = {(s.standing.node, s.standing.test): s.standing for s in
            exporter_records.read(str(standin.controller_records), str(tmp_path / "no-plan.json"))}
    assert seen["gpu03", "allreduce"].value == 478.52 and seen["gpu03", "allreduce"].baseline == 478.52


def test_a_controller_that_refuses_the_records_is_said_and_the_run_goes_on_with_them_kept_here(tmp_path):
    standin = slurm(tmp_path)

    def controller(command):
        if records.ON_CONTROLLER in command:
            return Answer(1, "", "mkdir: cannot create directory: Read-only file system\n")
        return standin.controller(command)

    said = []
    run = Accept({n: entries() for n in NODES}, LEAVES, {n: HCAS for n in NODES}, Controller("ctl", controller),
                 standin.node, said.append, tests.job_script, tests.judge, tmp_path / "records", sleep=lambda s: None,
                 controller_records="/var/lib/clusterforge/gate/records", output_base=standin.output_base)
    assert run.run().exit_status == 0
    refused = [line for line in said if "could not be added" in line]
    assert len(refused) == 3 and refused[0] == (
        "this round's records could not be added to /var/lib/clusterforge/gate/records on the controller (exit 1: "
        "mkdir: cannot create directory: Read-only file system): the monitoring does not see them (they are kept "
        "here)")
    assert len(records.read(tmp_path / "records", "gpu03")) == 7


def test_an_intermittent_node_that_pads_a_healthy_nodes_run_gets_the_healthy_node_blamed_never_drained(tmp_path):
    """gpu04 has a slow rail, so leaf1 fails; leaf2 passes, and gpu05, known good from then on, turns slow (an
    intermittent HCA). Bisecting leaf1 pads gpu03's half with gpu05: gpu03 fails beside it, and was drained for it
    before. Now each node blamed runs again before its drain: gpu03 passes beside another node while gpu05 fails
    again, so gpu05 is reported flaky with its numbers and neither is drained; gpu04 fails again beside a node that
    passed two runs and is drained."""
    standin = slurm(tmp_path, {"gpu04": {"hca": {"mlx5_4": 190}}})
    results = tmp_path / "home" / ".clusterforge-testbed" / "accept.json"
    said = []

    def say(line):
        said.append(line)
        if line.startswith("round 1: "):  # the leaves' round ended: gpu05 passed once; slow from now on
            slow = {"gpu04": {"hca": {"mlx5_4": 190}}, "gpu05": {"hca": {h: 190 for h in HCAS}}}
            results.write_text(json.dumps(slow))

    run = Accept({n: entries(("allreduce_multi",)) for n in NODES}, LEAVES, {n: HCAS for n in NODES},
                 Controller("ctl", standin.controller), standin.node, say, tests.job_script, tests.judge,
                 tmp_path / "records", sleep=lambda s: None, output_base=standin.output_base)
    report = run.run()
    assert standin.state("gpu03") == ("idle", ""), said
    assert standin.state("gpu05") == ("idle", ""), said
    assert [(f.node, f.rail) for f in report.findings] == [("gpu04", "mlx5_4")], said
    assert standin.state("gpu04") == ("drained", report.findings[0].drain.reason)
    confirmed = {c.node: c for c in report.confirmations}
    assert confirmed["gpu03"].verdict == "cleared" and confirmed["gpu03"].peer == "gpu05"
    assert confirmed["gpu04"].verdict == "slow" and confirmed["gpu04"].last.passes >= 2
    [flaky] = report.flaky
    assert flaky.node == "gpu05" and len(flaky.figures) == 3
    assert flaky.figures[0].endswith(">= 350 (gpu05+gpu06+gpu07+gpu08)") and "<" in flaky.figures[1]
    assert flaky.figures[1].endswith("(gpu03+gpu05)") and "< 350 (gpu05+" in flaky.figures[2]
    assert any(line.startswith("gpu03 failed beside gpu05, passed beside ") and line.endswith(
        "gpu05 is flaky, gpu03 is not drained") for line in said), said
    assert report.exit_status == 1
    rows = {row[0]: row for row in report_rows(report)}
    assert rows["gpu05"][1] == "FLAKY" and rows["gpu05"][2].endswith("(not drained)")
    assert rows["gpu03"][1] == "passed"
    # The spine ran without the flaky node, and gpu03 in it.
    spine = standin.submitted[-1]
    assert "gpu05" not in spine.nodes and "gpu03" in spine.nodes and spine.nodes != ["gpu05"]


PARTITIONS = {"gpu": Partition(NODES[:6], default=True), "big": Partition(NODES[6:])}


def test_a_node_outside_the_default_partition_is_tested_in_its_own_and_stops_nothing(tmp_path):
    """gpu07 and gpu08 are in the partition big only. A job that names no partition goes to the default (gpu), which
    slurmctld refuses for them: before, the first such sbatch stopped the whole run. Now each job names a partition
    all its nodes are in; leaf2 runs as its part in each partition, the spine across the partition holding most."""
    standin = slurm(tmp_path, {"gpu07": {"allreduce": 300}}, partitions=PARTITIONS)
    limits = [("gpu", NODES[:6], 3600.0, True), ("big", NODES[6:], math.inf, False)]
    run, said = accept(standin, tmp_path, plan={n: entries(("allreduce", "allreduce_multi")) for n in NODES},
                       partitions=limits)
    report = run.run()
    assert [(f.node, f.drain.reason) for f in report.findings] == [("gpu07", "cf:accept:allreduce 300 GB/s < 460")]
    assert standin.state("gpu07")[0] == "drained"
    partition = {tuple(j.nodes): j.options.get("partition") for j in standin.submitted}
    assert partition[("gpu07",)] == partition[("gpu08",)] == "big"
    assert partition[("gpu01",)] == "gpu"
    assert ["gpu01", "gpu02", "gpu03", "gpu04", "gpu05", "gpu06"] in [j.nodes for j in standin.submitted]
    assert report.tested == NODES and report.exit_status == 1


def test_a_partition_whose_max_time_is_too_short_for_a_job_is_passed_over_for_one_that_takes_it(tmp_path):
    limits = [("short", NODES, 60.0, True), ("long", NODES, 7200.0, False)]
    run, _ = accept(slurm(tmp_path), tmp_path, partitions=limits)
    assert run.partition_of(["gpu01"], 420) == "long" and run.partition_of(["gpu01"], 60) == "short"
    assert run.partition_of(["gpu01", "gpu02"], 10**6) == "short"   # none takes it: sbatch says why, named
    assert Accept({}, [], {}, None, None, None, tests.job_script, tests.judge, None).partition_of(["gpu01"], 1) is None


def test_the_cf_accept_reservation_ends_by_itself_after_the_most_the_run_can_take(tmp_path):
    """A killed accept --reserve (SIGKILL, a lost session) cannot delete cf-accept: before, it held the nodes for
    the year Slurm allows. Its Duration is now the most the run can take, and the output says so."""
    standin = slurm(tmp_path)
    run, said = accept(standin, tmp_path, reserve=True, wait_s=600)
    run.run()
    create = shlex.split(next(c for c in standin.commands if "scontrol create reservation" in c))
    [duration] = [a.split("=", 1)[1] for a in create if a.startswith("Duration=")]
    assert duration.isdigit(), duration   # minutes; before, "infinite" (a year)
    most = run.most_s(NODES)
    assert duration == str(math.ceil(most / 60))
    # The wait for users' jobs, each node's three single-node jobs one after another, and every multi-node round.
    assert 600 + 3 * 60 < most < 24 * 3600
    assert (f"reservation cf-accept lasts {duration} min at most (the most this run can take): deleted at the end, "
            "and should the run be killed, Slurm ends it by itself then") in said


def test_the_reservation_lasts_long_enough_for_each_single_node_test_to_be_run_again(tmp_path):
    """A failed single-node test runs once more before its drain: cf-accept must not end under that run."""
    run, _ = accept(slurm(tmp_path), tmp_path, plan={n: entries(("allreduce",), timeout=240) for n in NODES},
                    reserve=True)
    # allreduce's job: Slurm's limit 5 min (240 s and a minute), accept's 60 s grace past it; twice; the delete's wait.
    assert run.most_s(NODES) == 2 * (300 + 60) + 60
