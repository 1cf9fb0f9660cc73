"""Each node's record (admission/records.py): JSON lines under $XDG_STATE_HOME, read back in order, a record that is
not one refused with its file and line, and a node's baseline, last result, the fleet's median and the share below."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from clusterforge.admission import records
from clusterforge.admission.records import RecordError


def result(node, test, value, passed=True, time="2026-11-27T04:00:00Z", unit="GB/s"):
    return {"node": node, "test": test, "passed": passed, "value": value, "unit": unit, "floor": 350.0,
            "detail": "", "time": time, "source": "accept"}


def test_the_records_live_under_xdg_state_home_or_local_state(tmp_path):
    assert records.directory("prod", {"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "clusterforge/prod/records"
    assert records.directory("prod", {"HOME": "/home/ada"}) == Path("/home/ada/.local/state/clusterforge/prod/records")
    # A relative XDG_STATE_HOME is ignored, as the XDG specification says.
    assert records.directory("prod", {"HOME": "/h", "XDG_STATE_HOME": "rel"}) == Path(
        "/h/.local/state/clusterforge/prod/records")


def test_results_are_appended_one_json_line_each_and_read_back_in_order(tmp_path):
    written = records.append(tmp_path, [result("gpu02", "allreduce", 470.0), result("gpu01", "allreduce", 468.5)])
    records.append(tmp_path, [result("gpu01", "allreduce", 401.0, passed=False, time="2026-11-28T04:00:00Z")])
    assert written == [tmp_path / "gpu01.jsonl", tmp_path / "gpu02.jsonl"]
    lines = (tmp_path / "gpu01.jsonl").read_text().splitlines()
    assert [json.loads(line)["value"] for line in lines] == [468.5, 401.0]
    assert lines[0] == json.dumps(result("gpu01", "allreduce", 468.5), sort_keys=True)
    assert [r["value"] for r in records.read(tmp_path, "gpu01")] == [468.5, 401.0]
    assert records.read(tmp_path, "gpu09") == []
    assert sorted(records.read_all(tmp_path)) == ["gpu01", "gpu02"]
    assert records.read_all(tmp_path / "none") == {}


@pytest.mark.parametrize(("line", "said"), [
    ("{not json", "gpu01.jsonl:2: not a JSON line"),
    ('{"node": "gpu01", "test": "x"}', "gpu01.jsonl:2: not a result (it needs node, test, passed, time)"),
    ('{"node": "gpu07", "test": "x", "passed": true, "time": "t"}', "gpu01.jsonl:2: a result of 'gpu07' in gpu01"),
])
def test_a_line_that_is_not_a_result_is_refused_with_its_file_and_line(tmp_path, line, said):
    records.append(tmp_path, [result("gpu01", "allreduce", 470.0)])
    with (tmp_path / "gpu01.jsonl").open("a") as file:
        file.write(line + "\n")
    with pytest.raises(RecordError, match=re.escape(said)):
        records.read(tmp_path, "gpu01")


@pytest.mark.parametrize("node", ["../etc", "a/b", "", ".hidden"])
def test_a_node_name_that_is_not_a_file_name_is_refused(tmp_path, node):
    with pytest.raises(RecordError, match="cannot name a record file"):
        records.append(tmp_path, [result(node, "allreduce", 1.0)])


def test_a_result_without_its_node_test_verdict_or_time_is_refused(tmp_path):
    with pytest.raises(RecordError, match="without passed, time"):
        records.append(tmp_path, [{"node": "gpu01", "test": "allreduce"}])


def test_the_baseline_is_the_first_passing_result_per_test_and_last_the_most_recent():
    history = [result("n", "allreduce", 300.0, passed=False), result("n", "allreduce", 472.0),
               result("n", "nvbandwidth", 55.0), result("n", "allreduce", 455.0, passed=False)]
    assert {t: r["value"] for t, r in records.baseline(history).items()} == {"allreduce": 472.0, "nvbandwidth": 55.0}
    assert {t: r["value"] for t, r in records.last(history).items()} == {"allreduce": 455.0, "nvbandwidth": 55.0}


def fleet():
    return {
        "gpu01": [result("gpu01", "allreduce", 470.0), result("gpu01", "allreduce", 468.0),
                  result("gpu01", "dcgm", None, unit="")],
        "gpu02": [result("gpu02", "allreduce", 476.0), result("gpu02", "allreduce", 410.0)],
        "gpu03": [result("gpu03", "allreduce", 472.0)],
    }


def test_the_fleet_median_is_of_each_nodes_last_number_per_test():
    assert records.fleet_median(fleet()) == {"allreduce": 468.0}


def test_a_node_falling_a_share_below_its_baseline_or_the_median_is_named():
    standing = {(s.node, s.test): s for s in records.standings(fleet())}
    assert ("gpu01", "dcgm") not in standing  # no number to compare
    gpu02 = standing[("gpu02", "allreduce")]
    assert (gpu02.value, gpu02.baseline, gpu02.median) == (410.0, 476.0, 468.0)
    assert gpu02.below_baseline == pytest.approx(66 / 476) and gpu02.below_median == pytest.approx(58 / 468)
    assert standing[("gpu03", "allreduce")].below_median == pytest.approx(-4 / 468)
    assert [(s.node, s.test) for s in records.falling(fleet(), 0.1)] == [("gpu02", "allreduce")]
    assert [s.node for s in records.falling(fleet(), 0.13)] == ["gpu02"]  # 13.9 % below its baseline
    assert records.falling(fleet(), 0.14) == []


def test_a_node_that_never_passed_has_no_baseline_but_still_a_median():
    history = {"n": [result("n", "allreduce", 300.0, passed=False)], "m": [result("m", "allreduce", 470.0)]}
    [n] = [s for s in records.standings(history) if s.node == "n"]
    assert n.baseline is None and n.below_baseline is None and n.median == 385.0


@pytest.mark.parametrize("share", [0, 1, 10])
def test_a_share_is_a_fraction(share):
    with pytest.raises(RecordError, match="between 0 and 1"):
        records.falling(fleet(), share)


def test_records_printed_one_file_after_another_are_read_back_by_node_and_refused_with_where_they_came_from():
    text = "\n".join(json.dumps(r) for r in (result("gpu01", "allreduce", 470.0), result("gpu02", "allreduce", 468.0),
                                             result("gpu01", "allreduce", 430.0, time="2026-11-28T04:00:00Z")))
    fleet = records.parse(text + "\n", "gpu-ctl:/var/lib/clusterforge/gate/records")
    assert {node: [r["value"] for r in kept] for node, kept in fleet.items()} == {"gpu01": [470.0, 430.0],
                                                                                 "gpu02": [468.0]}
    with pytest.raises(RecordError, match=re.escape("gpu-ctl:records:2: not a node's name: '../etc'")):
        records.parse(text.replace('"gpu02"', '"../etc"'), "gpu-ctl:records")


def test_the_gates_records_and_accepts_are_merged_by_time_whichever_source_came_first():
    gate = {"gpu01": [result("gpu01", "allreduce", 470.0, time="2026-11-27T04:00:00Z"),
                      result("gpu01", "allreduce", 420.0, time="2026-11-29T04:00:00Z")]}
    accept = {"gpu01": [result("gpu01", "allreduce", 465.0, time="2026-11-28T04:00:00Z")],
              "gpu02": [result("gpu02", "allreduce", 466.0)]}
    merged = records.merge(gate, accept)
    assert list(merged) == ["gpu01", "gpu02"]
    assert [r["value"] for r in merged["gpu01"]] == [470.0, 465.0, 420.0]
    assert records.last(merged["gpu01"])["allreduce"]["value"] == 420.0


def test_the_files_are_written_readable_by_all_for_the_exporter(tmp_path):
    records.append(tmp_path / "records", [result("gpu01", "allreduce", 470.0)])
    assert (tmp_path / "records").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "records" / "gpu01.jsonl").stat().st_mode & 0o777 == 0o644


def test_accepts_records_are_appended_on_another_machine_by_one_shell_command_as_append_writes_them(tmp_path):
    """What accept runs on the controller, run here by /bin/sh into a directory like the gate's: the same lines as
    append writes (the file the gate and the exporter read), after the gate's own, with the same modes."""
    kept = [result("gpu02", "allreduce", 470.0), result("gpu01", "allreduce", 468.5),
            result("gpu01", "allreduce_multi", 361.0) | {"group": "gpu01+gpu02"}]
    gate = tmp_path / "gate" / "records"
    records.append(gate, [result("gpu01", "allreduce", 476.0, time="2026-11-26T04:00:00Z") | {"source": "gate"}])
    before = (gate / "gpu01.jsonl").read_text()
    [command] = records.append_commands(kept, str(gate))
    subprocess.run(["sh", "-c", command], check=True)
    records.append(tmp_path / "here", kept)
    assert (gate / "gpu01.jsonl").read_text() == before + (tmp_path / "here" / "gpu01.jsonl").read_text()
    assert (gate / "gpu02.jsonl").read_text() == (tmp_path / "here" / "gpu02.jsonl").read_text()
    assert (gate / "gpu02.jsonl").stat().st_mode & 0o777 == 0o644
    # A directory the gate has not made yet is made as append makes it.
    fresh = tmp_path / "fresh" / "records"
    for command in records.append_commands(kept, str(fresh)):
        subprocess.run(["sh", "-c", command], check=True)
    assert fresh.stat().st_mode & 0o777 == 0o755
    assert records.read_all(fresh) == records.read_all(tmp_path / "here")
    assert records.append_commands([], str(gate)) == []
    with pytest.raises(RecordError, match="cannot name a record file"):
        records.append_commands([result("../etc", "allreduce", 1.0)], str(gate))


def test_a_rounds_records_of_64_nodes_go_in_commands_each_small_enough_to_start_and_add_up_to_append(tmp_path):
    """accept's first round at 64 nodes on the test cluster: its records in one command were more than Linux takes
    in one argument (128 KiB), and the command could not start ("Argument list too long"). Now several commands,
    each within COMMAND_BYTES, written as one argument here as ssh and the remote shell take it, and what they add
    is what append writes."""
    detail = "x" * 400  # a tool's line kept with each result
    kept = [result(f"gpu{n:02d}", test, 470.0) | {"detail": detail}
            for n in range(1, 65) for test in ("dcgm", "nvbandwidth", "allreduce", "ib_write_bw")]
    commands = records.append_commands(kept, str(tmp_path / "gate"))
    assert len(commands) > 1 and all(len(c) <= records.COMMAND_BYTES for c in commands), [len(c) for c in commands]
    assert sum(len(c) for c in commands) > 128 * 1024  # one command would not have started
    for command in commands:
        subprocess.run(["sh", "-c", command], check=True)
    records.append(tmp_path / "here", kept)
    assert records.read_all(tmp_path / "gate") == records.read_all(tmp_path / "here")
    for node in ("gpu01", "gpu64"):
        assert (tmp_path / "gate" / f"{node}.jsonl").read_text() == (tmp_path / "here" / f"{node}.jsonl").read_text()


def test_a_result_read_from_both_places_is_kept_once_in_the_nodes_history():
    accepts = result("gpu01", "allreduce", 420.0, time="2026-11-28T04:00:00Z")
    gate = {"gpu01": [result("gpu01", "allreduce", 470.0) | {"source": "gate"}, dict(accepts)],
            "gpu02": [result("gpu02", "allreduce", 468.0) | {"source": "gate"}]}
    here = {"gpu01": [dict(accepts)]}
    merged = records.merge(gate, here)
    assert [r["value"] for r in merged["gpu01"]] == [470.0, 420.0]
    assert merged == records.merge(gate) and merged == records.merge(here, gate)
    # A second measurement with the same number is not a copy: another time, kept.
    again = records.merge(gate, {"gpu01": [accepts | {"time": "2026-11-29T04:00:00Z"}]})
    assert [r["value"] for r in again["gpu01"]] == [470.0, 420.0, 420.0]


def test_a_groups_all_reduce_stays_in_each_members_record_but_is_never_held_to_the_node_alone():
    # gpu01 passed a pair's run at 370 when accepted, then ran in a 16-node spine run at 300: the spine, not gpu01.
    fleet = {"gpu01": [result("gpu01", "allreduce", 470.0, time="2026-11-27T04:00:00Z"),
                       result("gpu01", "allreduce_multi", 370.0, time="2026-11-27T05:00:00Z") | {"group": "gpu01+gpu02"},
                       result("gpu01", "allreduce_multi", 300.0, time="2026-11-28T05:00:00Z") | {"group": "spine"}],
             "gpu02": [result("gpu02", "allreduce", 466.0)]}
    assert [(s.node, s.test) for s in records.standings(fleet)] == [("gpu01", "allreduce"), ("gpu02", "allreduce")]
    assert records.falling(fleet, 0.1) == []
    assert records.last(fleet["gpu01"])["allreduce_multi"]["value"] == 300.0  # still the node's history
