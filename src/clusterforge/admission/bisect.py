"""Finding the node behind a failing multi-node run, and the rail behind a slow node, by bisection: pure.

A multi-node all_reduce is as fast as its slowest node, so a run below its floor says only that one of its nodes (or
the links between them) is at fault. Testing every pair is N/2 rounds at best; halving is log2 N. Each round runs
several disjoint groups at once (separate Slurm jobs, in parallel), so the halves of every open suspect set go out
together and the rounds, not the jobs, are what the admin waits for.

The rules (NVIDIA's cluster readiness engine bisects the same way, ADR-029/055):

- A set known to fail is split in two halves, in its given order (the inventory's, which keeps leaves together). A
  half that passes clears its nodes: they are known good from then on. A half that fails is the new suspect set.
- A multi-node test needs two nodes: a half of one node is padded with a known-good node, a different one for each
  group of the round (groups are disjoint: a node runs one job at a time). A node that fails beside a known-good
  node is found: that run is its evidence (``allreduce 211 GB/s < 350``, with the pair it ran in).
- Both halves fail: two bad nodes at least, one in each; both are followed, in the same rounds. Both halves pass: the
  failure does not reproduce in the halves (an intermittent fault, or one only the whole set's traffic shows, such
  as a spine link): no node is named, and the set is reported as such.
- No known-good node free for a one-node half: that half waits a round. Where its sibling passed, it is the only
  suspect left and is run beside a known-good node the next round (the "+1" of the bound); where its sibling
  failed too, it is run the same way to see whether it is bad as well. Where no round can run at all (no known-good
  node anywhere), the sets left are reported unresolved, with what is known of them.

With one bad node and either two known-good nodes given or four nodes or more (the first halves clear one half),
every node is found within ceil(log2 N) + 1 rounds; tests/accept/test_bisect.py proves it for N = 2..1024.

A hung run is the runner's to count: it cancels the job at its time budget and returns a failed outcome, which is
bisected as any failure.

The rail: a node found slow runs with one known-good peer once per rail (one HCA alone, NCCL_IB_HCA=<hca>) in one
round; the rails that fail are named. Every rail failing says the node, not one rail (a GPU, PCIe, or its
libraries); none failing says no single rail is at fault.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol


class Outcome(Protocol):
    """What a round gives back per trial: whether it passed, and whatever else explains it (verdict.Result)."""

    @property
    def passed(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Trial:
    """One group of a round: the nodes that run the test together, and for the rail round the one HCA they use."""

    nodes: tuple[str, ...]
    hca: str | None = None

    @property
    def label(self) -> str:
        return "+".join(self.nodes) + (f" on {self.hca}" if self.hca else "")


Round = Callable[[Sequence[Trial]], Sequence[Outcome]]
OnRound = Callable[[int, Sequence[Trial], Sequence[Outcome]], None]


@dataclass(frozen=True, slots=True)
class Culprit:
    """A node that failed beside a known-good node: the trial and its outcome are the evidence."""

    node: str
    trial: Trial
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class Bisection:
    """What the bisection of failing groups (one, or several bisected together) found, in ``rounds`` rounds."""

    groups: tuple[tuple[str, ...], ...]
    rounds: int
    culprits: tuple[Culprit, ...] = ()
    # Sets that failed whole while each of their halves passed: the failure does not reproduce in smaller groups.
    not_reproduced: tuple[tuple[str, ...], ...] = ()
    # Sets known to hold a bad node that no round could narrow: no known-good node was free to pad them with.
    unresolved: tuple[tuple[str, ...], ...] = ()
    # Nodes whose failure was inferred (their sibling half passed) but which passed beside a known-good node.
    cleared_suspects: tuple[str, ...] = ()

    @property
    def nodes(self) -> list[str]:
        return [c.node for c in self.culprits]

    def summary(self) -> str:
        """One line for the admin: what was found, or why nothing was."""
        parts = []
        if self.culprits:
            parts.append("found " + ", ".join(f"{c.node} ({c.trial.label})" for c in self.culprits))
        if self.not_reproduced:
            parts.append("the failure did not reproduce in the halves of "
                         + ", ".join("+".join(s) for s in self.not_reproduced)
                         + " (intermittent, or only that whole group's traffic shows it)")
        if self.cleared_suspects:
            parts.append("suspected " + ", ".join(self.cleared_suspects) + " passed beside a known-good node "
                         "(the failure did not reproduce)")
        if self.unresolved:
            parts.append("a bad node among " + "; among ".join("+".join(s) for s in self.unresolved)
                         + ", not narrowed: no known-good node to pair with")
        if len(self.culprits) + len(self.unresolved) > 1:
            parts.append("more than one bad node")
        return "; ".join(parts) or "nothing found"


def bound(count: int) -> int:
    """The rounds a bisection of ``count`` nodes may take with one bad node: ceil(log2 N) + 1."""
    return math.ceil(math.log2(count)) + 1 if count > 1 else 1


@dataclass(slots=True)
class _Pending:
    """One node to run beside a known-good node: ``inferred`` where the rest of its failing set passed."""

    node: str
    inferred: bool


@dataclass(slots=True)
class _State:
    good: dict[str, None]   # an ordered set: padding takes the earliest known good node first
    open_sets: list[tuple[str, ...]]
    pending: list[_Pending] = field(default_factory=list)
    culprits: list[Culprit] = field(default_factory=list)
    not_reproduced: list[tuple[str, ...]] = field(default_factory=list)
    cleared_suspects: list[str] = field(default_factory=list)

    def clear(self, nodes: Sequence[str]) -> None:
        self.good.update(dict.fromkeys(nodes))


def bisect(group: Sequence[str], good: Sequence[str], run_round: Round, on_round: OnRound | None = None
           ) -> Bisection:
    """Bisect ``group``, a set of nodes whose run together failed, with ``good`` the nodes known to pass (to pad a
    one-node half with). ``run_round`` runs one round's trials (disjoint groups) and returns their outcomes in
    order; ``on_round(number, trials, outcomes)`` hears of each round as it ends."""
    return bisect_all([group], good, run_round, on_round)


def bisect_all(groups: Sequence[Sequence[str]], good: Sequence[str], run_round: Round,
               on_round: OnRound | None = None) -> Bisection:
    """Bisect several failing groups (disjoint: two leaves) in the same rounds, each round's halves of all of them
    at once: as many rounds as the largest group needs, not their sum."""
    nodes = [n for group in groups for n in group]
    if len(set(nodes)) != len(nodes):
        raise ValueError(f"bisect: a node is named twice in {', '.join('+'.join(g) for g in groups)}")
    for group in groups:
        if len(group) < 2:
            raise ValueError(f"bisect: a failing group has two nodes at least, not {'+'.join(group) or 'none'}")
    state = _State(good=dict.fromkeys(n for n in good if n not in nodes), open_sets=[tuple(g) for g in groups])
    rounds = 0
    while state.open_sets or state.pending:
        trials, plans = _plan(state)
        if not trials:
            break
        outcomes = list(run_round(trials))
        if len(outcomes) != len(trials):
            raise ValueError(f"bisect: round {rounds + 1} ran {len(trials)} trials and got {len(outcomes)} outcomes")
        rounds += 1
        if on_round is not None:
            on_round(rounds, trials, outcomes)
        _judge(state, plans, trials, outcomes)
    unresolved = state.open_sets + [(p.node,) for p in state.pending]
    return Bisection(tuple(tuple(g) for g in groups), rounds, tuple(state.culprits), tuple(state.not_reproduced),
                     tuple(unresolved), tuple(state.cleared_suspects))


# A round's plan per suspect set: its halves, each with the index of its trial, or None where it waits a round.
_Halves = tuple[tuple[str, ...], int | None, tuple[str, ...], int | None]


def _plan(state: _State) -> tuple[list[Trial], list[tuple[str, object]]]:
    """This round's trials, and for each suspect set or pending node what it became (to judge the outcomes by)."""
    free = iter(list(state.good))
    trials: list[Trial] = []
    plans: list[tuple[str, object]] = []

    def run(nodes: tuple[str, ...]) -> int | None:
        if len(nodes) < 2:
            peer = next(free, None)
            if peer is None:
                return None
            nodes = (*nodes, peer)
        trials.append(Trial(nodes))
        return len(trials) - 1

    for suspects in state.open_sets:
        middle = (len(suspects) + 1) // 2
        first, second = suspects[:middle], suspects[middle:]
        plans.append(("halves", (first, run(first), second, run(second))))
    for pending in state.pending:
        plans.append(("pending", (pending, run((pending.node,)))))
    return trials, plans


def _judge(state: _State, plans: list[tuple[str, object]], trials: list[Trial], outcomes: list[Outcome]) -> None:
    open_sets: list[tuple[str, ...]] = []
    pending: list[_Pending] = []
    passed = [o.passed for o in outcomes]
    for kind, plan in plans:
        if kind == "pending":
            node, index = plan  # type: ignore[misc]
            if index is None:
                pending.append(node)
            elif passed[index]:
                state.clear([node.node])
                if node.inferred:
                    state.cleared_suspects.append(node.node)
            else:
                state.culprits.append(Culprit(node.node, trials[index], outcomes[index]))
            continue
        first, i, second, j = plan  # type: ignore[misc]
        if i is None and j is None:
            open_sets.append(first + second)  # no known-good node free this round: it waits for one
            continue
        ran = [(half, index) for half, index in ((first, i), (second, j)) if index is not None]
        for half, index in ran:
            if passed[index]:
                state.clear(half)
        failed = [(half, index) for half, index in ran if not passed[index]]
        waiting = [half for half, index in ((first, i), (second, j)) if index is None]
        if not failed:
            if waiting:  # the half that ran passed: the one that waited is what failed
                pending.append(_Pending(waiting[0][0], inferred=True))
            else:
                state.not_reproduced.append(first + second)
            continue
        for half, index in failed:
            if len(half) == 1:
                state.culprits.append(Culprit(half[0], trials[index], outcomes[index]))
            else:
                open_sets.append(half)
        pending += [_Pending(half[0], inferred=False) for half in waiting]
    state.open_sets, state.pending = open_sets, pending


@dataclass(frozen=True, slots=True)
class RailFinding:
    """The rails of ``node`` run one at a time beside ``peer``: each HCA's outcome, and those that failed."""

    node: str
    peer: str
    outcomes: tuple[tuple[str, Outcome], ...]

    @property
    def slow(self) -> list[str]:
        return [hca for hca, outcome in self.outcomes if not outcome.passed]

    def summary(self) -> str:
        slow = self.slow
        if not slow:
            return f"{self.node}: each rail alone passes beside {self.peer}: no single rail is at fault"
        if len(slow) == len(self.outcomes) and len(slow) > 1:
            return (f"{self.node}: every rail is slow alone beside {self.peer}: the node, not one rail (its GPUs, "
                    "PCIe or libraries)")
        return f"{self.node}: slow rail{'s' if len(slow) > 1 else ''} {', '.join(slow)} (beside {self.peer})"


def rails(node: str, peer: str, hcas: Sequence[str], run_round: Round, on_round: OnRound | None = None,
          number: int = 1) -> RailFinding:
    """Run ``node`` beside the known-good ``peer`` once per HCA, all in one round, and name the slow ones.
    ``number`` is the round's number in the run it belongs to, for ``on_round``."""
    return rails_all([(node, peer, hcas)], run_round, on_round, number)[0]


def rails_all(suspects: Sequence[tuple[str, str, Sequence[str]]], run_round: Round, on_round: OnRound | None = None,
              number: int = 1) -> list[RailFinding]:
    """The rails of several nodes found, each (node, known-good peer, its HCAs), all in one round."""
    trials = []
    for node, peer, hcas in suspects:
        if not hcas:
            raise ValueError(f"rails: {node} has no HCA declared to test one at a time")
        if node == peer:
            raise ValueError(f"rails: {node} cannot be its own known-good peer")
        trials += [Trial((node, peer), hca) for hca in hcas]
    outcomes = list(run_round(trials))
    if len(outcomes) != len(trials):
        raise ValueError(f"rails: ran {len(trials)} trials and got {len(outcomes)} outcomes")
    if on_round is not None:
        on_round(number, trials, outcomes)
    found, start = [], 0
    for node, peer, hcas in suspects:
        found.append(RailFinding(node, peer, tuple(zip(hcas, outcomes[start:start + len(hcas)]))))
        start += len(hcas)
    return found
