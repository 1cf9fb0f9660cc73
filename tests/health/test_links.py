"""Link health from the HCAs' port counters (health/ibsysfs.py, health/links.py): read as sysfs lays them out, judged
against the last reading, held until the counter is reset; then through the program as the deploy ships it
(tests/health_node.py), whose node's sysfs is a directory of the test's. A test cluster's stand-in for sysfs is read
only where root alone could have written it."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from health_node import Node

from clusterforge.health import ibsysfs, links, parse, probes
from clusterforge.health.expect import Expectations, Hca

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a stand-in for sysfs must be root's (CI is root)")

FIXTURES = Path(__file__).resolve().parents[1] / "check" / "fixtures"
NOBODY = 65534


def port(root: Path, hca: str = "mlx5_4", number: int = 1, link_layer: str = "InfiniBand",
         rate: str = "400 Gb/sec (4X NDR)", **counters: int) -> Path:
    """One port as sysfs lays it out: <root>/<hca>/ports/<n>/{link_layer,rate,counters/<name>}."""
    directory = root / hca / "ports" / str(number)
    (directory / "counters").mkdir(parents=True, exist_ok=True)
    (directory / "link_layer").write_text(f"{link_layer}\n")
    (directory / "rate").write_text(f"{rate}\n")
    for name, value in counters.items():
        (directory / "counters" / name).write_text(f"{value}\n")
    return directory


def judged(expect: Expectations, root: Path, saved: dict | None, boot: str = "boot-1") -> links.LinkRead:
    sysfs = ibsysfs.Sysfs(str(root), False)
    return links.judge(expect, ibsysfs.ports(sysfs, [h.name for h in expect.hcas], expect.link_errors), saved, boot)


def reasons(read: links.LinkRead) -> list[str]:
    return [f.reason for f in read.findings]


EXPECT = Expectations(node="gpu01")


def test_the_counters_are_read_as_sysfs_lays_them_out(tmp_path):
    port(tmp_path, link_downed=2, symbol_error=17)
    (tmp_path / "mlx5_4" / "ports" / "1" / "hw_counters").mkdir()
    (tmp_path / "mlx5_4" / "ports" / "1" / "hw_counters" / "out_of_buffer").write_text("5\n")
    sysfs = ibsysfs.Sysfs(str(tmp_path), False)
    [watched] = ibsysfs.ports(sysfs, counters=("link_downed", "symbol_error", "port_rcv_errors"))
    assert (watched.hca, watched.port, watched.link_layer, watched.rate) == ("mlx5_4", 1, "InfiniBand",
                                                                             "400 Gb/sec (4X NDR)")
    assert (watched.counter("link_downed"), watched.counter("symbol_error"), watched.counter("port_rcv_errors")) == \
        (2, 17, None)
    [everything] = ibsysfs.ports(sysfs)   # the evidence's: both kinds, as read
    assert everything.values == {"counters/link_downed": "2", "counters/symbol_error": "17",
                                 "hw_counters/out_of_buffer": "5"}
    assert ibsysfs.width(sysfs, "mlx5_4", 1) == "4X NDR"


def test_the_first_reading_is_a_baseline_and_a_rise_past_the_limit_drains_naming_the_port_and_the_rise(tmp_path):
    port(tmp_path, link_downed=7, symbol_error=100, port_rcv_errors=0)
    first = judged(EXPECT, tmp_path, None)
    assert first.findings == [] and first.state["ports"]["mlx5_4/1"]["link_downed"] == 7
    # Within the limits: symbol_error may rise by 10; port_rcv_errors is watched, never drained for.
    port(tmp_path, link_downed=7, symbol_error=110, port_rcv_errors=5000)
    quiet = judged(EXPECT, tmp_path, first.state)
    assert quiet.findings == [] and quiet.values["mlx5_4/1"]["port_rcv_errors"] == 5000
    port(tmp_path, link_downed=10, symbol_error=121, port_rcv_errors=5000)
    risen = judged(EXPECT, tmp_path, quiet.state)
    assert reasons(risen) == ["cf:ib:flap mlx5_4 port 1 link_downed +3", "cf:ib:errors mlx5_4 port 1 symbol_error +11"]
    assert all(f.action == "drain" and not f.sticky for f in risen.findings)


def test_the_inventorys_limits_replace_the_defaults(tmp_path):
    expect = replace(EXPECT, link_errors={**EXPECT.link_errors, "link_downed": 2, "port_rcv_errors": 100})
    port(tmp_path, link_downed=0, port_rcv_errors=0)
    base = judged(expect, tmp_path, None)
    port(tmp_path, link_downed=2, port_rcv_errors=101)
    assert reasons(judged(expect, tmp_path, base.state)) == ["cf:ib:errors mlx5_4 port 1 port_rcv_errors +101"]


def test_a_counter_that_went_down_is_a_new_baseline(tmp_path):
    port(tmp_path, link_downed=5)
    base = judged(EXPECT, tmp_path, None)
    port(tmp_path, link_downed=0)   # perfquery -R, a driver reload
    reset = judged(EXPECT, tmp_path, base.state)
    assert reset.findings == [] and reset.state["ports"]["mlx5_4/1"]["link_downed"] == 0
    port(tmp_path, link_downed=1)
    assert reasons(judged(EXPECT, tmp_path, reset.state)) == ["cf:ib:flap mlx5_4 port 1 link_downed +1"]


def test_a_new_boot_is_a_new_baseline_and_ends_what_was_held(tmp_path):
    port(tmp_path, link_downed=0)
    base = judged(EXPECT, tmp_path, None)
    port(tmp_path, link_downed=4)
    held = judged(EXPECT, tmp_path, base.state)
    assert reasons(held) == ["cf:ib:flap mlx5_4 port 1 link_downed +4"]
    port(tmp_path, link_downed=9)   # counted at the boot's link training, before the first check
    booted = judged(EXPECT, tmp_path, held.state, boot="boot-2")
    assert booted.findings == [] and booted.state["held"] == {}


def test_a_rise_is_held_through_quiet_checks_until_its_counter_is_reset(tmp_path):
    port(tmp_path, link_downed=1)
    state = judged(EXPECT, tmp_path, None).state
    port(tmp_path, link_downed=4)
    for _ in range(5):   # the rise, then checks that find the counter still
        read = judged(EXPECT, tmp_path, state)
        assert reasons(read) == ["cf:ib:flap mlx5_4 port 1 link_downed +3"]
        state = read.state
    port(tmp_path, link_downed=5)   # rising again while held: still the first rise's reason, not a new drain
    state = judged(EXPECT, tmp_path, state).state
    assert state["held"] == {"mlx5_4/1 link_downed": {"at": 4, "rise": 3}}
    port(tmp_path, link_downed=0)   # an admin's perfquery -R after reseating the cable
    cleared = judged(EXPECT, tmp_path, state)
    assert cleared.findings == [] and cleared.state["held"] == {}


def test_only_the_declared_hcas_are_judged_and_never_an_ethernet_port(tmp_path):
    port(tmp_path, "mlx5_0", link_downed=0)
    port(tmp_path, "mlx5_1", link_downed=0)
    port(tmp_path, "mlx5_0", 2, link_layer="Ethernet", link_downed=0)
    declared = replace(EXPECT, hcas=(Hca("mlx5_0", None),))
    base, every = judged(declared, tmp_path, None), judged(EXPECT, tmp_path, None)
    assert set(base.values) == {"mlx5_0/1"} and set(every.values) == {"mlx5_0/1", "mlx5_1/1"}
    for hca, number in (("mlx5_0", 1), ("mlx5_1", 1), ("mlx5_0", 2)):
        port(tmp_path, hca, number, link_layer="Ethernet" if number == 2 else "InfiniBand", link_downed=2)
    assert reasons(judged(declared, tmp_path, base.state)) == ["cf:ib:flap mlx5_0 port 1 link_downed +2"]
    assert reasons(judged(EXPECT, tmp_path, every.state)) == ["cf:ib:flap mlx5_0 port 1 link_downed +2",
                                                             "cf:ib:flap mlx5_1 port 1 link_downed +2"]


def test_a_stand_in_root_alone_could_have_written_is_read_instead_of_sysfs(tmp_path, monkeypatch):
    monkeypatch.setenv("CLUSTERFORGE_HEALTH_SYS_INFINIBAND", str(tmp_path / "kernel"))
    stand_in = tmp_path / "testbed" / "infiniband"
    port(stand_in, link_downed=3)
    expect = replace(EXPECT, infiniband_sysfs=str(stand_in))
    assert ibsysfs.where(expect) == ibsysfs.Sysfs(str(stand_in), True)
    assert ibsysfs.where(replace(EXPECT, infiniband_sysfs=str(tmp_path / "absent"))).path == str(tmp_path / "kernel")


@pytest.mark.parametrize("spoil", ["group-writable", "others-writable", "a user's", "a link", "writable above"])
def test_a_stand_in_anyone_but_root_could_have_written_is_ignored(tmp_path, monkeypatch, spoil):
    monkeypatch.setenv("CLUSTERFORGE_HEALTH_SYS_INFINIBAND", str(tmp_path / "kernel"))
    above, stand_in = tmp_path / "testbed", tmp_path / "testbed" / "infiniband"
    real = above / "real"
    port(real, link_downed=3)
    if spoil == "a link":
        stand_in.symlink_to(real)
    else:
        real.rename(stand_in)
    if spoil == "group-writable":
        stand_in.chmod(0o775)
    elif spoil == "others-writable":
        stand_in.chmod(0o757)
    elif spoil == "a user's":
        os.chown(stand_in, NOBODY, NOBODY)
    elif spoil == "writable above":
        above.chmod(0o777)   # not sticky: anyone may put another directory in its place
    found = ibsysfs.where(replace(EXPECT, infiniband_sysfs=str(stand_in)))
    assert found.path == str(tmp_path / "kernel") and not found.stand_in
    assert found.notes == (f"{stand_in} ignored: not root's alone all the way down, or a link",)


def test_inside_a_stand_in_what_anyone_but_root_could_have_written_is_not_read(tmp_path):
    stand_in = tmp_path / "infiniband"
    counters = port(stand_in, "mlx5_0", link_downed=1, symbol_error=1) / "counters"
    os.chown(counters / "symbol_error", NOBODY, NOBODY)
    port(tmp_path / "elsewhere", "mlx5_9", link_downed=1)
    (stand_in / "mlx5_1").symlink_to(tmp_path / "elsewhere" / "mlx5_9")
    port(stand_in, "mlx5_2", link_downed=1)
    (stand_in / "mlx5_2" / "ports").chmod(0o777)
    read = ibsysfs.ports(ibsysfs.Sysfs(str(stand_in), True), counters=("link_downed", "symbol_error"))
    assert [(p.hca, p.counter("link_downed"), p.counter("symbol_error")) for p in read] == [("mlx5_0", 1, None)]
    assert read[0].values["counters/symbol_error"] == "unreadable: not root's alone"


def test_a_rate_finding_names_the_ports_width_and_speed(tmp_path):
    ibstat = (FIXTURES / "h100.ibstat.txt").read_text()
    found = [p if p.ca != "mlx5_4" else replace(p, rate=200) for p in parse.ibstat(ibstat)]
    port(tmp_path, "mlx5_4", rate="200 Gb/sec (2X NDR)")
    sysfs = ibsysfs.Sysfs(str(tmp_path), False)
    expect = replace(EXPECT, hcas=(Hca("mlx5_4", 400),))
    assert [f.reason for f in probes.infiniband(expect, found, lambda h, n: ibsysfs.width(sysfs, h, n))] == [
        "cf:ib:rate mlx5_4 port 1 at 200 Gb/s (2X NDR), below 400"]
    assert [f.reason for f in probes.infiniband(expect, found)] == ["cf:ib:rate mlx5_4 port 1 at 200 Gb/s, below 400"]


# Through the program as the deploy ships it.

@pytest.fixture
def node(tmp_path):
    made = Node(tmp_path)
    ibstat = made.bin / "ibstat"   # a real H100 node's, its ports all Active at 400
    ibstat.write_text(f"#!/bin/sh\ncat {FIXTURES / 'h100.ibstat.txt'}\n")
    ibstat.chmod(0o755)
    made.expect = replace(made.expect, hcas=(Hca("mlx5_4", None),), probes=("infiniband",))
    return made


def sysfs_of(node: Node) -> Path:
    return node.root / "sys-infiniband"   # the node's /sys/class/infiniband (health_node.Node.evidence_env)


def test_a_flapping_link_drains_its_node_naming_the_port_until_its_counters_are_reset(node):
    port(sysfs_of(node), link_downed=0)
    assert node.run().returncode == 0 and node.state == "IDLE"   # the first reading: a baseline
    port(sysfs_of(node), link_downed=3)
    assert node.run().returncode == 1
    assert node.state == "IDLE+DRAIN" and node.reason == "cf:ib:flap mlx5_4 port 1 link_downed +3"
    assert "keep gpu01: drained already" in node.run().stdout   # the counter no longer rises: held
    # Lifted by hand, the counters not cleared: drained again.
    node.set(state="IDLE", reason="")
    node.run()
    assert node.reason == "cf:ib:flap mlx5_4 port 1 link_downed +3"
    port(sysfs_of(node), link_downed=0)   # the admin's perfquery -R once the cable is reseated
    done = node.run()
    assert done.returncode == 0 and node.state == "IDLE", done.stdout
    assert node.updates[-1] == "scontrol update NodeName=gpu01 State=UNDRAIN"


def test_report_names_a_rise_and_changes_nothing(node):
    port(sysfs_of(node), symbol_error=10)
    node.run()
    saved = (node.state_dir / links.STATE).read_text()
    port(sysfs_of(node), symbol_error=30)
    done = node.run("report")
    assert [f["reason"] for f in json.loads(done.stdout)["findings"]] == [
        "cf:ib:errors mlx5_4 port 1 symbol_error +20"]
    assert (node.state_dir / links.STATE).read_text() == saved and node.state == "IDLE"
    node.run()
    assert node.reason == "cf:ib:errors mlx5_4 port 1 symbol_error +20"


def test_with_monitoring_the_check_writes_the_watched_counters(node):
    from prometheus_client.parser import text_string_to_metric_families

    (node.root / "textfile").mkdir()
    node.expect = replace(node.expect, metrics_dir=str(node.root / "textfile"))
    port(sysfs_of(node), link_downed=2, symbol_error=5)
    port(sysfs_of(node), "mlx5_5", link_downed=9)   # not declared: not read
    node.run()
    text = (node.root / "textfile" / "clusterforge_health.prom").read_text()
    written = {(s.labels["hca"], s.labels["port"], s.labels["counter"]): s.value
               for family in text_string_to_metric_families(text) for s in family.samples
               if s.name == "clusterforge_health_ib_port_errors_total"}
    assert written == {("mlx5_4", "1", "link_downed"): 2, ("mlx5_4", "1", "symbol_error"): 5}


def test_the_test_clusters_stand_in_is_read_by_the_program_where_it_is_roots_alone(node):
    stand_in = node.root / "testbed" / "infiniband"
    port(stand_in, link_downed=0)
    port(sysfs_of(node), link_downed=0)
    node.expect = replace(node.expect, infiniband_sysfs=str(stand_in))
    node.run()
    port(sysfs_of(node), link_downed=5)   # the kernel's: not read while the stand-in is there
    port(stand_in, link_downed=1)
    node.run()
    assert node.reason == "cf:ib:flap mlx5_4 port 1 link_downed +1"
    # A counter anyone could have written is not read: it neither rises nor clears what is held.
    (stand_in / "mlx5_4" / "ports" / "1" / "counters").chmod(0o777)
    port(stand_in, link_downed=0)
    done = node.run("report")
    assert json.loads(done.stdout)["findings"][0]["reason"] == "cf:ib:flap mlx5_4 port 1 link_downed +1"


def test_counters_that_do_not_answer_in_the_probes_bound_are_a_finding_and_the_reading_is_not_kept(tmp_path,
                                                                                                     monkeypatch):
    import threading

    from clusterforge.health import reads
    from clusterforge.slurm.commands import NOT_FOUND, Answer

    wedged = threading.Event()   # a wedged HCA's firmware: the read never returns
    monkeypatch.setattr(ibsysfs, "ports", lambda *args: wedged.wait() and [])
    monkeypatch.setenv("CLUSTERFORGE_HEALTH_SYS_INFINIBAND", str(tmp_path))
    expect = replace(EXPECT, probes=("infiniband",), probe_timeout_s=1)
    findings, _, _, link = reads.findings_of(expect, lambda argv, timeout: Answer(NOT_FOUND, "", ""), {}, "boot-1")
    wedged.set()
    assert [f.reason for f in findings] == [
        f"cf:ib:probe infiniband: the port counters under {tmp_path} gave no answer in 1 s"]
    assert link is None
