"""Rules for the rails of a rail-optimized fabric: declared leaves, one rail a leaf, one leaf a unit, no name or HCA
twice, and rails only on a fabric that says it is rail-optimized."""

from __future__ import annotations

import pytest
from clusters import small_cluster

from clusterforge.errors import InventoryError
from clusterforge.model import Fabric, Leaf, Nodes, Rail, Spine, resolve
from clusterforge.render import render_all

NODES = (Nodes("gpu[01-04]", address="10.9.1.[1-4]", profile="gpu"),)
# Two scalable units of two nodes, two rails: su1-leaf1 and su2-leaf1 carry each node's first HCA.
LEAVES = (Leaf("su1-leaf1", nodes="gpu[01-02]"), Leaf("su1-leaf2", nodes="gpu[01-02]"),
          Leaf("su2-leaf1", nodes="gpu[03-04]"), Leaf("su2-leaf2", nodes="gpu[03-04]"))
SPINES = (Spine("spine1", switches="su1-leaf[1-2],su2-leaf[1-2]"),)
RAILS = (Rail("rail1", hca="mlx5_0", leaves="su1-leaf1,su2-leaf1"),
         Rail("rail2", hca="mlx5_3", leaves="su1-leaf2,su2-leaf2"))


def cluster(rails=RAILS, rail_optimized=True, **overrides):
    fabric = Fabric(leaves=LEAVES, spines=SPINES, rails=rails, rail_optimized=rail_optimized, **overrides)
    return small_cluster(nodes=NODES, fabric=fabric)


def problems(cluster):
    """Each problem as ``where: message``, every one written at a line of this file (the entry that is wrong)."""
    with pytest.raises(InventoryError) as raised:
        resolve(cluster)
    assert all("test_rails.py:" in (p.origin or "") for p in raised.value.problems), raised.value.problems
    return [f"{p.where}: {p.message}" for p in raised.value.problems]


def test_rails_are_valid_and_change_no_rendered_file():
    with_rails = resolve(cluster())
    without = resolve(cluster(rails=()))
    assert with_rails.topology == without.topology
    assert render_all(with_rails) == render_all(without)
    # The HCA is optional: rails found by leaf position alone know none.
    resolve(cluster(rails=(Rail("rail1", leaves="su1-leaf1,su2-leaf1"), Rail("rail2", leaves="su1-leaf2,su2-leaf2"))))


def test_rails_need_rail_optimized():
    found = problems(cluster(rail_optimized=False))
    assert found[0].startswith("nodes[gpu[01-04]]: gpu[01-04] are under several leaves")
    assert found[1:] == [("fabric.rails: rails are given but rail_optimized is False: set rail_optimized=True "
                          "(each node hangs off one leaf per rail)")]


def test_a_rail_names_only_declared_leaves():
    rails = (Rail("rail1", leaves="su1-leaf1,su2-leaf1,su3-leaf1"), Rail("rail2", leaves="su1-leaf2,spine1"))
    assert problems(cluster(rails=rails)) == [
        "fabric.rails[rail1].leaves: su3-leaf1 is not a leaf of the fabric",
        "fabric.rails[rail2].leaves: spine1 (a spine) is not a leaf of the fabric"]


def test_a_leaf_is_on_one_rail_and_a_rail_has_one_leaf_per_unit():
    rails = (Rail("rail1", leaves="su1-leaf1,su2-leaf1"), Rail("rail2", leaves="su1-leaf[1-2],su2-leaf2"))
    assert problems(cluster(rails=rails)) == [
        "fabric.rails[rail2].leaves: su1-leaf1 is on rail rail1 already: a leaf carries one rail",
        "fabric.rails[rail2].leaves: su1-leaf1 and su1-leaf2 both carry gpu01: a rail has one leaf per scalable unit"
       ]


def test_rail_names_and_hcas_are_given_once():
    rails = (Rail("rail1", hca="mlx5_0", leaves="su1-leaf1,su2-leaf1"),
             Rail("rail1", hca="mlx5_3", leaves="su1-leaf2,su2-leaf2"))
    found = problems(cluster(rails=rails))
    assert len(found) == 1 and found[0].startswith("fabric.rails[rail1]: a rail of this name is already defined (at ")
    assert "test_rails.py:" in found[0]
    rails = (Rail("rail1", hca="mlx5_0", leaves="su1-leaf1,su2-leaf1"),
             Rail("rail2", hca="mlx5_0", leaves="su1-leaf2,su2-leaf2"))
    assert problems(cluster(rails=rails)) == ["fabric.rails[rail2].hca: mlx5_0 is the HCA of rail rail1 already"]


def test_bad_names_and_hostlists_are_reported_at_the_rail():
    rails = (Rail("rail 1", hca="mlx5 0", leaves="su1-leaf[1"), Rail("rail2", leaves=""))
    found = problems(cluster(rails=rails))
    assert [p.split(":", 1)[0] for p in found] == [
        "fabric.rails[rail 1]", "fabric.rails[rail 1].hca", "fabric.rails[rail 1].leaves", "fabric.rails[rail2].leaves"]
    assert "'rail 1' is not a valid rail name" in found[0]
    assert "'mlx5 0' is not a valid HCA name" in found[1]
    assert found[3].startswith("fabric.rails[rail2].leaves: names no leaf")
