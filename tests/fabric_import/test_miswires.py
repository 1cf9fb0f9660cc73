"""Rails from the HCAs' port labels, and every miswire named with its cable ends (dumps/short-unit.txt, crossed.txt,
two-rails.txt, other-unit.txt, made with ibsim from netfiles.port_labelled): 3 scalable units of 3 DGX whose HCAs
say `dgx-001 HCA-4`, as most of a real SuperPOD dump's do; one unit one leaf short, one DGX with HCA-5 and HCA-6
crossed, one DGX with HCA-3 on the HCA-4 leaf, one DGX with HCA-4 on another unit's HCA-4 leaf."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from fabric_import.cases import CAPTURED, gpu_cluster

from clusterforge import loader
from clusterforge.cli import cli
from clusterforge.errors import InventoryError
from clusterforge.fabric_import import import_fabric
from clusterforge.model import Fabric

DGX = "dgx-[001-009]"
UNITS = (1, 2, 3)


def rail_leaves(found):
    return [(r.name, r.hca, r.leaves) for r in found.fabric.rails]


def full(rail, units=UNITS):
    return ",".join(f"su{u}-leaf{rail}" for u in units)


def without_labels(text):
    """The same fabric with every HCA described by its host alone: no port label anywhere."""
    return re.sub(r'"(dgx-\d+) HCA-\d+"', r'"\1"', text)


def test_a_unit_short_of_a_leaf_keeps_its_later_leaves_on_their_rails():
    # su2-leaf4 is missing. The old inference put su2-leaf5 on rail4, su2-leaf6 on rail5, ... and said nothing.
    found = import_fabric(CAPTURED["short-unit"].text(), "short-unit.txt")
    assert rail_leaves(found) == [(f"rail{r}", None, full(r, (1, 3) if r == 4 else UNITS)) for r in range(1, 9)]
    assert found.rail_labels == {f"rail{r}": (f"HCA-{r}",) for r in range(1, 9)}
    assert found.rails_how == "by the port label each HCA's description names"
    assert found.summary[1:3] == ["8 rails, by the port label each HCA's description names:",
                                  "  rail1 = HCA-1 (device not known) on su1-leaf1,su2-leaf1,su3-leaf1"]
    assert found.short_units == [
        "the scalable unit of dgx-[004-006] has 7 leaves (su2-leaf[1-3,5-8]) where another has 8: it lacks rail4 "
        "(HCA-4): dgx-[004-006] HCA-4 on no leaf"]
    assert found.off_rail == [] and not found.clean


def test_without_labels_position_is_the_last_resort_and_says_so():
    found = import_fabric(without_labels(CAPTURED["short-unit"].text()), "short-unit.txt")
    assert found.rails_how == ("by each leaf's place in its scalable unit (the leaves with the same nodes, in name "
                               "order), as 69 of 69 HCAs name no device in their description")
    # By position su2-leaf5 is on rail4: what the labels say is wrong, and the output says it is a guess.
    assert found.fabric.rails[3].leaves == "su1-leaf4,su2-leaf5,su3-leaf4"
    assert found.short_units == [
        "the scalable unit of dgx-[004-006] has 7 leaves (su2-leaf[1-3,5-8]) where another has 8: its HCAs name no "
        "port label, so by each leaf's place in its scalable unit (the leaves with the same nodes, in name order) it "
        "lacks rail8; a guess, as is the rail of each of its leaves after the gap"]
    assert not found.clean


def test_crossed_cables_are_named_with_both_leaves_and_both_ends():
    found = import_fabric(CAPTURED["crossed"].text(), "crossed.txt")
    assert rail_leaves(found) == [(f"rail{r}", None, full(r)) for r in range(1, 9)]
    assert found.off_rail == [
        ("dgx-002 HCA-5 port 1 is on su1-leaf6 port 2, rail6's leaf (HCA-6); it belongs on su1-leaf5 (rail5): "
         "crossed with HCA-6, on su1-leaf5 port 2"),
        ("dgx-002 HCA-6 port 1 is on su1-leaf5 port 2, rail5's leaf (HCA-5); it belongs on su1-leaf6 (rail6): "
         "crossed with HCA-5, on su1-leaf6 port 2")]
    # Its leaves are its peers' all the same: only the labels tell.
    assert found.miscabled == [] and found.short_units == [] and not found.clean


def test_a_node_on_two_rails_leaves_is_named():
    found = import_fabric(CAPTURED["two-rails"].text(), "two-rails.txt")
    assert rail_leaves(found) == [(f"rail{r}", None, full(r)) for r in range(1, 9)]
    assert found.off_rail == [
        ("dgx-008 HCA-3 port 1 is on su3-leaf4 port 2, rail4's leaf (HCA-4); it belongs on su3-leaf3 (rail3): "
         "a cable on another rail's leaf")]
    assert found.miscabled == [
        ("dgx-008 is on leaves su3-leaf[1-2,4-8], the nodes it shares a leaf with mostly on su3-leaf[1-8]: a rail "
         "cabled elsewhere or a link down")]


def test_a_node_on_its_rails_leaf_of_another_unit_is_named():
    # dgx-002 (unit 1) has HCA-4 on su2-leaf4: the right rail, the wrong unit. Its label matches its leaf's, so
    # only the unit tells; it was only "cabled unlike its peers", without the cable's ends.
    found = import_fabric(CAPTURED["other-unit"].text(), "other-unit.txt")
    assert rail_leaves(found) == [(f"rail{r}", None, full(r)) for r in range(1, 9)]
    assert found.off_unit == [
        ("dgx-002 HCA-4 port 1 is on su2-leaf4 port 6, rail4's leaf (HCA-4) of another unit; it belongs on "
         "su1-leaf4 (rail4): a cable on another unit's leaf")]
    assert found.cabling == found.off_unit
    assert found.off_rail == [] and found.short_units == []
    assert found.miscabled == [
        ("dgx-002 is on leaves su1-leaf[1-3,5-8],su2-leaf4, the nodes it shares a leaf with mostly on "
         "su1-leaf[1-8]: a rail cabled elsewhere or a link down")]
    assert not found.clean
    # Without labels nothing says which HCA it is: it stays a node cabled unlike its peers.
    assert import_fabric(without_labels(CAPTURED["other-unit"].text())).cabling == []


def test_a_clean_labelled_fabric_is_clean():
    found = import_fabric(CAPTURED["crossed"].text().replace('"dgx-002 HCA-5"', '"swap"')
                          .replace('"dgx-002 HCA-6"', '"dgx-002 HCA-5"').replace('"swap"', '"dgx-002 HCA-6"'))
    assert found.clean and found.cabling == []


def site_labels(text):
    return re.sub(r'"(dgx-\d+) HCA-(\d+)"', r'"\1 ib\2"', text)


def test_a_sites_own_label_comes_from_the_inventory():
    text = site_labels(CAPTURED["short-unit"].text())
    # Without the pattern, `ib4` is no label: position, and the unit's missing rail a guess.
    assert "a guess" in import_fabric(text).short_units[0]
    fabric = import_fabric(CAPTURED["short-unit"].text()).fabric.model_copy(update={"port_label": r"ib\d+"})
    found = import_fabric(text, cluster=gpu_cluster(DGX, fabric))
    assert found.rails_how == "by the port label each HCA's description names"
    assert found.rail_labels["rail4"] == ("ib4",) and found.fabric.rails[3].leaves == "su1-leaf4,su3-leaf4"
    assert found.fabric.port_label == r"ib\d+" and found.differences == []
    assert found.short_units[0].endswith("it lacks rail4 (ib4): dgx-[004-006] ib4 on no leaf")


@pytest.mark.parametrize("pattern", ["ib[", ".*"])
def test_a_port_label_is_a_regular_expression_that_matches_something(pattern):
    with pytest.raises(InventoryError, match="port_label"):
        Fabric(port_label=pattern)


def test_mlx5_and_hca_labels_on_one_leaf_make_one_rail():
    # dgx-001 says mlx5_N, the others HCA-N: unit 1's leaves carry both, which links the two kinds.
    text = re.sub(r'"dgx-001 HCA-(\d+)"', lambda m: f'"dgx-001 mlx5_{int(m[1]) - 1}"', CAPTURED["two-rails"].text())
    found = import_fabric(text)
    assert rail_leaves(found) == [(f"rail{r}", f"mlx5_{r - 1}", full(r)) for r in range(1, 9)]
    assert found.rail_labels["rail5"] == ("mlx5_4", "HCA-5")
    assert found.summary[2] == "  rail1 = mlx5_0 (labelled HCA-1) on su1-leaf1,su2-leaf1,su3-leaf1"
    assert found.rails_how == "by the port label each HCA's description names"
    assert [line.split(",")[0] for line in found.off_rail] == ["dgx-008 HCA-3 port 1 is on su3-leaf4 port 2"]


def test_the_cli_exits_1_and_lists_each_cable_end_for_a_ticket(monkeypatch):
    fabric = import_fabric(CAPTURED["crossed"].text()).fabric
    monkeypatch.setattr(loader, "load", lambda path: SimpleNamespace(cluster=gpu_cluster(DGX, fabric)))
    for name, lines in (("crossed", 2), ("short-unit", 1), ("two-rails", 1), ("other-unit", 1)):
        result = CliRunner().invoke(cli, ["fabric", "import", str(CAPTURED[name].path), "--inventory", "site.py"])
        assert result.exit_code == 1, name
        report = result.stderr.splitlines()
        at = report.index("cabling to fix (node HCA port, on leaf port: where it belongs):")
        assert len([line for line in report[at + 1:] if line.startswith("  ")][:lines]) == lines
        assert result.output.index("Fabric(\n") < result.output.index("cabling to fix")
    crossed = CliRunner().invoke(cli, ["fabric", "import", str(CAPTURED["crossed"].path), "--inventory", "site.py"])
    assert ("problem: 2 HCAs hang off another rail's leaf (crossed cables, or a node on the wrong leaf); each is "
            "listed after the Fabric") in crossed.stderr.splitlines()
    assert ("  dgx-002 HCA-5 port 1 is on su1-leaf6 port 2, rail6's leaf (HCA-6); it belongs on su1-leaf5 (rail5): "
            "crossed with HCA-6, on su1-leaf5 port 2") in crossed.stderr.splitlines()
    other = CliRunner().invoke(cli, ["fabric", "import", str(CAPTURED["other-unit"].path), "--inventory", "site.py"])
    assert ("problem: 1 HCA hangs off another scalable unit's leaf of its rail (a cable to the wrong unit); each is "
            "listed after the Fabric") in other.stderr.splitlines()
    assert ("  dgx-002 HCA-4 port 1 is on su2-leaf4 port 6, rail4's leaf (HCA-4) of another unit; it belongs on "
            "su1-leaf4 (rail4): a cable on another unit's leaf") in other.stderr.splitlines()


def test_two_kinds_of_label_no_leaf_links_are_matched_by_place():
    # rail-sharp: unit 1 says mlx5_N, unit 2 HCA-N, and no leaf carries both; the output says position matched them.
    found = import_fabric(CAPTURED["rail-sharp"].text(), "rail-sharp.txt")
    assert rail_leaves(found) == [(f"rail{r}", f"mlx5_{r - 1}", f"SU1-LEAF-{r},SU2-LEAF-{r}") for r in range(1, 9)]
    assert found.rails_how.endswith("for the 8 leaves labelled HCA-N (no leaf carries both kinds of label)")
    assert found.clean
