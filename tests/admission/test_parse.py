"""The parsers read real output of each tool (captures/, with their sources in captures/README.md) to the numbers it
shows, and refuse output that is cut, garbled or another program's: such output must fail a node, never pass it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterforge.admission.parse import ParseError, dcgm, nccl, nvbandwidth, perftest

CAPTURES = Path(__file__).parent / "captures"


def capture(name: str) -> str:
    return (CAPTURES / name).read_text()


# -- nccl-tests ---------------------------------------------------------------------------------------------------


def test_an_h100_run_over_two_nodes_reads_to_its_largest_row():
    table = nccl.parse(capture("nccl/h100-2nodes-16ranks.txt"))
    assert table.ranks == 16
    assert len(table.rows) == 31
    largest = table.row()
    assert largest.size == 8589934592
    assert largest.busbw == (338.82, 337.35)
    assert largest.lowest_busbw == 337.35
    assert table.row(4294967296).busbw == (330.58, 330.51)
    assert table.wrong == 0 and table.out_of_bounds == 0
    assert table.avg_busbw == 70.742  # kept, but far below every large row: never the number held to a floor


def test_the_header_before_2_13_has_no_root_column_and_its_error_column_counts_nothing():
    table = nccl.parse(capture("nccl/a100-8gpus-before-2.13.txt"))
    assert table.ranks == 8
    assert table.row().busbw == (235.26, 235.03)
    assert table.row(1048576).algbw == (14.02, 13.77)
    assert all(row.wrong == (None, None) for row in table.rows)


def test_a_time_printed_without_decimals_and_a_table_without_device_lines():
    table = nccl.parse(capture("nccl/gb200-nvl72-table-end.txt"))
    assert [row.size for row in table.rows] == [4294967296, 8589934592]
    assert table.row().busbw == (834.57, 846.82)
    assert table.ranks == 0


@pytest.mark.parametrize("prefix", ["0: ", "[1,0]<stdout>:"])
def test_each_line_may_carry_a_launchers_task_prefix(prefix):
    prefixed = "".join(prefix + line for line in capture("nccl/h100-2nodes-16ranks.txt").splitlines(True))
    assert nccl.parse(prefixed).row().busbw == (338.82, 337.35)


def test_wrong_values_are_counted():
    text = capture("nccl/gb200-nvl72-table-end.txt").replace("846.82      0", "846.82      3")
    assert nccl.parse(text).wrong == 3


@pytest.mark.parametrize("cut, message", [
    (lambda t: t[:t.index("# Out of bounds")], "cut short"),
    (lambda t: t[:t.index("  8589934592    2147483648") + 60] + "\n", "fields where the header has 13"),
    (lambda t: t[:t.index("#       size")], "no nccl-tests results table"),
    (lambda t: t.replace("338.82", "33?.82"), "is not a number"),
    (lambda t: t.replace("  8589934592    2147483648", "  8589934592    21474x3648"), "count"),
    (lambda t: t + t[t.index("#       size"):], "after the footer"),
    (lambda t: t.replace("busbw #wrong     time", "bw #wrong     time"), "not an nccl-tests table header"),
])
def test_a_table_cut_or_garbled_is_refused(cut, message):
    with pytest.raises(ParseError, match=message):
        nccl.parse(cut(capture("nccl/h100-2nodes-16ranks.txt")))


@pytest.mark.parametrize("name", ["dcgm/4.4.2-r2-pass.txt", "perftest/gbits-post-list-60s.txt",
                                  "nvbandwidth/a100-v0.8-h2d-sm.txt", ""])
def test_another_tools_output_is_not_an_nccl_table(name):
    with pytest.raises(ParseError):
        nccl.parse(capture(name) if name else "")


# -- DCGM ---------------------------------------------------------------------------------------------------------


def test_dcgm_4_text_reads_each_test_and_each_gpu():
    diag = dcgm.parse(capture("dcgm/4.4.2-r2-pass.txt"))
    assert diag.version == "4.4.2"
    assert [(t.name, t.category, t.status) for t in diag.tests] == [
        ("software", "Deployment", "Pass"), ("memory", "Hardware", "Pass"), ("pcie", "Integration", "Pass")]
    assert all(t.gpus == ((0, "Pass"),) for t in diag.tests)
    assert diag.runtime_error is None


def test_dcgm_3_text_reads_its_own_test_names_and_pass_all():
    diag = dcgm.parse(capture("dcgm/3.3.3-r2-pass.txt"))
    assert diag.version == "3.3.3"
    assert len(diag.tests) == 11
    assert diag.tests[0].name == "Denylist"
    assert (diag.tests[-1].name, diag.tests[-1].category, diag.tests[-1].status) == ("GPU Memory", "Hardware",
                                                                                      "Pass")
    assert {t.status for t in diag.tests} == {"Pass"}


def test_a_failing_test_a_warning_and_its_message_pieces_are_read():
    text = capture("dcgm/4.4.2-r2-pass.txt").replace(
        "| pcie                      | Pass                                           |\n"
        "|                           | GPU0: Pass                                     |\n",
        "| pcie                      | Fail                                           |\n"
        "|                           | GPU0: Fail                                     |\n"
        "| Warning: GPU0             | GPU 0 PCIe replay count violation: 99999       |\n"
        "|                           | replays, more than 8                           |\n")
    pcie = dcgm.parse(text).tests[-1]
    assert pcie.status == "Fail" and pcie.gpus == ((0, "Fail"),)
    assert pcie.warnings == ("GPU 0 PCIe replay count violation: 99999 replays, more than 8",)


def test_a_diagnostic_that_could_not_start_is_its_error():
    diag = dcgm.parse("Error: Unable to complete diagnostic for group 2147483647. Return: (-21) Host engine "
                      "connection invalid/disconnected.\n")
    assert diag.tests == () and diag.runtime_error.startswith("Error: Unable to complete diagnostic")


@pytest.mark.parametrize("text, message", [
    (capture("dcgm/4.2.3-cut.txt"), "no dcgmi diag table"),
    ("".join(capture("dcgm/4.4.2-r2-pass.txt").splitlines(True)[:-1]), "cut short"),
    (capture("dcgm/4.4.2-r2-pass.txt")[:-81], "not a row"),
    (capture("dcgm/4.4.2-r2-pass.txt").replace("| memory                    | Pass",
                                                "| memory                    | Bad "), "unknown result"),
    (capture("dcgm/4.4.2-r2-pass.txt").replace("| GPU0: Pass                                     |\n",
                                                "| GPU0: Pass\n", 1), "not a row"),
    (capture("dcgm/4.4.2-r2-pass.txt").replace("| software                  |",
                                                "|                           |", 1), "belongs to no test"),
    (capture("nccl/h100-2nodes-16ranks.txt"), "no dcgmi diag table"),
    ("", "no dcgmi diag table"),
])
def test_dcgm_text_cut_or_garbled_is_refused(text, message):
    with pytest.raises(ParseError, match=message):
        dcgm.parse(text)


def _dcgm4(*tests: tuple[str, str, list[str]]) -> str:
    """A ``dcgmi diag -j`` document of DCGM 4.x in the shape DCGM's schema (testing/python3/dcgm_diag_schema.json)
    and NvvsJsonStrings.h give it: built here, since no whole real capture was found (captures/README.md)."""
    categories = [{"category": category, "tests": [{
        "name": name,
        "results": [{"entity_group": "GPU", "entity_group_id": 1, "entity_id": gpu, "status": status,
                     **({"warnings": [{"warning": f"GPU {gpu} failed", "error_id": 0, "error_category": 0,
                                       "error_severity": 0}]} if status == "Fail" else {})}
                    for gpu, status in enumerate(statuses)],
        "test_summary": {"status": "Fail" if "Fail" in statuses else "Pass"}}]}
        for name, category, statuses in tests]
    return json.dumps({"DCGM Diagnostic": {"test_categories": categories},
                       "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1, "entities": []}],
                       "metadata": {"version": "4.6.0"}}, indent=2)


def test_dcgm_4_json_reads_each_test_its_summary_and_each_gpu():
    diag = dcgm.parse(_dcgm4(("software", "Deployment", ["Pass", "Pass"]), ("memory", "Hardware", ["Pass", "Fail"])))
    assert diag.version == "4.6.0"
    assert [(t.name, t.status) for t in diag.tests] == [("software", "Pass"), ("memory", "Fail")]
    assert diag.tests[1].gpus == ((0, "Pass"), (1, "Fail"))
    assert diag.tests[1].warnings == ("GPU 1 failed",)


def test_dcgm_3_json_reads_gpu_ids_and_takes_the_worst_result_without_a_summary():
    document = {"DCGM GPU Diagnostic": {"test_categories": [
        {"category": "Deployment", "tests": [{"name": "Denylist", "results": [{"gpu_ids": "0,1", "status": "PASS"}]}]},
        {"category": "Hardware", "tests": [{"name": "GPU Memory", "results": [
            {"gpu_id": "0", "status": "PASS"}, {"gpu_id": "1", "status": "SKIP"}]}]}], "version": "3.3.9"}}
    diag = dcgm.parse(json.dumps(document))
    assert [(t.name, t.status, t.gpus) for t in diag.tests] == [
        ("Denylist", "Pass", ()), ("GPU Memory", "Pass", ((0, "Pass"), (1, "Skip")))]
    assert diag.version == "3.3.9"


def test_dcgm_json_of_a_run_that_could_not_start_is_its_runtime_error():
    diag = dcgm.parse('{"DCGM Diagnostic": {"version": "4.6.0", "runtime_error": "Unable to connect"}}')
    assert diag.tests == () and diag.runtime_error == "Unable to connect"


@pytest.mark.parametrize("text, message", [
    (_dcgm4(("software", "Deployment", ["Pass"]))[:-40], "not JSON"),
    ('{"iterations": [], "Overall Result": "Pass"}', "no 'DCGM Diagnostic'"),
    ('{"DCGM Diagnostic": {"test_categories": []}}', "no test_categories"),
    ('{"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "memory", '
     '"results": [{"entity_id": 0}]}]}]}}', "without a status"),
    ('{"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "memory", '
     '"results": [{"entity_id": 0, "status": "Maybe"}]}]}]}}', "unknown result"),
    ("[1, 2]", "no dcgmi diag table|not an object"),
])
def test_dcgm_json_cut_or_foreign_is_refused(text, message):
    with pytest.raises(ParseError, match=message):
        dcgm.parse(text)


# -- perftest -----------------------------------------------------------------------------------------------------


def test_ib_write_bw_in_mb_per_second_reads_both_tables():
    bandwidth = perftest.parse(capture("perftest/mb-sec-8m-client-and-server.txt"))
    assert bandwidth.unit == perftest.MIBS
    assert [(r.size, r.iterations, r.peak, r.average) for r in bandwidth.rows] == [
        (8388608, 20000, 24056.74, 24056.72)] * 2
    assert bandwidth.average() == 24056.72
    assert bandwidth.gbits() == pytest.approx(24056.72 * 2**20 * 8 / 1e9)  # 201.8 Gb/s: an HDR link


def test_ib_write_bw_in_gbits_reads_the_average_not_the_peak():
    bandwidth = perftest.parse(capture("perftest/gbits-post-list-60s.txt"))
    assert bandwidth.unit == perftest.GBITS
    assert bandwidth.rows == (perftest.Row(8, 224958464, 0.0, 0.48),)
    assert bandwidth.gbits() == 0.48


def test_the_lower_of_two_tables_is_the_links():
    text = capture("perftest/mb-sec-8m-client-and-server.txt")
    last = text.rindex("24056.72")
    assert perftest.parse(text[:last] + "12000.00" + text[last + 8:]).average() == 12000.0


@pytest.mark.parametrize("cut, message", [
    (lambda t: t[:t.rindex("0.003007") + 8] + "\n", "cut short"),
    (lambda t: t[:t.index(" 8388608    20000")], "no row"),
    (lambda t: t.replace(" 8388608    20000            24056.74", " 8388608    20000"), "fields where a row has 5"),
    (lambda t: t.replace("24056.72", "24O56.72", 1), "not a number"),
    (lambda t: t.replace("BW average[MB/sec]", "BW average[KB/sec]", 1), "unknown bandwidth unit"),
    (lambda t: "", "no perftest bandwidth table"),
])
def test_ib_write_bw_cut_or_garbled_is_refused(cut, message):
    with pytest.raises(ParseError, match=message):
        perftest.parse(cut(capture("perftest/mb-sec-8m-client-and-server.txt")))


# -- nvbandwidth --------------------------------------------------------------------------------------------------


def test_nvbandwidth_reads_each_tests_matrix_and_sum():
    run = nvbandwidth.parse(capture("nvbandwidth/rtx4090-v0.2-h2d-d2h.txt"))
    assert run.version == "v0.2"
    assert [t.name for t in run.tests] == ["host_to_device_memcpy_ce", "device_to_host_memcpy_ce"]
    h2d = run.test("host_to_device_memcpy_ce")
    assert h2d.status == nvbandwidth.PASSED
    assert h2d.cells == ((25.50, 24.26, 23.90, 26.30, 26.28, 26.38, 26.09, 26.31),)
    assert h2d.sum == 205.04
    assert min(run.test("device_to_host_memcpy_ce").values()) == 26.25


def test_nvbandwidth_one_gpu():
    run = nvbandwidth.parse(capture("nvbandwidth/a100-v0.8-h2d-sm.txt"))
    assert run.test("host_to_device_memcpy_sm").cells == ((25.13,),)


def test_nvbandwidth_reads_n_a_as_no_value():
    # The author wrote "..." for the device list and the test's "Running" line: put the line back.
    text = capture("nvbandwidth/a6000-v0.8-d2d-read.txt").replace("...\n", "Running device_to_device_memcpy_read_ce.\n")
    matrix = nvbandwidth.parse(text).test("device_to_device_memcpy_read_ce")
    assert matrix.cells[0] == (None, 26.34, 26.35, 21.95, 22.64, 21.80)
    assert [matrix.cells[i][i] for i in range(6)] == [None] * 6
    assert min(matrix.values()) == 21.80 and matrix.sum == 715.53


def test_a_test_that_died_before_its_sum_is_an_error_with_what_it_said():
    matrix = nvbandwidth.parse(capture("nvbandwidth/a100-v0.7-d2d-read-assert.txt")).test(
        "device_to_device_memcpy_read_ce")
    assert matrix.status == nvbandwidth.ERROR
    assert matrix.error.startswith("Invalid value when checking the pattern")


def test_nvbandwidth_json():
    document = {"nvbandwidth": {"version": "v0.8", "testcases": [
        {"name": "host_to_device_memcpy_ce", "status": "Passed", "bandwidth_matrix": [["55.10", "54.90"]],
         "sum": 110.0},
        {"name": "device_to_device_memcpy_read_ce", "status": "Waived"}]}}
    run = nvbandwidth.parse(json.dumps(document))
    assert run.test("host_to_device_memcpy_ce").cells == ((55.10, 54.90),)
    assert run.test("device_to_device_memcpy_read_ce").status == "Waived"


@pytest.mark.parametrize("text, message", [
    (capture("nccl/h100-2nodes-16ranks.txt"), "no 'nvbandwidth Version:'"),
    (capture("nvbandwidth/rtx4090-v0.2-h2d-d2h.txt").replace("26.31", "26.31     99.00", 1), "8 columns"),
    (capture("nvbandwidth/rtx4090-v0.2-h2d-d2h.txt").replace("24.26", "24,26", 1), "not a number"),
    ('{"nvbandwidth": {"testcases": [{"name": "x", "status": "Passed"}]}}', "Passed without"),
    ('{"other": 1}', "not nvbandwidth's JSON"),
])
def test_nvbandwidth_garbled_or_foreign_is_refused(text, message):
    with pytest.raises(ParseError, match=message):
        nvbandwidth.parse(text)


def test_nvbandwidth_cut_inside_a_test_leaves_it_unfinished():
    text = capture("nvbandwidth/rtx4090-v0.2-h2d-d2h.txt")
    run = nvbandwidth.parse(text[:text.rindex("SUM")])
    assert run.test("device_to_host_memcpy_ce").status == nvbandwidth.ERROR
    assert run.test("host_to_device_memcpy_ce").status == nvbandwidth.PASSED
