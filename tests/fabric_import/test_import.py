"""`clusterforge fabric import` on real ibnetdiscover output: the captured dumps (dumps/, made with ibsim) and, for
the large fabrics, dumps discovered with ibsim during the test."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fabric_import import ibsim, netfiles
from fabric_import.cases import CAPTURED, DEFAULT_HOSTS, gpu_cluster, with_fabric

from clusterforge import hostlists
from clusterforge.cli import cli
from clusterforge.errors import InventoryError
from clusterforge.fabric_import import DumpError, import_fabric
from clusterforge.fabric_import.apart import Apart
from clusterforge.loader import load_cluster
from clusterforge.model import Fabric, Leaf, Nodes, Rail, Spine, resolve
from clusterforge.render import render_all

from golden_cases import PROD


def test_prod_fabric_imports_as_the_inventory_has_it():
    prod = load_cluster(PROD)
    found = import_fabric(CAPTURED["prod"].text(), "prod.txt", cluster=prod)
    assert found.clean, (found.problems, found.differences)
    assert resolve(with_fabric(prod, found.fabric)).topology == resolve(prod).topology
    assert [(leaf.name, leaf.nodes) for leaf in found.fabric.leaves] == [
        (f"leaf{n:02d}", f"gpu-node-[{n * 8 - 7:03d}-{n * 8:03d}]") for n in range(1, 5)]
    # Two cables from each leaf to each spine: one child each.
    assert [(s.name, s.switches) for s in found.fabric.spines] == [("spine01", "leaf[01-04]"), ("spine02", "leaf[01-04]")]
    assert not found.fabric.rail_optimized and not found.fabric.disconnected


def test_rail_optimized_units_with_sharp_discovered_by_ibsim():
    """Two scalable units of 32 DGX x 8 HCAs on 8 leaves each, 4 spines, a SHARP aggregation node on every switch."""
    text = ibsim.discover(netfiles.rail_optimized(units=2, nodes=32, rails=8, spines=4, sharp=True).text())
    found = import_fabric(text, "rail", cluster=gpu_cluster("gpu-node-[001-064]"))
    assert found.problems == []
    assert "skipped 20 SHARP aggregation nodes" in found.summary
    assert found.summary[0] == "compute fabric: 16 leaves, 4 spines; 64 nodes with 512 HCAs"
    fabric = found.fabric
    assert fabric.rail_optimized
    assert [(leaf.name, leaf.nodes) for leaf in fabric.leaves] == (
        [(f"SU1-LEAF-{r}", "gpu-node-[001-032]") for r in range(1, 9)]
        + [(f"SU2-LEAF-{r}", "gpu-node-[033-064]") for r in range(1, 9)])
    assert {s.switches for s in fabric.spines} == {"SU1-LEAF-[1-8],SU2-LEAF-[1-8]"}
    valid = resolve(gpu_cluster("gpu-node-[001-064]", fabric))
    # One switch per scalable unit for Slurm: a job fits in a unit or spans the spines.
    assert [(s.name, hostlists.compress(s.nodes, valid.version)) for s in valid.topology.leaves] == [
        ("SU1-LEAF-1", "gpu-node-[001-032]"), ("SU2-LEAF-1", "gpu-node-[033-064]")]
    topology = render_all(valid)["topology.conf"]
    assert "SwitchName=SU1-LEAF-1 Nodes=gpu-node-[001-032]\n" in topology
    assert "SwitchName=SPINE-01 Switches=SU1-LEAF-1,SU2-LEAF-1\n" in topology


def test_captured_rail_dump_skips_sharp_and_names_both_hca_spellings():
    found = import_fabric(CAPTURED["rail-sharp"].text(), "rail-sharp.txt")
    assert found.clean
    assert "skipped 18 SHARP aggregation nodes" in found.summary
    # Unit 1 describes HCAs as `host mlx5_N`, unit 2 as `host HCA-N`.
    assert [leaf.nodes for leaf in found.fabric.leaves] == ["gpu-node-[001-004]"] * 8 + ["gpu-node-[005-008]"] * 8


def test_a_rail_cabled_to_another_unit_is_reported():
    text = ibsim.discover(netfiles.rail_optimized(units=2, nodes=4, rails=8, spines=2, miscabled="gpu-node-002").text())
    found = import_fabric(text, "rail")
    assert found.problems == [
        ("gpu-node-002 is on leaves SU1-LEAF-[1-7],SU2-LEAF-8, the nodes it shares a leaf with mostly on "
         "SU1-LEAF-[1-8]: a rail cabled elsewhere or a link down"),
        ("gpu-node-002 mlx5_7 port 1 is on SU2-LEAF-8 port 1, rail8's leaf (mlx5_7) of another unit; it belongs on "
         "SU1-LEAF-8 (rail8): a cable on another unit's leaf")]
    assert not found.clean


def test_three_tiers_come_from_the_links_not_the_names():
    found = import_fabric(CAPTURED["three-tier"].text(), "three-tier.txt")
    assert found.clean
    assert found.summary[0] == "compute fabric: 8 leaves, 4 spines, 2 cores; 32 nodes with 32 HCAs"
    spines = {s.name: s.switches for s in found.fabric.spines}
    assert spines == {"sw-p0s0": "sw-p0l[0-3]", "sw-p0s1": "sw-p0l[0-3]", "sw-p1s0": "sw-p1l[0-3]",
                      "sw-p1s1": "sw-p1l[0-3]", "sw-x1": "sw-p0s[0-1],sw-p1s[0-1]",
                      "sw-x2": "sw-p0s[0-1],sw-p1s[0-1]"}
    valid = resolve(gpu_cluster("node[01-32]", found.fabric))
    assert len(valid.topology.leaves) == 8


def test_default_descriptions_are_reported_with_guid_and_switch_port(tmp_path):
    text = CAPTURED["defaults"].text()
    prod = load_cluster(PROD)
    found = import_fabric(text, "defaults.txt", cluster=prod)
    net = CAPTURED["defaults"].net()
    where = {"gpu-node-003": "leaf01 port 3", "gpu-node-010": "leaf02 port 2", "gpu-node-020": "leaf03 port 4"}
    assert found.problems == [
        f"unnamed HCA on the compute fabric: node GUID {net.guid(f'H-{h}_mlx5_0')}, port GUID "
        f"{net.port_guid(f'H-{h}_mlx5_0')}, description '{netfiles.DEFAULT_DESCRIPTION}', on {where[h]} "
        "(name it on the host with rdma-ndd, or list it with --guids)" for h in DEFAULT_HOSTS]
    assert found.differences == ["not in the fabric (no HCA on it): gpu-node-[003,010,020]"]


def test_guid_file_names_the_rest(tmp_path):
    net = CAPTURED["defaults"].net()
    # As `pdsh -w HOSTS ibstat -p` prints them (port GUIDs), and a node GUID written by hand.
    guids = tmp_path / "guids.txt"
    guids.write_text(f"gpu-node-003: {net.port_guid('H-gpu-node-003_mlx5_0')}\n"
                     f"{net.guid('H-gpu-node-010_mlx5_0')[2:]} gpu-node-010   # node GUID, no 0x\n")
    runner = CliRunner()
    result = runner.invoke(cli, ["fabric", "import", str(CAPTURED["defaults"].path), "--inventory", str(PROD),
                                 "--guids", str(guids), "--verbose"])
    assert result.exit_code == 1
    assert "2 HCA(s) named through the GUID file" in result.stderr
    assert "gpu-node-020" in result.stderr and "leaf03 port 4" in result.stderr
    guids.write_text(guids.read_text() + f"gpu-node-020: {net.port_guid('H-gpu-node-020_mlx5_0')}\n")
    result = runner.invoke(cli, ["fabric", "import", str(CAPTURED["defaults"].path), "--inventory", str(PROD),
                                 "--guids", str(guids)])
    assert result.exit_code == 0, result.stderr
    assert "the fabric is as the inventory says" in result.stderr


def test_the_storage_fabric_is_told_from_the_compute_fabric():
    prod = load_cluster(PROD)
    found = import_fabric(CAPTURED["storage"].text(), "storage.txt", cluster=prod)
    assert found.clean
    assert resolve(with_fabric(prod, found.fabric)).topology == resolve(prod).topology
    assert ("another fabric, left out (its nodes are on the compute fabric through more HCAs): 1 switch, 6 CAs "
            "(ddn01, ddn02, gpu-node-001, ...)") in found.summary


def test_islands_of_the_inventorys_nodes_make_a_disconnected_fabric():
    prod = load_cluster(PROD)
    found = import_fabric(CAPTURED["islands"].text(), "islands.txt", cluster=prod)
    assert found.fabric.disconnected
    assert found.summary[0] == "compute fabric in 2 disconnected parts: 4 leaves, 2 spines; 32 nodes with 32 HCAs"
    assert found.differences == [
        "spine spine01: above leaf[01-02] in the fabric, leaf[01-04] in the inventory",
        "spine spine02: above leaf[03-04] in the fabric, leaf[01-04] in the inventory"]
    resolve(with_fabric(prod, found.fabric))  # valid: disconnected on purpose


def test_differences_from_the_inventory():
    prod = load_cluster(PROD)
    nodes = list(prod.nodes)
    nodes[0] = nodes[0].model_copy(update={"names": "gpu-node-[001-007]", "address": "10.0.1.[1-7]"})
    nodes.append(Nodes("gpu-node-008", address="10.0.1.8", profile="dgx-h100", leaf="leaf02"))
    nodes.append(Nodes("gpu-node-033", address="10.0.1.33", profile="dgx-h100", leaf="leaf04"))
    nodes[3] = nodes[3].model_copy(update={"names": "gpu-node-[025-031]", "address": "10.0.1.[25-31]"})
    changed = prod.model_copy(update={"nodes": tuple(nodes)})
    found = import_fabric(CAPTURED["prod"].text(), "prod.txt", cluster=changed)
    assert found.differences == [
        "gpu-node-008: under leaf01 in the fabric, leaf02 in the inventory",
        "not in the fabric (no HCA on it): gpu-node-033"]
    # A host of the fabric the inventory lacks is listed with the other hosts that are no compute node.
    assert found.apart == [Apart("gpu-node-032", "not a node of the inventory", ("leaf04 port 8",))]
    assert not found.clean


def test_an_inventory_resolve_refuses_is_compared_all_the_same():
    prod = load_cluster(PROD)
    nodes = list(prod.nodes)
    nodes[1] = nodes[1].model_copy(update={"leaf": "leaf09"})
    nodes[2] = nodes[2].model_copy(update={"leaf": None})
    wrong = prod.model_copy(update={"nodes": tuple(nodes)})
    with pytest.raises(InventoryError):
        resolve(wrong)
    found = import_fabric(CAPTURED["prod"].text(), "prod.txt", cluster=wrong)
    assert found.differences == (
        [f"gpu-node-{n:03d}: under leaf02 in the fabric, leaf09 in the inventory" for n in range(9, 17)]
        + [f"gpu-node-{n:03d}: under leaf03 in the fabric, no leaf in the inventory" for n in range(17, 25)])


def test_each_leaf_of_a_rail_optimized_unit_is_compared():
    """Not the one switch per unit resolve makes of them: a rail cabled to another unit's leaf is a difference."""
    fabric = import_fabric(CAPTURED["rail-sharp"].text()).fabric
    inventory = gpu_cluster("gpu-node-[001-008]", fabric)
    assert import_fabric(CAPTURED["rail-sharp"].text(), cluster=inventory).clean
    leaves = list(fabric.leaves)
    leaves[7] = leaves[7].model_copy(update={"nodes": "gpu-node-[001-003]"})
    leaves[15] = leaves[15].model_copy(update={"nodes": "gpu-node-[004-008]"})
    moved = inventory.model_copy(update={"fabric": fabric.model_copy(update={"leaves": tuple(leaves)})})
    assert import_fabric(CAPTURED["rail-sharp"].text(), cluster=moved).differences == [
        "gpu-node-004: under SU1-LEAF-[1-8] in the fabric, SU1-LEAF-[1-7],SU2-LEAF-8 in the inventory"]


def test_cli_prints_the_fabric_and_writes_a_module_the_inventory_imports(tmp_path, monkeypatch):
    runner = CliRunner()
    dump = str(CAPTURED["rail-sharp"].path)
    printed = runner.invoke(cli, ["fabric", "import", dump])
    assert printed.exit_code == 0, printed.output
    assert printed.stdout.startswith('Fabric(\n    leaves=(\n        Leaf("SU1-LEAF-1", nodes="gpu-node-[001-004]"),')
    assert "    rail_optimized=True,  # each node is on one leaf per rail\n)" in printed.stdout
    module = tmp_path / "site_fabric.py"
    written = runner.invoke(cli, ["fabric", "import", dump, "--out", str(module)])
    assert written.exit_code == 0 and written.stdout == ""
    monkeypatch.syspath_prepend(str(tmp_path))
    from site_fabric import fabric  # type: ignore[import-not-found]
    assert fabric.model_dump() == import_fabric(CAPTURED["rail-sharp"].text()).fabric.model_dump()
    assert eval(printed.stdout, {"Fabric": Fabric, "Leaf": Leaf, "Rail": Rail,
                                 "Spine": Spine}).model_dump() == fabric.model_dump()


def test_cli_does_not_write_a_partial_fabric(tmp_path):
    module = tmp_path / "site_fabric.py"
    result = CliRunner().invoke(cli, ["fabric", "import", str(CAPTURED["defaults"].path), "--out", str(module)])
    assert result.exit_code == 1
    assert "not written: 3 HCA(s) of the compute fabric are unnamed" in result.stderr
    assert not module.exists()


def test_cli_reads_stdin_and_refuses_a_dump_without_the_inventorys_nodes():
    result = CliRunner().invoke(cli, ["fabric", "import", "-", "--inventory", str(PROD)],
                                input=CAPTURED["three-tier"].text())
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: stdin: no HCA of the inventory's nodes is in the dump")


def test_importing_needs_no_pyinfra():
    code = "import sys, clusterforge.fabric_import; assert 'pyinfra' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_no_compute_fabric_without_named_hcas():
    text = re.sub(r'"gpu-node-\d+ mlx5_0"', f'"{netfiles.DEFAULT_DESCRIPTION}"', CAPTURED["prod"].text())
    # One line for the 32 unnamed HCAs, not 32.
    with pytest.raises(DumpError, match=r"^prod.txt: no HCA that names its host is in the dump.*found: 32 unnamed "
                                        r"HCAs \(the first: node GUID 0x[0-9a-f]{16}, port GUID 0x[0-9a-f]{16}, "
                                        r"description 'MT4129 ConnectX7   Mellanox Technologies', on leaf01 port 1; "
                                        r"name them with --guids\); another fabric, left out"):
        import_fabric(text, "prod.txt")
