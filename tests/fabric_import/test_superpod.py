"""A DGX H100 SuperPOD dump (dumps/superpod*.txt, made with ibsim from netfiles.superpod): 4 scalable units of 4 DGX,
8 rail leaves each, 4 spines, a SHARP aggregation node on every switch, and three hosts that are no compute node
(ufm01, a host described `ubuntu`, gw01 with one HCA). Rails named from the descriptions and from leaf position,
the hosts listed apart, the report's order, and the rails compared with an inventory's."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from click.testing import CliRunner
from fabric_import import netfiles
from fabric_import.cases import CAPTURED, gpu_cluster

from clusterforge.cli import cli
from clusterforge.fabric_import import fabric_expression, import_fabric, read_guid_file
from clusterforge.fabric_import.apart import DEFAULT_NAME, Apart, by_name, guess
from clusterforge.fabric_import.write import nccl_proposal
from clusterforge.model import Fabric, Leaf, Nccl, Rail, Spine, resolve

DGX = "dgx-[001-016]"
RAIL_LEAVES = [f"su1-leaf{r},su2-leaf{r},su3-leaf{r},su4-leaf{r}" for r in range(1, 9)]
ONE_HCA = "1 HCA on the compute fabric where the compute nodes have 8"


def rails(fabric):
    """(name, hca, leaves) of each rail: entries compare equal only where they were written, too."""
    return [(r.name, r.hca, r.leaves) for r in fabric.rails]


def guids(tmp_path):
    path = tmp_path / "guids.txt"
    path.write_text(netfiles.superpod_guids(CAPTURED["superpod"].net()))
    return path


def from_guid_file(tmp_path, text=None, cluster=None):
    return import_fabric(text or CAPTURED["superpod"].text(), "superpod.txt", read_guid_file(guids(tmp_path)), cluster)


def test_rails_are_named_by_the_devices_the_descriptions_name():
    found = import_fabric(CAPTURED["superpod-named"].text(), "superpod-named.txt")
    assert found.clean, found.problems
    assert rails(found.fabric) == [(f"rail{i}", hca, leaves) for i, (hca, leaves)
                                   in enumerate(zip(netfiles.DGX_H100_HCAS, RAIL_LEAVES, strict=True), 1)]
    assert found.rails_how == "by the device each HCA's description names"
    assert found.summary[:3] == ["compute fabric: 32 leaves, 4 spines; 16 nodes with 128 HCAs",
                                 "8 rails, by the device each HCA's description names:",
                                 "  rail1 = mlx5_0 on su1-leaf1,su2-leaf1,su3-leaf1,su4-leaf1"]
    assert ('    rails=(\n        Rail("rail1", hca="mlx5_0", leaves="su1-leaf1,su2-leaf1,su3-leaf1,su4-leaf1"),\n'
            in fabric_expression(found.fabric))
    resolve(gpu_cluster(DGX, found.fabric))  # the rails are valid in an inventory
    proposal = nccl_proposal(found.fabric)
    hcas = ", ".join(f'"{h}"' for h in netfiles.DGX_H100_HCAS)
    assert proposal == f"# NCCL over the rails, for the compute nodes' profile: Profile(..., nccl=Nccl(ib_hca=({hcas},)))"
    # the proposal is valid NCCL of a profile on those rails: each HCA is one of the rails'
    cluster = gpu_cluster(DGX, found.fabric)
    profile = cluster.profiles[0].model_copy(update={"nccl": Nccl(ib_hca=netfiles.DGX_H100_HCAS)})
    resolve(cluster.model_copy(update={"profiles": (profile,)}))


def test_a_cable_on_another_rails_leaf_is_reported():
    # dgx-003's first two HCAs describe each other's device: as if their cables were swapped at the leaves.
    text = CAPTURED["superpod-named"].text()
    text = text.replace('"dgx-003 mlx5_0"', '"swap"').replace('"dgx-003 mlx5_3"', '"dgx-003 mlx5_0"')
    found = import_fabric(text.replace('"swap"', '"dgx-003 mlx5_3"'), "swapped.txt")
    assert found.off_rail == [
        ("dgx-003 mlx5_0 port 1 is on su1-leaf2 port 3, rail2's leaf (mlx5_3); it belongs on su1-leaf1 (rail1): "
         "crossed with mlx5_3, on su1-leaf1 port 3"),
        ("dgx-003 mlx5_3 port 1 is on su1-leaf1 port 3, rail1's leaf (mlx5_0); it belongs on su1-leaf2 (rail2): "
         "crossed with mlx5_0, on su1-leaf2 port 3")]
    assert [r.hca for r in found.fabric.rails] == list(netfiles.DGX_H100_HCAS)  # the other 15 DGX decide
    assert not found.clean


def test_rails_without_device_names_come_from_each_leafs_place_in_its_unit(tmp_path):
    found = from_guid_file(tmp_path)
    assert found.problems == []
    assert [r.leaves for r in found.fabric.rails] == RAIL_LEAVES
    assert found.rails_how == ("by each leaf's place in its scalable unit (the leaves with the same nodes, in name "
                               "order), as 120 of 128 HCAs name no device in their description")
    # dgx-006 describes its HCAs: its devices name the rails all the same.
    assert [r.hca for r in found.fabric.rails] == list(netfiles.DGX_H100_HCAS)
    # Without it no rail knows its HCA.
    text = re.sub(r'"dgx-006 mlx5_\d+"', f'"{netfiles.DEFAULT_DESCRIPTION}"', CAPTURED["superpod"].text())
    assert rails(from_guid_file(tmp_path, text).fabric) == [(f"rail{i}", None, leaves)
                                                            for i, leaves in enumerate(RAIL_LEAVES, 1)]


def test_hosts_that_are_no_compute_nodes_are_listed_apart_and_left_out(tmp_path):
    found = from_guid_file(tmp_path)
    assert found.apart == [
        Apart("gw01", ONE_HCA, ("su3-leaf8 port 33",)),
        Apart("ubuntu", DEFAULT_NAME, ("su2-leaf4 port 33",)),
        Apart("ufm01", f"its name says a UFM server; {ONE_HCA}", ("su1-leaf1 port 33",))]
    assert [leaf.nodes for leaf in found.fabric.leaves] == [f"dgx-[{u * 4 - 3:03d}-{u * 4:03d}]" for u in range(1, 5)
                                                            for _ in range(8)]
    assert found.clean  # a guess without an inventory: listed, not a problem
    # With an inventory its nodes decide, and a host it lacks is a difference.
    found = from_guid_file(tmp_path, cluster=gpu_cluster(DGX, found.fabric))
    assert found.apart == [
        Apart("gw01", "not a node of the inventory", ("su3-leaf8 port 33",)),
        Apart("ubuntu", DEFAULT_NAME, ("su2-leaf4 port 33",)),
        Apart("ufm01", "not a node of the inventory; its name says a UFM server", ("su1-leaf1 port 33",))]
    assert found.differences == [] and not found.clean
    # A UFM server is on every fabric and in no inventory: named apart, it alone fails no check.
    assert replace(found, apart=[a for a in found.apart if a.host == "ufm01"]).clean


def test_the_summary_comes_first_and_each_hca_only_with_verbose(tmp_path):
    runner = CliRunner()
    dump = str(CAPTURED["superpod"].path)
    result = runner.invoke(cli, ["fabric", "import", dump])
    assert result.exit_code == 1
    report = result.stderr.splitlines()
    assert report[:3] == ["# compute fabric: 8 leaves, 4 spines, 24 cores; 1 node with 8 HCAs",
                          "# 8 rails, by the device each HCA's description names:",
                          "#   rail1 = mlx5_0 on su2-leaf1"]
    assert ("problem: 120 HCAs of the compute fabric are unnamed (their description is the vendor's default): name "
            "them on the hosts with rdma-ndd or list them with --guids; --verbose lists each") in report
    assert "unnamed HCA on the compute fabric: node GUID" not in result.stderr
    # What is printed goes to stdout alone, so `> file` keeps only the Fabric(...); the summary is before it.
    assert result.stdout.startswith("Fabric(\n") and result.stdout.endswith(")\n")
    assert result.output.index("# compute fabric") < result.output.index("Fabric(\n")
    assert result.output.index("Fabric(\n") < result.output.index("not compute nodes, check these")
    verbose = runner.invoke(cli, ["fabric", "import", dump, "--verbose"])
    each = [line for line in verbose.stderr.splitlines() if line.startswith("problem: unnamed HCA on the compute")]
    assert len(each) == 120 and verbose.exit_code == 1
    assert verbose.output.index("Fabric(\n") < verbose.output.index(each[0])

    named = runner.invoke(cli, ["fabric", "import", dump, "--guids", str(guids(tmp_path))])
    assert named.exit_code == 0, named.stderr
    assert named.stderr.splitlines() == [
        "# compute fabric: 32 leaves, 4 spines; 16 nodes with 128 HCAs",
        ("# 8 rails, by each leaf's place in its scalable unit (the leaves with the same nodes, in name order), as "
         "120 of 128 HCAs name no device in their description:"),
        *[f"#   rail{i} = {hca} on {leaves}" for i, (hca, leaves)
          in enumerate(zip(netfiles.DGX_H100_HCAS, RAIL_LEAVES, strict=True), 1)],
        "# skipped 36 SHARP aggregation nodes",
        "# 128 HCA(s) named through the GUID file",
        ("# 3 hosts on the compute fabric are no compute nodes, left out of the leaves: gw01, ubuntu, ufm01 (why: "
         "after the Fabric)"),
        "not compute nodes, check these (left out of the Fabric's leaves):",
        f"  gw01 (on su3-leaf8 port 33): {ONE_HCA}",
        f"  ubuntu (on su2-leaf4 port 33): {DEFAULT_NAME}",
        f"  ufm01 (on su1-leaf1 port 33): its name says a UFM server; {ONE_HCA}"]
    fabric = eval(named.stdout, {"Fabric": Fabric, "Leaf": Leaf, "Rail": Rail, "Spine": Spine})
    assert fabric.model_dump() == from_guid_file(tmp_path).fabric.model_dump()


def test_an_inventorys_rails_are_compared(tmp_path):
    fabric = import_fabric(CAPTURED["superpod-named"].text()).fabric
    same = import_fabric(CAPTURED["superpod-named"].text(), cluster=gpu_cluster(DGX, fabric))
    assert same.differences == [] and [a.host for a in same.apart] == ["gw01", "ubuntu", "ufm01"]
    rails = list(fabric.rails)
    rails[0] = rails[0].model_copy(update={"hca": "mlx5_1"})
    rails[1] = rails[1].model_copy(update={"leaves": "su1-leaf2,su2-leaf2,su3-leaf2,su3-leaf5"})
    rails[2] = rails[2].model_copy(update={"name": "ib-rail-3"})  # a label of the admin's: no difference
    del rails[7]
    written = gpu_cluster(DGX, fabric.model_copy(update={"rails": tuple(rails)}))
    found = import_fabric(CAPTURED["superpod-named"].text(), cluster=written)
    assert found.differences == [
        "rail rail1: HCA mlx5_1 in the inventory, mlx5_0 in the fabric",
        "rail rail2: su4-leaf2 on it in the fabric, not in the inventory",
        "rail rail2: su3-leaf5 on it in the inventory, not in the fabric",
        "rail of mlx5_11 on su1-leaf8,su2-leaf8,su3-leaf8,su4-leaf8: in the fabric, not in the inventory"]
    # Rails found by leaf position with no device named anywhere know no HCA: the inventory's are no difference.
    text = re.sub(r'"dgx-006 mlx5_\d+"', f'"{netfiles.DEFAULT_DESCRIPTION}"', CAPTURED["superpod"].text())
    unknown = from_guid_file(tmp_path, text, cluster=gpu_cluster(DGX, fabric))
    assert {r.hca for r in unknown.fabric.rails} == {None} and unknown.differences == []


@pytest.mark.parametrize(("host", "reason"), [
    ("ufm01", "its name says a UFM server"), ("ufm-server", "its name says a UFM server"),
    ("mgmt01", "its name says a management host"), ("headnode", "its name says a head node"),
    ("bcm-head-01", "its name says a Base Command Manager head node"),
    ("dgx-001", None), ("gpu-node-001", None), ("sufm7", None)])
def test_what_a_hosts_name_says(host, reason):
    assert by_name(host) == reason


def test_few_hcas_make_a_host_apart_only_where_nodes_have_many():
    dgx = {f"dgx-{i}": [f"{i}-{k}" for k in range(8)] for i in range(3)}
    assert guess({**dgx, "svc01": ["s0"], "dgx-9": [f"9-{k}" for k in range(5)]}) == {
        "svc01": "1 HCA on the compute fabric where the compute nodes have 8"}
    # Dual-rail nodes, one with a link down: that is no server.
    assert guess({"n1": ["a", "b"], "n2": ["c", "d"], "n3": ["e"]}) == {}
