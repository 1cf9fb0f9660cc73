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

Confirmation before a drain (confirm_all): a node that passed one run is only "known good" for padding. Where it is
intermittent, it may pass once and then pad a healthy node's half, and the healthy node is blamed. So each node found
is run again beside the node that passed the most runs, never one that padded a failing run; where that confirmer
had passed only one run and the node failed again, it runs once more beside one that has passed two by then. The
node that padded its failing run, where it had passed fewer than two runs, runs beside another node in the same
round. The verdicts: failed every time, slow (drained); passed again, flaky (reported with both numbers, not
drained); passed while its padder failed again, cleared, and the padder is the flaky one. Counting these rounds too,
one bad node is found and confirmed beside a node that passed two runs within ceil(log2 N) + 1 rounds, for every N
from 2 to 1024 with two known-good nodes given and from 4 without (tests/accept/test_bisect.py checks each N and
position; benchmarks/accept_bisect.py prints the rounds).

A single-node test is confirmed the same way, with nothing to pad (confirm_alone): the node that failed it runs the
same test once more alone. Failed again, slow; passed, flaky. Its verdicts and words are a Confirmation's, whose trials
then hold the node alone.

The rail: a node found slow runs with one known-good peer once per rail (one HCA alone, NCCL_IB_HCA=<hca>) in one
round; the rails that fail are named. Every rail failing says the node, not one rail (a GPU, PCIe, or its
libraries); none failing says no single rail is at fault.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
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
    # How many runs each node has passed, those given and those of this bisection (what confirm_all chooses by).
    passes: tuple[tuple[str, int], ...] = ()

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
    passes: dict[str, int] = field(default_factory=dict)

    def clear(self, nodes: Sequence[str]) -> None:
        self.good.update(dict.fromkeys(nodes))

    def passed(self, trial: Trial) -> None:
        for node in trial.nodes:
            self.passes[node] = self.passes.get(node, 0) + 1


def bisect(group: Sequence[str], good: Sequence[str], run_round: Round, on_round: OnRound | None = None,
           passes: Mapping[str, int] | None = None) -> Bisection:
    """Bisect ``group``, a set of nodes whose run together failed, with ``good`` the nodes known to pass (to pad a
    one-node half with). ``run_round`` runs one round's trials (disjoint groups) and returns their outcomes in
    order; ``on_round(number, trials, outcomes)`` hears of each round as it ends. ``passes``: how many runs each
    node passed before (each of ``good`` once where not given)."""
    return bisect_all([group], good, run_round, on_round, passes)


def bisect_all(groups: Sequence[Sequence[str]], good: Sequence[str], run_round: Round,
               on_round: OnRound | None = None, passes: Mapping[str, int] | None = None) -> Bisection:
    """Bisect several failing groups (disjoint: two leaves) in the same rounds, each round's halves of all of them
    at once: as many rounds as the largest group needs, not their sum."""
    nodes = [n for group in groups for n in group]
    if len(set(nodes)) != len(nodes):
        raise ValueError(f"bisect: a node is named twice in {', '.join('+'.join(g) for g in groups)}")
    for group in groups:
        if len(group) < 2:
            raise ValueError(f"bisect: a failing group has two nodes at least, not {'+'.join(group) or 'none'}")
    state = _State(good=dict.fromkeys(n for n in good if n not in nodes), open_sets=[tuple(g) for g in groups],
                   passes=dict(passes) if passes is not None else dict.fromkeys(good, 1))
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
                     tuple(unresolved), tuple(state.cleared_suspects), tuple(state.passes.items()))


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
    for trial, ok in zip(trials, passed):
        if ok:
            state.passed(trial)
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


# A confirmation's verdict on the node the bisection blamed.
SLOW = "slow"                # it failed again beside another node: drained
FLAKY = "flaky"              # it passed beside another node: its failure does not reproduce; reported, not drained
CLEARED = "cleared"          # it passed, and the node that padded its failing run failed again: that one is flaky
UNCONFIRMED = "unconfirmed"  # no node was free to run it beside: reported, not drained


@dataclass(frozen=True, slots=True)
class Rerun:
    """One confirming run: the blamed node beside ``confirmer``, which had passed ``passes`` runs before it."""

    trial: Trial
    outcome: Outcome
    confirmer: str
    passes: int


@dataclass(frozen=True, slots=True)
class Confirmation:
    """A node the bisection blamed, run again beside another node before its drain: the node free that passed the most
    runs, never one that padded a failing run. Where that one had passed fewer than two and the node failed again, it
    is run once more beside a node that has passed two by then, where one is free. The node that padded its failing run,
    where it had passed fewer than two runs, is run beside another node in the first of these rounds: an intermittent
    node that passed once and pads a healthy node's run makes the healthy node look slow, and is the one to name."""

    culprit: Culprit
    reruns: tuple[Rerun, ...] = ()
    peer_trial: Trial | None = None
    peer_outcome: Outcome | None = None
    test: str = ""       # the single-node test run again alone (confirm_alone); the multi-node one's is implied

    @property
    def node(self) -> str:
        return self.culprit.node

    @property
    def alone(self) -> bool:
        """A single-node test's confirmation: the node ran by itself both times, beside no one."""
        return len(self.culprit.trial.nodes) == 1

    @property
    def peer(self) -> str:
        """The node beside which it failed in the bisection."""
        return next((n for n in self.culprit.trial.nodes if n != self.node), "")

    @property
    def last(self) -> Rerun | None:
        return self.reruns[-1] if self.reruns else None

    @property
    def verdict(self) -> str:
        if not self.reruns:
            return UNCONFIRMED
        if all(not r.outcome.passed for r in self.reruns):
            return SLOW
        if self.peer_outcome is not None and not self.peer_outcome.passed:
            return CLEARED
        return FLAKY

    @property
    def checker(self) -> str:
        return next((n for n in self.peer_trial.nodes if n != self.peer), "") if self.peer_trial else ""

    def summary(self) -> str:
        if self.alone:
            return self.summary_alone()
        first = f"{self.node} failed beside {self.peer}"
        if not self.reruns:
            return f"{first}; not run again: no other node to run it beside (not drained)"
        beside = ", ".join(f"{'passed' if r.outcome.passed else 'failed'} beside {r.confirmer} (passed {r.passes} "
                           f"run{'s' * (r.passes != 1)})" for r in self.reruns)
        verdict = self.verdict
        if verdict == SLOW:
            return f"{first}, {beside}: slow"
        if verdict == CLEARED:
            return (f"{first}, {beside}; {self.peer} failed again beside {self.checker}: {self.peer} is flaky, "
                    f"{self.node} is not drained")
        return f"{first}, {beside}: flaky, not drained"

    def summary_alone(self) -> str:
        first = f"{self.node} failed {self.test or 'its test'} alone"
        if not self.reruns:
            return f"{first}; not run again (not drained)"
        if self.verdict == SLOW:
            return f"{first}, failed again alone: slow"
        return f"{first}, passed alone: flaky, not drained"


def confirm_alone(failed: Sequence[tuple[Culprit, str]], run_round: Round) -> tuple[Confirmation, ...]:
    """Each single-node test that failed, (the node alone in its culprit's trial, the test), run once more the same
    way, all in one round (a node with two failed tests runs both, one after the other, as Slurm gives it the node
    alone for each): a node is drained on a failure seen twice, never on one run. No round where nothing failed."""
    if not failed:
        return ()
    trials = [culprit.trial for culprit, _ in failed]
    if any(len(t.nodes) != 1 for t in trials):
        raise ValueError(f"confirm_alone: a single-node test runs one node, not {[t.label for t in trials]}")
    outcomes = list(run_round(trials))
    if len(outcomes) != len(trials):
        raise ValueError(f"confirm_alone: ran {len(trials)} trials and got {len(outcomes)} outcomes")
    return tuple(Confirmation(culprit, (Rerun(trial, outcome, "", 0),), test=test)
                 for (culprit, test), trial, outcome in zip(failed, trials, outcomes))


def confirm_all(found: Bisection, run_round: Round, on_round: OnRound | None = None,
                number: int = 1) -> tuple[Confirmation, ...]:
    """Each culprit of ``found`` run again before its drain, all in one round (two where a confirmer had passed only
    one run and the culprit failed beside it, and a node that passed two is free then): beside the node free that
    passed the most runs (``found.passes``), none of the culprits or the nodes that padded their runs. Each padding
    node that had passed fewer than two runs is run beside another node in the first round. No round where no
    culprit has a node to run beside."""
    passes = dict(found.passes)
    culprits = found.culprits
    suspects = {n for c in culprits for n in c.trial.nodes}
    peers = [next((n for n in c.trial.nodes if n != c.node), "") for c in culprits]
    reruns: list[list[Rerun]] = [[] for _ in culprits]
    checks: list[tuple[Trial | None, Outcome | None]] = [(None, None)] * len(culprits)
    for attempt in (1, 2):
        pool = iter(sorted((n for n, k in passes.items() if k >= 1 and n not in suspects), key=lambda n: -passes[n]))
        trials: list[Trial] = []
        mine: dict[int, tuple[int, str, int]] = {}
        theirs: dict[int, int] = {}
        for i, culprit in enumerate(culprits):
            if attempt == 2 and not (reruns[i] and not reruns[i][-1].outcome.passed and reruns[i][-1].passes < 2):
                continue
            confirmer = next(pool, None)
            if confirmer is None or (attempt == 2 and passes[confirmer] < 2):
                continue
            trials.append(Trial((culprit.node, confirmer)))
            mine[i] = (len(trials) - 1, confirmer, passes[confirmer])
        for i in list(mine) if attempt == 1 else []:
            if peers[i] and passes.get(peers[i], 0) < 2 and (checker := next(pool, None)) is not None:
                trials.append(Trial((peers[i], checker)))
                theirs[i] = len(trials) - 1
        if not trials:
            break
        outcomes = list(run_round(trials))
        if len(outcomes) != len(trials):
            raise ValueError(f"confirm: ran {len(trials)} trials and got {len(outcomes)} outcomes")
        if on_round is not None:
            on_round(number + attempt - 1, trials, outcomes)
        for trial, outcome in zip(trials, outcomes):
            if outcome.passed:
                for node in trial.nodes:
                    passes[node] = passes.get(node, 0) + 1
        for i, (at, confirmer, before) in mine.items():
            reruns[i].append(Rerun(trials[at], outcomes[at], confirmer, before))
        for i, at in theirs.items():
            checks[i] = (trials[at], outcomes[at])
    return tuple(Confirmation(c, tuple(r), *check) for c, r, check in zip(culprits, reruns, checks))


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
