"""What `clusterforge check` reports: one outcome per check and host, each with what was seen and what is wrong."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

ALL_GOOD, FINDINGS, UNCHECKED = 0, 1, 2  # exit statuses

Kind = Literal["problem", "unchecked"]


@dataclass(frozen=True, slots=True)
class Finding:
    """Something the cluster does not do as the inventory says (a problem), or that could not be looked at."""

    message: str
    kind: Kind = "problem"


@dataclass(frozen=True, slots=True)
class Outcome:
    """One check on one host: what it saw (``detail``, for the table) and its findings (none: as the inventory says)."""

    host: str
    check: str
    detail: str = ""
    findings: tuple[Finding, ...] = field(default=())

    @property
    def status(self) -> str:
        if any(f.kind == "unchecked" for f in self.findings):
            return "UNCHECKED"
        return "FINDING" if self.findings else "ok"

    def to_json(self) -> dict[str, object]:
        return {"host": self.host, "check": self.check, "status": self.status, "detail": self.detail,
                "findings": [{"kind": f.kind, "message": f.message} for f in self.findings]}


def unchecked(host: str, check: str, why: str) -> Outcome:
    return Outcome(host, check, "", (Finding(f"could not check: {why}", "unchecked"),))


def exit_status(outcomes: list[Outcome]) -> int:
    """2 where anything could not be checked (the answer is incomplete), else 1 for any finding, else 0."""
    kinds = {f.kind for o in outcomes for f in o.findings}
    if "unchecked" in kinds:
        return UNCHECKED
    return FINDINGS if kinds else ALL_GOOD
