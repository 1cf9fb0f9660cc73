"""`check --fabric`: the live fabric against the inventory, through the code `fabric import --inventory` runs. The
dumps are tests/fabric_import/dumps, made with ibsim (netfiles.port_labelled: 3 scalable units of 3 DGX): a unit
short of a leaf, crossed cables, a node on another rail's leaf, a node on another unit's leaf. The hosts are faked
as the other checks' tests fake them: a function from a command to its Answer."""

from __future__ import annotations

import subprocess
from pathlib import Path

from check.test_run import _closed_port
from fabric_import.cases import CAPTURED, gpu_cluster

from clusterforge.check import exit_status, report
from clusterforge.check.fabric import DISCOVER, HAS_DISCOVER, TRIES, FabricSource, discover, outcome
from clusterforge.check.run import check_cluster
from clusterforge.fabric_import import import_fabric
from clusterforge.reach.hosts import Target, load_with_entries
from clusterforge.reach.ssh import Unreachable
from clusterforge.slurm.commands import Answer

REPO = Path(__file__).resolve().parents[2]


def _uncrossed() -> str:
    """crossed.txt with dgx-002's HCA-5 and HCA-6 back on their own leaves: the fabric as cabled right."""
    return (CAPTURED["crossed"].text().replace('"dgx-002 HCA-5"', '"swap"')
            .replace('"dgx-002 HCA-6"', '"dgx-002 HCA-5"').replace('"swap"', '"dgx-002 HCA-6"'))


RIGHT = _uncrossed()
INVENTORY = gpu_cluster("dgx-[001-009]", import_fabric(RIGHT).fabric)  # the inventory of the fabric cabled right


def messages(row) -> list[str]:
    return [f.message for f in row.findings]


def test_the_fabric_as_the_inventory_says_is_ok():
    row = outcome("dgx-001", RIGHT, INVENTORY)
    assert (row.host, row.check, row.status) == ("dgx-001", "fabric", "ok")
    assert row.detail == "compute fabric: 24 leaves, 2 spines; 9 nodes with 72 HCAs; as the inventory says"


def test_crossed_cables_are_findings_naming_both_ends():
    row = outcome("dgx-001", CAPTURED["crossed"].text(), INVENTORY)
    assert messages(row) == [
        ("dgx-002 HCA-5 port 1 is on su1-leaf6 port 2, rail6's leaf (HCA-6); it belongs on su1-leaf5 (rail5): "
         "crossed with HCA-6, on su1-leaf5 port 2"),
        ("dgx-002 HCA-6 port 1 is on su1-leaf5 port 2, rail5's leaf (HCA-5); it belongs on su1-leaf6 (rail6): "
         "crossed with HCA-5, on su1-leaf6 port 2")]
    assert exit_status([row]) == 1


def test_a_node_on_the_wrong_leaf_is_named_against_the_inventory_and_by_its_cable():
    found = messages(outcome("dgx-001", CAPTURED["two-rails"].text(), INVENTORY))
    assert found[:2] == [
        "dgx-008: under su3-leaf[1-2,4-8] in the fabric, su3-leaf[1-8] in the inventory",
        ("dgx-008 HCA-3 port 1 is on su3-leaf4 port 2, rail4's leaf (HCA-4); it belongs on su3-leaf3 (rail3): a "
         "cable on another rail's leaf")]
    other = messages(outcome("dgx-001", CAPTURED["other-unit"].text(), INVENTORY))
    assert ("dgx-002 HCA-4 port 1 is on su2-leaf4 port 6, rail4's leaf (HCA-4) of another unit; it belongs on "
            "su1-leaf4 (rail4): a cable on another unit's leaf") in other


def test_a_leaf_missing_is_named_with_the_rail_and_the_nodes_it_leaves_without():
    found = messages(outcome("dgx-001", CAPTURED["short-unit"].text(), INVENTORY))
    assert "rail rail4: su2-leaf4 on it in the inventory, not in the fabric" in found
    assert found[-1] == ("the scalable unit of dgx-[004-006] has 7 leaves (su2-leaf[1-3,5-8]) where another has 8: "
                         "it lacks rail4 (HCA-4): dgx-[004-006] HCA-4 on no leaf")


def test_a_host_of_the_fabric_the_inventory_lacks_is_a_finding():
    fewer = gpu_cluster("dgx-[001-008]", import_fabric(RIGHT).fabric)
    assert [m for m in messages(outcome("dgx-001", RIGHT, fewer)) if m.startswith("not a compute")] == [
        "not a compute node of the inventory: dgx-009 (on su3-leaf1 port 3, su3-leaf2 port 3, su3-leaf3 port 3, "
        "... (8 HCAs)): not a node of the inventory"]


def test_an_unreadable_dump_is_a_finding_not_a_traceback():
    row = outcome("dgx-001", RIGHT[: len(RIGHT) // 2], INVENTORY)
    assert row.status == "FINDING" and messages(row)[0].startswith("ibnetdiscover on dgx-001:")


def hosts(answers: dict[str, dict[str, Answer | Exception]]):
    """runner(host) -> run(command), each host answering from ``answers``; a command it lacks is an error."""
    def runner(host: str):
        def run(command: str) -> Answer:
            answer = answers[host][command]
            if isinstance(answer, Exception):
                raise answer
            return answer
        return run
    return runner


NO_DIAGS = {HAS_DISCOVER: Answer(1, "", "")}
NO_HCA = {HAS_DISCOVER: Answer(0, "/usr/sbin/ibnetdiscover\n", ""),
          DISCOVER: Answer(1, "", "ibwarn: [1234] mad_rpc_open_port: can't open UMAD port ((null):0)\n")}
HAS_IT = {HAS_DISCOVER: Answer(0, "/usr/sbin/ibnetdiscover\n", ""), DISCOVER: Answer(0, RIGHT, "")}


def test_the_first_compute_node_that_discovers_the_fabric_reports_it():
    runner = hosts({"dgx-001": NO_DIAGS, "dgx-002": NO_HCA, "dgx-003": HAS_IT})
    row = discover(FabricSource(INVENTORY), ["dgx-001", "dgx-002", "dgx-003"], runner, "ctl")
    assert (row.host, row.status) == ("dgx-003", "ok")


def test_no_host_with_ibnetdiscover_is_could_not_check_naming_each_and_why():
    # The test cluster's containers: no HCA, no infiniband-diags. Only the first TRIES nodes are asked.
    lost = {HAS_DISCOVER: Unreachable("dgx-003", "Connection reset")}
    runner = hosts({"dgx-001": NO_DIAGS, "dgx-002": NO_HCA, "dgx-003": lost})
    row = discover(FabricSource(INVENTORY), ["dgx-001", "dgx-002", "dgx-003", "dgx-004"], runner, "ctl")
    assert TRIES == 3 and (row.host, row.check, row.status) == ("ctl", "fabric", "UNCHECKED")
    assert messages(row) == [
        "could not check: dgx-001 has no ibnetdiscover; `ibnetdiscover` on dgx-002 failed: exit 1: ibwarn: [1234] "
        "mad_rpc_open_port: can't open UMAD port ((null):0); dgx-003: connection lost: Connection reset "
        "(infiniband-diags, and an HCA up); name a host on the fabric with --fabric-from"]
    assert exit_status([row]) == 2


def test_fabric_from_asks_that_host_alone():
    row = discover(FabricSource(INVENTORY, "ufm01"), ["ufm01"], hosts({"ufm01": HAS_IT}), "ctl")
    assert (row.host, row.status) == ("ufm01", "ok")
    gone = discover(FabricSource(INVENTORY, "ufm01"), [], hosts({}), "ctl")
    assert messages(gone) == ["could not check: --fabric-from ufm01 could not be reached"]


def unreachable_cluster():
    loaded, targets = load_with_entries("inventories/vagrant.py")
    port = _closed_port()
    far = [Target(t.machine, {**t.data, "ssh_hostname": "127.0.0.1", "ssh_port": port}) for t in targets]
    return loaded, far


def test_check_cluster_adds_the_fabric_row_only_when_asked():
    loaded, far = unreachable_cluster()
    asked = check_cluster(loaded.valid, far, fabric=FabricSource(loaded.cluster))
    assert asked[-1].to_json() == {
        "host": "ctl", "check": "fabric", "status": "UNCHECKED", "detail": "", "findings": [
            {"kind": "unchecked", "message": "could not check: no compute node answered to run ibnetdiscover"}]}
    assert '"check": "fabric"' in report.as_json("vagrant", asked)
    assert "fabric" not in {o.check for o in check_cluster(loaded.valid, far)}


def test_fabric_from_naming_no_host_is_a_user_mistake():
    result = subprocess.run([str(REPO / ".venv" / "bin" / "clusterforge"), "check", "inventories/vagrant.py",
                             "--fabric-from", "ufm01"], cwd=REPO, text=True, capture_output=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "--fabric-from ufm01: not a host of inventories/vagrant.py" in result.stderr
    assert "Traceback" not in result.stderr
