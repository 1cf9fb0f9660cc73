"""`clusterforge check`'s repair check, on the controller where a profile is repaired (mode on or observe): each
repaired node's last repairs ended (when, the fault, the actions, the outcome, the seconds from the fault to the end)
and the repairs under way; a quarantined node and an open breaker are findings, each with what lifts it.

Read from the loop itself (``clusterforge-repair --status --json``, repair/status.py's writer and reader) through
the controller, as `clusterforge repair` asks it: the loop's files are root's, and check parses no text written for
people.
"""

from __future__ import annotations

from ..model import ValidCluster
from ..render.repair import LAUNCHER
from ..repair import status
from ..slurm import drains
from ..slurm.commands import Answer
from .findings import Finding

COMMAND = f"{LAUNCHER} --status --json"
SHOWN_PER_NODE = 3   # of the loop's last five: the table gives each check one line
NOT_FOUND = 127      # the shell's exit status for a program that is not there
MISTAKE = 2          # argparse's, for an option the program does not know


def check(valid: ValidCluster, answer: Answer, limit: frozenset[str] | None) -> tuple[str, list[Finding]]:
    """What the loop said, against the inventory's repaired nodes (those of ``limit`` alone, where given)."""
    if answer.rc == NOT_FOUND:
        return "", [Finding(f"{LAUNCHER} is not installed: the deploy installs it")]
    if answer.rc == MISTAKE and "--json" in answer.err:
        return "", [Finding(f"{LAUNCHER} on the controller predates --status --json: run the deploy")]
    if not answer.ok:
        return "", [Finding(f"`{COMMAND}` failed: {answer.why}")]
    try:
        said = status.from_json(answer.out)
    except ValueError as error:
        return "", [Finding(f"`{COMMAND}`: {error}")]
    return compare(valid, said, limit)


def compare(valid: ValidCluster, said: status.Status, limit: frozenset[str] | None) -> tuple[str, list[Finding]]:
    """The breaker, the repairs under way, and each repaired node's last repairs; the findings: the breaker open,
    each quarantined node."""
    assert valid.repair is not None
    kept = (lambda node: node in limit) if limit is not None else (lambda node: True)
    repaired = sorted(n for policy in valid.repair.policies for n in policy.nodes if kept(n))
    breaker = said.breaker
    parts = [f"breaker open since {status.utc(breaker.open_since)}" if breaker.open else "breaker closed"]
    parts += [f"{r.node} under way: {r.step.replace('_', ' ')} (attempt {r.attempt}), next {r.waits_for}, "
              + (status.when(r.deadline, said.now) if r.deadline else "no deadline") for r in said.under_way
              if kept(r.node)]
    by_node: dict[str, list[status.Ended]] = {}
    for ended in said.ended:
        by_node.setdefault(ended.node, []).append(ended)
    parts += [f"{node}: " + "; ".join(_ended(e) for e in by_node[node][-SHOWN_PER_NODE:]) for node in repaired
              if node in by_node]
    never = sum(1 for node in repaired if node not in by_node)
    if never:
        parts.append(f"{never} repaired node(s) with no repair ended lately")
    findings = [Finding(f"{q.node} is quarantined ({q.reason}): nothing automatic repairs it; once it is mended, an "
                        f"admin lifts it: {drains.admin_resume_command(q.node)}")
                for q in said.quarantined if kept(q.node)]
    if breaker.open:
        findings.append(Finding(f"the repair breaker is open since {status.utc(breaker.open_since)}: {breaker.why}; "
                                "no new repair starts until an admin closes it: clusterforge repair --close-breaker "
                                "INVENTORY"))
    return " | ".join(parts), findings


def _ended(ended: status.Ended) -> str:
    return (f"{status.utc(ended.ended_at)} {ended.fault}: {status.actions_text(ended)}, {ended.outcome} "
            f"({ended.seconds} s from its fault)")
