"""What a saved plan holds against a plan made again (cli/saved_plan.py): a host whose changes differ, a host not
planned now, the drains before the deploy; not who has jobs where, nor the notes, which change by themselves.
The whole flow on simulated hosts: tests/deploy/test_saved_plan.py."""

from __future__ import annotations

import json

import pytest
from golden_cases import PROD

from clusterforge.cli.saved_plan import KIND, drifted, read
from clusterforge.errors import ClusterforgeError

ENTRY = {"operation": "slurm.conf", "lines": ["/etc/slurm/slurm.conf: changed"], "diff": "+PartitionName=short\n"}
PLAN = {"planned": ["ctl", "gpu01", "gpu02"], "hosts": {"ctl": [ENTRY], "gpu01": [ENTRY]}, "drain": [],
        "drain_jobs": [], "notes": [], "first": []}


def test_the_same_plan_made_again_holds_whatever_jobs_and_notes_say():
    assert drifted(PLAN, {**PLAN, "drain_jobs": ["1234"], "notes": ["gpu02: a warning"]}) == []


def test_each_host_whose_changes_differ_is_named_a_host_with_none_too():
    now = {**PLAN, "hosts": {"ctl": [ENTRY], "gpu01": [{**ENTRY, "diff": "+PartitionName=long\n"}],
                             "gpu02": [ENTRY]}}
    assert drifted(PLAN, now) == ["gpu01", "gpu02"]


def test_a_host_not_planned_now_and_a_new_drain_are_named():
    now = {**PLAN, "planned": ["ctl", "gpu01"], "hosts": {"ctl": [ENTRY], "gpu01": [ENTRY]}, "drain": ["gpu03"]}
    assert drifted(PLAN, now) == ["gpu02", "the drain before the deploy"]


def test_an_inventory_is_no_saved_plan_and_another_layout_is_refused(tmp_path):
    assert read(str(PROD)) is None
    old = tmp_path / "old.plan"
    old.write_text(json.dumps({"kind": KIND, "layout": 0}))
    with pytest.raises(ClusterforgeError, match="a saved plan of layout 0, this clusterforge reads 1: plan again"):
        read(str(old))
