"""The roll's batches from Slurm's view of the nodes (roll/batches.py): at most N out at once, an earlier roll's own
drains taken first, anyone else's drains and downs left alone and named, and --count-out's disruption budget."""

from __future__ import annotations

import pytest

from clusterforge.errors import ClusterforgeError
from clusterforge.slurm.nodes import Node
from clusterforge.roll.batches import plan_roll

NODES = [f"gpu{i:02d}" for i in range(1, 7)]


def states(**special: tuple[str, str]) -> dict[str, Node]:
    return {n: Node(n, *special.get(n, ("idle", ""))) for n in NODES}


def test_batches_of_at_most_n_in_the_nodes_order():
    plan = plan_roll(NODES, states(), 4, count_out=False)
    assert plan.batches == (("gpu01", "gpu02", "gpu03", "gpu04"), ("gpu05", "gpu06"))
    assert plan.width == 4 and plan.skipped == () and plan.out == () and plan.continued == ()
    assert plan_roll(NODES, states(), 1, False).batches == tuple((n,) for n in NODES)


def test_an_admins_drain_slurms_down_and_the_health_checks_drain_are_skipped_and_named():
    found = states(gpu02=("drained", "admin: fan"), gpu03=("down*", "Not responding"),
                   gpu05=("draining", "cf:gpu:xid79 gpu3 0000:9b:00.0"), gpu06=("mixed", ""))
    plan = plan_roll(NODES, found, 2, count_out=False)
    assert [n.name for n in plan.skipped] == ["gpu02", "gpu03", "gpu05"]
    assert plan.batches == (("gpu01", "gpu04"), ("gpu06",))


def test_an_earlier_rolls_own_drains_come_first_even_while_rebooting():
    found = states(gpu04=("drained", "cf:roll:reboot batch 2/3"), gpu05=("reboot^", "cf:roll:reboot batch 2/3"),
                   gpu02=("drained", "admin: disk"))
    plan = plan_roll(NODES, found, 2, count_out=False)
    assert plan.continued == ("gpu04", "gpu05")
    assert plan.batches == (("gpu04", "gpu05"), ("gpu01", "gpu03"), ("gpu06",))
    assert [n.name for n in plan.skipped] == ["gpu02"]


def test_count_out_takes_every_compute_node_already_out_from_the_budget_also_outside_the_limit():
    found = states(gpu06=("drained", "admin: psu"))
    plan = plan_roll(NODES[:4], found, 3, count_out=True, compute=NODES)
    assert plan.width == 2 and [n.name for n in plan.out] == ["gpu06"] and plan.skipped == ()
    assert plan.batches == (("gpu01", "gpu02"), ("gpu03", "gpu04"))
    assert plan_roll(NODES[:4], found, 3, count_out=False, compute=NODES).width == 3


def test_a_budget_that_the_nodes_already_out_use_up_is_refused_naming_them():
    found = states(gpu01=("down", "x"), gpu02=("drained", "y"))
    with pytest.raises(ClusterforgeError, match=r"2 compute nodes are already out of service \(gpu01, gpu02\)"):
        plan_roll(NODES, found, 2, count_out=True)


def test_nodes_slurm_does_not_know_and_a_budget_below_one_are_refused():
    with pytest.raises(ClusterforgeError, match="Slurm does not know gpu07"):
        plan_roll([*NODES, "gpu07"], states(), 1, False)
    with pytest.raises(ClusterforgeError, match="at least one node"):
        plan_roll(NODES, states(), 0, False)


@pytest.mark.parametrize(("state", "out"), [
    ("idle", False), ("mixed", False), ("allocated", False), ("completing", False), ("drained", True),
    ("draining", True), ("down*", True), ("idle*", True), ("reboot^", True), ("maint", True), ("fail", True),
    ("unknown", True), ("inval", True), ("planned", False),
])
def test_what_counts_as_out_of_service(state, out):
    assert Node("n", state, "").out_of_service is out
