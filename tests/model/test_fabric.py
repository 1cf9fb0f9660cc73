"""Rules for the fabric: leaves, spines, a tree Slurm accepts."""

from __future__ import annotations

from clusters import only_problem, problems, small_cluster

from clusterforge.model import Fabric, Leaf, Nodes, Spine, resolve


def test_leaf_naming_an_unknown_node():
    fabric = Fabric(leaves=(Leaf("leaf1", nodes="gpu[01-06]"),))
    assert only_problem(small_cluster(fabric=fabric)).startswith(
        "fabric.leaves[leaf1].nodes: gpu[05-06] are not nodes of this cluster")


def test_node_under_no_leaf():
    nodes = (Nodes("gpu[01-04]", profile="gpu"),)
    fabric = Fabric(leaves=(Leaf("leaf1", nodes="gpu[01-03]"),))
    assert only_problem(small_cluster(nodes=nodes, fabric=fabric)).startswith(
        "nodes[gpu[01-04]]: gpu04 is under no leaf switch")


def test_node_under_two_leaves_unless_rail_optimized():
    leaves = (Leaf("rail1", nodes="gpu[01-04]"), Leaf("rail2", nodes="gpu[01-04]"))
    nodes = (Nodes("gpu[01-04]", profile="gpu"),)
    text = only_problem(small_cluster(nodes=nodes, fabric=Fabric(leaves=leaves)))
    assert text.startswith("nodes[gpu[01-04]]: gpu[01-04] are under several leaves (gpu01: rail1, rail2); "
                           "set fabric.rail_optimized=True")
    valid = resolve(small_cluster(nodes=nodes, fabric=Fabric(leaves=leaves, rail_optimized=True)))
    # The rails carry the same nodes: one scheduling unit, one switch for Slurm.
    assert [(s.name, s.nodes[:1]) for s in valid.topology.leaves] == [("rail1", ("gpu01",))]


def test_a_nodes_leaf_is_written_on_the_node_on_the_leaf_or_both():
    nodes = (Nodes("gpu[01-02]", profile="gpu", leaf="leaf1"), Nodes("gpu[03-04]", profile="gpu"))
    fabric = Fabric(leaves=(Leaf("leaf1", nodes="gpu[01-02]"), Leaf("leaf2", nodes="gpu[03-04]")),
                    spines=(Spine("spine1", switches="leaf[1-2]"),))
    valid = resolve(small_cluster(nodes=nodes, fabric=fabric))
    assert [(s.name, s.nodes) for s in valid.topology.leaves] == [("leaf1", ("gpu01", "gpu02")),
                                                                  ("leaf2", ("gpu03", "gpu04"))]
    # The node's own leaf first, then the leaves that list it.
    nodes = (Nodes("gpu[01-04]", profile="gpu", leaf="leaf2"),)
    fabric = Fabric(leaves=(Leaf("leaf1", nodes="gpu[01-04]"), Leaf("leaf2")))
    assert "(gpu01: leaf2, leaf1)" in only_problem(small_cluster(nodes=nodes, fabric=fabric))


def test_node_naming_an_unknown_leaf():
    nodes = (Nodes("gpu[01-04]", profile="gpu", leaf="leaf9"),)
    found = problems(small_cluster(nodes=nodes))
    assert found[0].startswith("nodes[gpu[01-04]].leaf: 'leaf9' is not a leaf of the fabric")


def test_switch_cycle():
    fabric = Fabric(leaves=(Leaf("leaf1"),), spines=(
        Spine("s1", switches="leaf1,s2"), Spine("s2", switches="s3"), Spine("s3", switches="s1")))
    found = problems(small_cluster(fabric=fabric))
    assert any("switch cycle s1 -> s2 -> s3 -> s1" in p for p in found), found


def test_orphan_switches():
    fabric = Fabric(leaves=(Leaf("leaf1"), Leaf("leaf2")), spines=(Spine("spine1", switches="leaf1"),))
    found = problems(small_cluster(fabric=fabric))
    assert found[0].startswith("fabric.leaves[leaf2]: no node hangs off this leaf")
    assert found[1].startswith("fabric.leaves[leaf2]: is below no spine: an orphan switch")


def test_spine_naming_an_unknown_switch():
    fabric = Fabric(leaves=(Leaf("leaf1"),), spines=(Spine("spine1", switches="leaf[1-2]"),))
    assert only_problem(small_cluster(fabric=fabric)).startswith(
        "fabric.spines[spine1].switches: leaf2 is not a switch of the fabric")


def test_duplicate_switch_names():
    fabric = Fabric(leaves=(Leaf("leaf1"),), spines=(Spine("leaf1", switches="leaf1"),))
    assert any(p.startswith("fabric.spines[leaf1]: a switch of this name is already defined")
               for p in problems(small_cluster(fabric=fabric)))


def test_a_fabric_no_switch_spans_unless_declared_disconnected():
    nodes = (Nodes("gpu[01-02]", profile="gpu", leaf="leaf1"), Nodes("gpu[03-04]", profile="gpu", leaf="leaf2"))
    leaves = (Leaf("leaf1"), Leaf("leaf2"))
    assert only_problem(small_cluster(nodes=nodes, fabric=Fabric(leaves=leaves))).startswith(
        "fabric: no switch is above every node (the widest, leaf2, reaches 2 of 4): jobs could not span the cluster")
    resolve(small_cluster(nodes=nodes, fabric=Fabric(leaves=leaves, disconnected=True)))
    spines = (Spine("s1", switches="leaf1"), Spine("s2", switches="leaf2"))
    assert only_problem(small_cluster(nodes=nodes, fabric=Fabric(leaves=leaves, spines=spines))).startswith(
        "fabric: no switch is above every node (the widest, s2, reaches 2 of 4)")
    resolve(small_cluster(nodes=nodes, fabric=Fabric(leaves=leaves, spines=(Spine("core", switches="leaf[1-2]"),))))


def test_rail_optimized_over_leaves_that_are_no_rails_is_refused():
    nodes = (Nodes("gpu[01-04]", profile="gpu"),)
    overlapping = (Leaf("rail1", nodes="gpu[01-04]"), Leaf("rail2", nodes="gpu[02-04]"))
    problem = only_problem(small_cluster(nodes=nodes, fabric=Fabric(leaves=overlapping, rail_optimized=True)))
    assert problem.startswith("fabric.rail_optimized: leaves rail1 and rail2 share gpu[02-04] but not all their nodes")
    disjoint = (Leaf("leaf1", nodes="gpu[01-02]"), Leaf("leaf2", nodes="gpu[03-04]"))
    problem = only_problem(small_cluster(nodes=nodes, fabric=Fabric(leaves=disjoint, rail_optimized=True,
                                                                    spines=(Spine("s1", switches="leaf[1-2]"),))))
    assert problem.startswith("fabric.rail_optimized: no two leaves carry the same nodes")
