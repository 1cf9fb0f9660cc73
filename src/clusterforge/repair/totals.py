"""The running totals of every repair ever ended, what the metrics' counters are: repairs by fault class and outcome,
and the time from fault to service. Kept in their own small file beside the history (store.py), added to as each
repair ends: the history keeps only its last entries, and a Prometheus counter must never go down because old lines
were trimmed; a pass reads this file, not the whole history."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

HOW = ("automatic", "manual")   # how a node came back to service, a label of the time to service


def outcome_word(outcome: str) -> str:
    """The outcome's kind, for a label: back, observed, quarantined, failed, stopped."""
    if outcome.startswith("back in service"):
        return "back"
    for word in ("observed", "quarantined", "stopped", "failed the gate", "faulted again", "not in service"):
        if outcome.startswith(word):
            return word.replace(" ", "_")
    return "other"


@dataclass(frozen=True)
class Totals:
    ended: dict[str, dict[str, int]] = field(default_factory=dict)       # fault class -> outcome word -> repairs
    to_service: dict[str, dict[str, float]] = field(default_factory=dict)  # how -> {"seconds": sum, "count": n}

    def added(self, entry: dict) -> Totals:
        """These totals and one more ended repair (a history entry), as new totals: the store's cached ones are
        shared with its readers."""
        ended = {klass: dict(words) for klass, words in self.ended.items()}
        words = ended.setdefault(str(entry.get("class", "")), {})
        word = outcome_word(str(entry.get("outcome", "")))
        words[word] = words.get(word, 0) + 1
        to_service = {how: dict(sums) for how, sums in self.to_service.items()}
        if entry.get("in_service"):
            sums = to_service.setdefault(HOW[0] if entry.get("automatic", True) else HOW[1],
                                         {"seconds": 0.0, "count": 0})
            sums["seconds"] += float(entry["ended_at"]) - float(entry["seen_at"])
            sums["count"] += 1
        return Totals(ended, to_service)

    @classmethod
    def of(cls, entries: Iterable[dict]) -> Totals:
        """The totals of a history that has none beside it (one written before the totals were kept)."""
        totals = cls()
        for entry in entries:
            totals = totals.added(entry)
        return totals

    def to_json(self) -> str:
        return json.dumps({"ended": self.ended, "to_service": self.to_service}, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Totals:
        data = json.loads(text)
        return cls({str(k): {str(w): int(n) for w, n in words.items()} for k, words in data["ended"].items()},
                   {str(h): {"seconds": float(s["seconds"]), "count": int(s["count"])}
                    for h, s in data["to_service"].items()})
