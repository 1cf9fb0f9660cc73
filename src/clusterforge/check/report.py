"""The admin's table and the monitoring JSON of a check run."""

from __future__ import annotations

from ..json_documents import document
from .findings import Outcome, exit_status

_WORDS = {0: "all good", 1: "findings", 2: "could not check everything"}


def table(outcomes: list[Outcome]) -> str:
    """One line per check and host (what was seen), then every finding once, under the host and check it belongs
    to."""
    rows = [(o.host, o.check, o.status, o.detail) for o in outcomes]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(("HOST", "CHECK", "RESULT"))]
    lines = [f"{'HOST':<{widths[0]}}  {'CHECK':<{widths[1]}}  {'RESULT':<{widths[2]}}  SEEN"]
    lines += [f"{h:<{widths[0]}}  {c:<{widths[1]}}  {s:<{widths[2]}}  {d}".rstrip() for h, c, s, d in rows]
    findings = [(o, f) for o in outcomes for f in o.findings]
    if findings:
        lines.append("")
        lines.append(f"{len(findings)} finding{'s' if len(findings) != 1 else ''}:")
        lines += [f"  {o.host} {o.check}: {f.message}" for o, f in findings]
    status = exit_status(outcomes)
    lines.append("")
    lines.append(f"{_WORDS[status]} (exit {status})")
    return "\n".join(lines)


def as_json(cluster: str, outcomes: list[Outcome]) -> str:
    status = exit_status(outcomes)
    return document("check", {"cluster": cluster, "status": status, "summary": _WORDS[status],
                              "findings": sum(len(o.findings) for o in outcomes),
                              "checks": [o.to_json() for o in outcomes]})
