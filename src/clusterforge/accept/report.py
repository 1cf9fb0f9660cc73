"""What `clusterforge accept` prints at the end: the admin's table (one line per node, then what the bisections and
rail rounds found) and the JSON document of --json; and what --dry-run prints, every job with its sbatch line and
script."""

from __future__ import annotations

from collections.abc import Sequence

from ..json_documents import document
from ..words import counted
from .bisect import Confirmation
from .jobs import Job
from .run import Ran, Report

WORDS = {0: "every node tested passed", 1: "findings", 2: "not every node could be tested"}


def node_rows(report: Report) -> list[tuple[str, str, str]]:
    """(node, result, detail) per node, in the inventory's order: found (drained), flaky (reported with its numbers,
    not drained), passed, or left alone."""
    found = {}
    for finding in report.findings:
        found.setdefault(finding.node, finding)
    flaky = {f.node: f for f in report.flaky}
    counts: dict[str, int] = {}
    for result in report.results:
        counts[result["node"]] = counts.get(result["node"], 0) + 1
    rows = []
    for node in [*report.tested, *report.left_alone]:
        if node in found:
            rows.append((node, "FOUND", found[node].drain.reason))
        elif node in flaky:
            rows.append((node, "FLAKY", flaky[node].reason + " (not drained)"))
        elif node in report.left_alone:
            rows.append((node, "not tested", report.left_alone[node]))
        else:
            rows.append((node, "passed", counted(counts.get(node, 0), "result")))
    return rows


def table(report: Report) -> str:
    rows = node_rows(report)
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(("NODE", "RESULT"))]
    lines = [f"{'NODE':<{widths[0]}}  {'RESULT':<{widths[1]}}  DETAIL"]
    lines += [f"{n:<{widths[0]}}  {r:<{widths[1]}}  {d}".rstrip() for n, r, d in rows]
    alone = [f"  confirmed: {c.summary()}" for c in report.confirmations if c.alone]
    if alone:
        lines += ["", "single-node tests run again:", *alone]
    said = [f"  {', '.join(g[0] + '..' + g[-1] for g in b.groups)}: {b.summary()} ({counted(b.rounds, 'round')})"
            for b in report.bisections] + [f"  confirmed: {c.summary()}" for c in report.confirmations
                                           if not c.alone] + [f"  {r.summary()}" for r in report.rails]
    if said:
        lines += ["", "bisected:", *said]
    if report.not_found:
        lines += ["", "failing runs no node could be named for:", *(f"  {n}" for n in report.not_found)]
    status = report.exit_status
    lines += ["", f"{WORDS[status]} ({counted(report.rounds, 'round')}, exit {status})"]
    return "\n".join(lines)


def confirmation(c: Confirmation) -> dict:
    """A confirming run's JSON: a single-node test's ran alone, beside no one (peer and beside null)."""
    first: Ran = c.culprit.outcome  # type: ignore[assignment]
    return {"node": c.node, "test": first.job.test, "verdict": c.verdict, "peer": c.peer or None,
            "reruns": [{"beside": r.confirmer or None, "beside_passed": None if c.alone else r.passes,
                        "passed": r.outcome.passed} for r in c.reruns], "summary": c.summary()}


def as_json(cluster: str, report: Report) -> str:
    status = report.exit_status
    return document("accept", {
        "cluster": cluster, "status": status, "summary": WORDS[status], "rounds": report.rounds,
        "nodes": [{"node": n, "result": r, "detail": d} for n, r, d in node_rows(report)],
        "findings": [{"node": f.node, "test": f.test, "reason": f.drain.reason, "group": f.group or None,
                      "rail": f.rail or None} for f in report.findings],
        "bisections": [{"groups": [list(g) for g in b.groups], "rounds": b.rounds, "found": b.nodes,
                        "summary": b.summary()} for b in report.bisections],
        "confirmations": [confirmation(c) for c in report.confirmations],
        "flaky": [{"node": f.node, "test": f.test, "figures": list(f.figures), "reason": f.reason}
                  for f in report.flaky],
        "rails": [{"node": r.node, "peer": r.peer, "slow": r.slow} for r in report.rails],
        "not_found": report.not_found,
        "results": report.results,
    })


# What a dry run without the controller (--offline) cannot know, said once where the nodes left alone would be.
OFFLINE = ("offline: the controller was not asked, so which nodes are drained, down, busy or reserved is not "
           "known; every node is planned as if idle")


def dry_run(rounds: Sequence[tuple[str, Sequence[Job]]], left_alone: dict[str, str], offline: bool = False) -> str:
    lines = [OFFLINE] if offline else [f"{node} left alone: {why}" for node, why in left_alone.items()]
    for number, (title, jobs) in enumerate(rounds, 1):
        lines += ["", f"round {number}: {title}: {counted(len(jobs), 'job')}"]
        for job in jobs:
            lines += [f"  $ {job.submit_command().splitlines()[0]}",
                      *(f"    {line}" for line in job.script.rstrip().splitlines())]
    lines += ["", "a failed single-node test is run once more alone, in one more round, before its node is drained "
              "(passed then: reported flaky, not drained); a failing multi-node run is bisected, and the node found "
              "run again beside a node that passed two runs, in at most ceil(log2 N) + 1 more rounds; a node "
              "confirmed slow has its rails run in one more; nothing was submitted, reserved or drained"]
    return "\n".join(lines).lstrip("\n")


def dry_run_json(cluster: str, rounds: Sequence[tuple[str, Sequence[Job]]], left_alone: dict[str, str],
                 offline: bool = False) -> str:
    """Its shape is in docs/operations/admission.md; ``offline`` and ``not_known`` came after the rest, which kept
    theirs (offline, ``left_alone`` is empty: not known)."""
    return document("accept", {
        "cluster": cluster, "left_alone": left_alone, "offline": offline, "not_known": OFFLINE if offline else None,
        "rounds": [{"round": number, "what": title,
                    "jobs": [{"test": j.test, "nodes": list(j.nodes), "sbatch": j.argv(), "script": j.script}
                             for j in jobs]}
                   for number, (title, jobs) in enumerate(rounds, 1)],
    })
