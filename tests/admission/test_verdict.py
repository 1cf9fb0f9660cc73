"""A result's reason is the short line a drain shows (test, number, floor), and its record one JSON line of the
node's record with where it came from and when."""

from __future__ import annotations

import json

from clusterforge.admission.verdict import Result, figure


def test_the_reason_names_the_test_the_number_and_the_floor():
    assert Result("gpu03", "allreduce", False, 402.0, "GB/s", 460.0).reason == "allreduce 402 GB/s < 460"
    assert Result("gpu03", "allreduce", True, 476.21, "GB/s", 460.0).reason == "allreduce 476.21 GB/s >= 460"
    assert Result("gpu03", "ib_write_bw:mlx5_2", False, 201.8, "Gb/s", 380).reason == \
        "ib_write_bw:mlx5_2 201.8 Gb/s < 380"


def test_a_result_without_a_number_gives_its_detail():
    assert Result("gpu03", "dcgm", False, detail="pcie Fail (GPU0)").reason == "dcgm pcie Fail (GPU0)"
    assert Result("gpu03", "dcgm", True).reason == "dcgm passed"


def test_a_long_detail_is_cut_in_the_reason_and_kept_whole_in_the_record():
    detail = "software Fail (GPU0): " + "persistence mode is disabled on GPU 0; enable it with nvidia-smi -pm 1"
    result = Result("gpu03", "dcgm", False, detail=detail)
    assert result.reason == "dcgm " + detail[:69] + "..."
    assert len(result.reason) == len("dcgm ") + 72
    assert result.record("gate")["detail"] == detail


def test_figures_keep_at_most_two_decimals():
    assert [figure(v) for v in (402.0, 337.35, 0.004, 1e-9, 21.8)] == ["402", "337.35", "0", "0", "21.8"]


def test_the_record_is_one_json_line_with_source_and_utc_time():
    record = Result("gpu03", "allreduce", False, 402.0, "GB/s", 460.0, "16 GiB row").record("gate", when=86400.5)
    assert json.loads(json.dumps(record)) == {
        "node": "gpu03", "test": "allreduce", "passed": False, "value": 402.0, "unit": "GB/s", "floor": 460.0,
        "detail": "16 GiB row", "reason": "allreduce 402 GB/s < 460", "source": "gate",
        "time": "1970-01-02T00:00:00Z"}
