"""The bisection of a failing multi-node run (accept/bisect.py), against a simulated fabric: a group fails when it
holds a bad node. The round bound ceil(log2 N) + 1 for every N from 2 to 1024, the bad node anywhere; two bad
nodes; a failure that does not reproduce; a hung run; no known-good node to pad with; the slow rail."""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass

import pytest

from clusterforge.accept.bisect import (CLEARED, FLAKY, SLOW, UNCONFIRMED, Bisection, Culprit, Trial, bisect,
                                           bisect_all, bound, confirm_all, confirm_alone, rails)


@dataclass(frozen=True)
class Ran:
    """A simulated outcome, as verdict.Result would say it."""

    passed: bool
    detail: str = ""


class Fabric:
    """A group fails when it holds a bad node (or, with ``slow_rails``, when it runs on one of them); ``hung`` nodes
    never finish, and the runner counts that a failure, as accept's does at the job's time limit."""

    def __init__(self, bad=(), hung=(), slow_rails=(), whole_only=None, slow_after=None, slow_until=None):
        self.bad, self.hung, self.slow_rails = set(bad), set(hung), set(slow_rails)
        self.whole_only = whole_only  # a group that fails only as a whole (a spine link)
        # Intermittent nodes: slow once they ran so many runs here (slow_after), or slow in their first so many
        # (slow_until), healthy otherwise.
        self.slow_after, self.slow_until = dict(slow_after or {}), dict(slow_until or {})
        self.runs: dict[str, int] = {}
        self.rounds: list[list[Trial]] = []

    def __call__(self, trials):
        self.rounds.append(list(trials))
        seen = [n for t in trials for n in t.nodes]
        assert len(seen) == len(set(seen)) or all(t.hca for t in trials), f"a node in two groups of a round: {trials}"
        assert all(len(t.nodes) >= 2 for t in trials), f"a multi-node test on one node: {trials}"
        return [self.one(t) for t in trials]

    def one(self, trial: Trial) -> Ran:
        nodes = set(trial.nodes)
        for node in nodes:
            self.runs[node] = self.runs.get(node, 0) + 1
        slow_now = {n for n, k in self.slow_after.items() if n in nodes and self.runs[n] > k}
        slow_now |= {n for n, k in self.slow_until.items() if n in nodes and self.runs[n] <= k}
        if slow_now and trial.hca is None:
            return Ran(False, "intermittent")
        if nodes & self.hung:
            return Ran(False, "did not finish within its time budget")
        if trial.hca is not None:
            return Ran(not (nodes & self.bad and trial.hca in self.slow_rails), f"on {trial.hca}")
        if self.whole_only is not None and nodes == set(self.whole_only):
            return Ran(False, "slow as a whole")
        return Ran(not nodes & self.bad, "allreduce")


def names(count: int, prefix: str = "gpu") -> list[str]:
    return [f"{prefix}{i:04d}" for i in range(count)]


GOOD = ["ok01", "ok02"]


def positions(count: int) -> list[int]:
    """Every position up to 64 nodes; beyond, the ends, the middle, both sides of each power of two and 8 drawn."""
    if count <= 64:
        return list(range(count))
    picked = {0, count - 1, count // 2, (count - 1) // 2}
    picked |= {p + d for k in range(1, 11) for p in [2 ** k] for d in (-1, 0) if 0 <= p + d < count}
    picked |= set(random.Random(count).sample(range(count), 8))
    return sorted(picked)


@pytest.mark.parametrize("known_good", [GOOD, []], ids=["two-known-good", "none-known-good"])
def test_one_bad_node_is_found_and_confirmed_within_the_bound_for_every_n_from_2_to_1024(known_good):
    checked = 0
    for count in range(2 if known_good else 4, 1025):
        nodes = names(count)
        for at in positions(count):
            fabric = Fabric(bad=[nodes[at]])
            found = bisect(nodes, known_good, fabric)
            assert found.nodes == [nodes[at]], (count, at, found)
            assert found.rounds <= math.ceil(math.log2(count)) + 1 == bound(count), (count, at, found.rounds)
            assert found.rounds == len(fabric.rounds)
            culprit = found.culprits[0]
            assert nodes[at] in culprit.trial.nodes and not culprit.outcome.passed
            # Its evidence is a run beside known-good nodes only: what the drain's reason names.
            assert all(n not in fabric.bad for n in culprit.trial.nodes if n != nodes[at])
            assert found.unresolved == () and found.not_reproduced == ()
            # Confirmed before its drain, beside a node that passed two runs, and still within the bound.
            [confirmed] = confirm_all(found, fabric)
            assert confirmed.verdict == SLOW and confirmed.last.passes >= 2, (count, at, confirmed.summary())
            assert all(not r.outcome.passed and nodes[at] in r.trial.nodes for r in confirmed.reruns)
            assert confirmed.last.confirmer not in fabric.bad
            assert len(fabric.rounds) == found.rounds + len(confirmed.reruns) <= bound(count), (count, at)
            checked += 1
    assert checked > 5000


def test_the_rounds_are_log2_n_with_known_good_nodes_to_pad_with():
    """Halving alone, at worst: 1,024 nodes in 10 rounds, 8 in 3; the "+1" is for a suspect that waited for a good
    node. A one-node half is found the round it is padded: the last of 3 in one round."""
    for count, rounds in [(2, 1), (3, 2), (8, 3), (64, 6), (1024, 10)]:
        nodes = names(count)
        assert max(bisect(nodes, GOOD, Fabric(bad=[nodes[at]])).rounds for at in positions(count)) == rounds, count
    assert bisect(names(3), GOOD, Fabric(bad=[names(3)[2]])).rounds == 1


def test_each_round_runs_the_halves_in_the_groups_order_and_pads_one_node_halves_with_known_good_nodes():
    nodes = names(5)
    fabric = Fabric(bad=[nodes[4]])
    said = []
    found = bisect(nodes, GOOD, fabric, on_round=lambda n, trials, outcomes: said.append(
        (n, [t.nodes for t in trials], [o.passed for o in outcomes])))
    assert said == [
        (1, [tuple(nodes[:3]), tuple(nodes[3:])], [True, False]),
        # The nodes of the half that passed are known good now; ok01 and ok02 come first, as given.
        (2, [(nodes[3], "ok01"), (nodes[4], "ok02")], [True, False]),
    ]
    assert found.culprits[0].trial == Trial((nodes[4], "ok02"))
    assert "found gpu0004 (gpu0004+ok02)" == found.summary()


def test_two_bad_nodes_in_different_halves_are_both_found_in_the_same_rounds():
    nodes = names(16)
    fabric = Fabric(bad=[nodes[2], nodes[13]])
    found = bisect(nodes, GOOD, fabric)
    assert sorted(found.nodes) == [nodes[2], nodes[13]]
    assert found.rounds == 4
    assert "more than one bad node" in found.summary()


def test_two_bad_nodes_in_one_pair_are_both_found():
    nodes = names(8)
    found = bisect(nodes, GOOD, Fabric(bad=[nodes[4], nodes[5]]))
    assert sorted(found.nodes) == [nodes[4], nodes[5]] and found.rounds == 3


def test_two_bad_nodes_with_no_known_good_node_are_said_as_far_as_they_can_be():
    """Both halves of 4 fail: no node was ever cleared to pair a suspect with; what is known is said."""
    nodes = names(4)
    found = bisect(nodes, [], Fabric(bad=[nodes[0], nodes[3]]))
    assert found.culprits == () and found.rounds == 1
    assert found.unresolved == (tuple(nodes[:2]), tuple(nodes[2:]))
    assert found.summary() == ("a bad node among gpu0000+gpu0001; among gpu0002+gpu0003, not narrowed: no known-good "
                               "node to pair with; more than one bad node")


def test_a_failure_that_does_not_reproduce_in_the_halves_names_no_node():
    nodes = names(8)
    fabric = Fabric(whole_only=nodes)
    found = bisect(nodes, GOOD, fabric)
    assert found.culprits == () and found.rounds == 1
    assert found.not_reproduced == (tuple(nodes),)
    assert "did not reproduce in the halves of gpu0000+" in found.summary()


def test_an_intermittent_suspect_that_passes_beside_a_good_node_is_cleared_not_named():
    """Two nodes, one known-good: gpu0000 passes beside it, so gpu0001 is the suspect; it passes too the next round."""
    nodes = names(2)
    found = bisect(nodes, ["ok01"], Fabric())
    assert found.rounds == 2 and found.culprits == ()
    assert found.cleared_suspects == (nodes[1],)
    assert "passed beside a known-good node" in found.summary()


def test_with_one_known_good_node_a_pair_takes_the_plus_one_round():
    nodes = names(2)
    fabric = Fabric(bad=[nodes[1]])
    found = bisect(nodes, ["ok01"], fabric)
    assert found.nodes == [nodes[1]] and found.rounds == 2 == bound(2)
    # Round 2 pairs the suspect with a known-good node: ok01 again, as gpu0000 passed beside it.
    assert [t.nodes for t in fabric.rounds[1]] == [(nodes[1], "ok01")]


def test_a_pair_with_no_known_good_node_is_unresolved_without_running_anything():
    fabric = Fabric(bad=["a"])
    found = bisect(["a", "b"], [], fabric)
    assert found.rounds == 0 and fabric.rounds == [] and found.unresolved == (("a", "b"),)


def test_a_hung_run_counts_as_a_failure_and_its_node_is_found():
    nodes = names(32)
    found = bisect(nodes, GOOD, Fabric(hung=[nodes[17]]))
    assert found.nodes == [nodes[17]]
    assert found.culprits[0].outcome.detail == "did not finish within its time budget"


def test_known_good_nodes_that_are_in_the_group_are_not_used_as_padding():
    nodes = names(3)
    fabric = Fabric(bad=[nodes[2]])
    found = bisect(nodes, [nodes[2]], fabric)  # a caller's mistake: the group's own node given as known good
    assert found.nodes == [nodes[2]]
    assert all(nodes[2] not in t.nodes or len(t.nodes) >= 2 for r in fabric.rounds for t in r)


@pytest.mark.parametrize(("group", "why"), [(["a"], "two nodes at least"), (["a", "a"], "named twice")])
def test_a_group_that_cannot_be_bisected_is_refused(group, why):
    with pytest.raises(ValueError, match=why):
        bisect(group, GOOD, Fabric())


def test_a_runner_that_loses_an_outcome_is_refused():
    with pytest.raises(ValueError, match="ran 2 trials and got 1 outcomes"):
        bisect(names(4), GOOD, lambda trials: [Ran(False)])


HCAS = [f"mlx5_{i}" for i in range(8)]


def test_the_slow_rail_is_named_in_one_round():
    fabric = Fabric(bad=["gpu03"], slow_rails=["mlx5_5"])
    said = []
    found = rails("gpu03", "gpu05", HCAS, fabric, on_round=lambda n, t, o: said.append(n), number=4)
    assert len(fabric.rounds) == 1 and said == [4]
    assert [(t.nodes, t.hca) for t in fabric.rounds[0]] == [(("gpu03", "gpu05"), h) for h in HCAS]
    assert found.slow == ["mlx5_5"]
    assert found.summary() == "gpu03: slow rail mlx5_5 (beside gpu05)"


def test_two_slow_rails_every_rail_slow_and_none_slow_are_told_apart():
    assert rails("n", "p", HCAS, Fabric(bad=["n"], slow_rails=["mlx5_1", "mlx5_6"])).summary() == (
        "n: slow rails mlx5_1, mlx5_6 (beside p)")
    assert "the node, not one rail" in rails("n", "p", HCAS, Fabric(bad=["n"], slow_rails=HCAS)).summary()
    assert "no single rail is at fault" in rails("n", "p", HCAS, Fabric(bad=["n"])).summary()


def test_the_rail_round_needs_hcas_and_a_peer_other_than_the_node():
    with pytest.raises(ValueError, match="no HCA"):
        rails("n", "p", [], Fabric())
    with pytest.raises(ValueError, match="its own"):
        rails("n", "n", HCAS, Fabric())


def test_a_slow_node_is_found_and_then_its_rail_within_the_bound_plus_the_rail_round():
    """What accept does with 8 nodes, one with a slow rail: 3 halving rounds and the rail round, 4 in all."""
    nodes = names(8)
    fabric = Fabric(bad=[nodes[6]], slow_rails=["mlx5_2"])
    found = bisect(nodes, [], fabric)
    peer = next(n for n in found.culprits[0].trial.nodes if n != nodes[6])
    rail = rails(nodes[6], peer, HCAS, fabric)
    assert found.nodes == [nodes[6]] and rail.slow == ["mlx5_2"]
    assert len(fabric.rounds) == 4 <= bound(8)


def test_two_failing_groups_are_bisected_in_the_same_rounds_not_one_after_the_other():
    leaf1, leaf2 = names(32, "a"), names(8, "b")
    fabric = Fabric(bad=[leaf1[9], leaf2[5]])
    found = bisect_all([leaf1, leaf2], GOOD, fabric)
    assert sorted(found.nodes) == [leaf1[9], leaf2[5]]
    assert found.rounds == 5 == bound(32) - 1 and found.groups == (tuple(leaf1), tuple(leaf2))
    assert len(fabric.rounds[0]) == 4  # both groups' halves in the first round


def test_groups_that_share_a_node_are_refused():
    with pytest.raises(ValueError, match=re.escape("a node is named twice in a+b, b+c")):
        bisect_all([["a", "b"], ["b", "c"]], GOOD, Fabric())


# -- confirming before a drain -----------------------------------------------------------------------------------


def test_an_intermittent_node_that_pads_a_healthy_nodes_half_is_named_and_the_healthy_node_cleared():
    """leaf2 passed (b0..b3 known good, one run each); b0 is slow from then on. Bisecting leaf1, whose a3 is bad, pads
    a2's half with b0: a2 fails beside it and was drained before. Now a2 passes beside b2 while b0 fails again beside
    a0: b0 is the flaky one, a2 is cleared; a3 fails beside b3 and again beside a node that passed two runs."""
    leaf1, leaf2 = names(4, "a"), names(4, "b")
    fabric = Fabric(bad=[leaf1[3]], slow_after={leaf2[0]: 0})
    found = bisect(leaf1, leaf2, fabric)
    assert sorted(found.nodes) == [leaf1[2], leaf1[3]]
    assert next(c for c in found.culprits if c.node == leaf1[2]).trial == Trial((leaf1[2], leaf2[0]))
    confirmed = {c.node: c for c in confirm_all(found, fabric)}
    healthy, bad = confirmed[leaf1[2]], confirmed[leaf1[3]]
    assert healthy.verdict == CLEARED and healthy.peer == leaf2[0] and not healthy.peer_outcome.passed
    assert healthy.summary() == ("a0002 failed beside b0000, passed beside b0002 (passed 1 run); b0000 failed again "
                                 "beside a0000: b0000 is flaky, a0002 is not drained")
    assert bad.verdict == SLOW and [r.passes for r in bad.reruns] == [1, 2]
    assert bad.summary().endswith(", failed beside b0002 (passed 2 runs): slow")
    assert len(fabric.rounds) == found.rounds + 2


def test_a_blamed_node_that_passes_when_run_again_is_flaky_not_slow():
    nodes = names(8)
    fabric = Fabric(slow_until={nodes[5]: 3})   # slow in the first three runs it is in, healthy after
    found = bisect(nodes, GOOD, fabric)
    assert found.nodes == [nodes[5]]
    [confirmed] = confirm_all(found, fabric)
    assert confirmed.verdict == FLAKY and confirmed.reruns[0].outcome.passed
    assert confirmed.summary().endswith(": flaky, not drained")


def test_a_blamed_node_with_no_other_node_to_run_beside_is_unconfirmed_and_nothing_runs():
    culprit = Culprit("a", Trial(("a", "ok")), Ran(False))
    fabric = Fabric(bad=["a"])
    [confirmed] = confirm_all(Bisection((("a", "b"),), 1, (culprit,), passes=(("ok", 1),)), fabric)
    assert confirmed.verdict == UNCONFIRMED and fabric.rounds == []
    assert confirmed.summary() == "a failed beside ok; not run again: no other node to run it beside (not drained)"


def test_the_confirming_runs_never_use_a_blamed_node_or_a_node_that_padded_a_failing_run():
    nodes = names(16)
    fabric = Fabric(bad=[nodes[2], nodes[13]])
    found = bisect(nodes, GOOD, fabric)
    padders = {n for c in found.culprits for n in c.trial.nodes}
    before = len(fabric.rounds)
    confirmed = confirm_all(found, fabric)
    assert [c.verdict for c in confirmed] == [SLOW, SLOW]
    for trials in fabric.rounds[before:]:
        confirmers = [n for t in trials for n in t.nodes[1:]]
        assert not set(confirmers) & padders, trials


def test_a_failed_single_node_test_is_run_again_alone_once_slow_where_it_fails_again_flaky_where_it_passes():
    ran = []

    def run_round(trials):
        ran.append(list(trials))
        return [Ran(t.nodes != ("b",)) for t in trials]   # a passes the second time, b fails again

    failed = [(Culprit("a", Trial(("a",)), Ran(False)), "allreduce"), (Culprit("b", Trial(("b",)), Ran(False)), "dcgm")]
    a, b = confirm_alone(failed, run_round)
    assert ran == [[Trial(("a",)), Trial(("b",))]]   # one round, each the same way, once
    assert (a.verdict, b.verdict) == (FLAKY, SLOW) and a.alone and b.alone
    assert (a.peer, [r.confirmer for r in a.reruns]) == ("", [""])
    assert a.summary() == "a failed allreduce alone, passed alone: flaky, not drained"
    assert b.summary() == "b failed dcgm alone, failed again alone: slow"
    assert confirm_alone([], run_round) == () and len(ran) == 1   # nothing failed: no round


def test_confirming_alone_refuses_a_trial_of_two_nodes():
    with pytest.raises(ValueError, match="a single-node test runs one node"):
        confirm_alone([(Culprit("a", Trial(("a", "b")), Ran(False)), "allreduce")], lambda trials: [])
