"""`clusterforge check`'s records check: the gate's records read from the controller merged with accept's on this
machine, each node's last number per test against its baseline and its profile's median, and a finding for a node
more than the profile's falling_percent below either."""

from __future__ import annotations

import dataclasses
import json

import pytest
from golden_cases import PROD

from clusterforge.admission import records
from clusterforge.check.probes import Context, checks_for, perform
from clusterforge.reach.hosts import load
from clusterforge.slurm.commands import Answer


def result(node, test, value, passed=True, time="2026-11-27T04:00:00Z", source="gate"):
    return {"node": node, "test": test, "passed": passed, "value": value, "unit": "GB/s", "floor": 460.0,
            "detail": "", "time": time, "source": source}


@pytest.fixture
def valid(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    return load(PROD)[0]


def controller(valid):
    return next(m for m in valid.machines if m.name == valid.controller.name)


def check(valid, gate_lines, rc=0):
    seen = []

    def run(command: str) -> Answer:
        seen.append(command)
        return Answer(rc, "".join(json.dumps(r) + "\n" for r in gate_lines), "" if rc == 0 else "Permission denied")

    [found] = [c for c in checks_for(controller(valid), valid, smoke=False) if c.name == "records"]
    outcome = perform(found, Context(valid, controller(valid), run))
    assert seen and "/var/lib/clusterforge/gate/records" in seen[0]
    return outcome


def test_each_nodes_last_number_is_shown_against_its_baseline_and_median_merged_with_accepts(valid, tmp_path):
    gate = [result("gpu-node-001", "allreduce", 476.0), result("gpu-node-002", "allreduce", 470.0),
            result("gpu-node-003", "allreduce", 468.0)]
    # accept, on this machine, measured gpu-node-001 later: its last number is accept's.
    accepts = result("gpu-node-001", "allreduce", 440.0, time="2026-11-28T04:00:00Z", source="accept")
    records.append(records.directory("prod"), [accepts])
    outcome = check(valid, gate)
    assert outcome.host == "slurm-ctl01" and outcome.status == "ok"
    assert outcome.detail == ("gpu-node-001: allreduce 440 GB/s (baseline 476 (-7.6 %), median 468 (-6.0 %)); "
                              "gpu-node-002: allreduce 470 GB/s (baseline 470 (+0.0 %), median 468 (+0.4 %)); "
                              "gpu-node-003: allreduce 468 GB/s (baseline 468 (+0.0 %), median 468 (+0.0 %))")
    # accept appends its records on the controller too: the one result, read in both places, shows as before.
    assert check(valid, [*gate, accepts]).detail == outcome.detail


def test_a_node_more_than_the_set_share_below_is_a_finding_and_the_share_is_the_inventorys(valid):
    gate = [result("gpu-node-001", "allreduce", 476.0), result("gpu-node-002", "allreduce", 470.0),
            result("gpu-node-003", "allreduce", 468.0),
            result("gpu-node-001", "allreduce", 420.0, passed=False, time="2026-11-28T04:00:00Z")]
    outcome = check(valid, gate)
    assert [f.message for f in outcome.findings] == [
        "gpu-node-001 allreduce 420 GB/s is 11.8 % below its baseline 476 and 10.3 % below its profile's median 468 "
        "(more than the 10 % its profile dgx-h100 allows)"]
    plan = valid.admission["gpu-node-001"]
    looser = dataclasses.replace(plan, spec=plan.spec.model_copy(update={"falling_percent": 15.0}))
    lenient = dataclasses.replace(valid, admission={**valid.admission, "gpu-node-001": looser})
    assert check(lenient, gate).findings == ()


def test_no_records_yet_is_said_and_a_record_that_cannot_be_read_is_a_finding(valid):
    assert check(valid, []).detail == "no node has a record with a number yet"
    refused = check(valid, [], rc=1)
    assert [f.message for f in refused.findings] == [
        "`cat /var/lib/clusterforge/gate/records/*.jsonl` failed: exit 1: Permission denied"]
    broken = check(valid, [{"node": "gpu-node-001"}])
    assert [f.message for f in broken.findings] == [
        "slurm-ctl01:/var/lib/clusterforge/gate/records:1: not a result (it needs node, test, passed, time)"]


def test_the_records_check_runs_on_the_controller_only_where_a_profile_has_admission(valid):
    assert "records" in [c.name for c in checks_for(controller(valid), valid, smoke=False)]
    node = next(m for m in valid.machines if m.name == "gpu-node-001")
    assert "records" not in [c.name for c in checks_for(node, valid, smoke=False)]
    without = dataclasses.replace(valid, admission={})
    assert "records" not in [c.name for c in checks_for(controller(valid), without, smoke=False)]
