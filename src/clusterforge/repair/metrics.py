"""The loop's metrics, a file in node exporter's textfile directory on the controller (monitoring on): repairs by
fault class, action and outcome; the time from fault to service, automatic and by hand apart; quarantined nodes;
the breaker; what observe mode would have done. Read from the loop's own files at every pass, so a restart loses no
count (the counters are the store's running totals, which outlive the history's trimming: totals.py)."""

from __future__ import annotations

import os
from collections import Counter

from .store import Breaker, History, NodeFile
from .totals import HOW

FILE = "clusterforge_repair.prom"


def _labels(**values: str) -> str:
    return "{" + ",".join(f'{k}="{_escaped(v)}"' for k, v in sorted(values.items())) + "}"


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def text(history: History, nodes: dict[str, NodeFile], breaker: Breaker, now: float) -> str:
    totals = history.totals
    ended = {(klass, word): count for klass, words in totals.ended.items() for word, count in words.items()}
    actions = Counter((a.klass, a.action, a.outcome.split(":")[0] or "under_way") for n in nodes.values()
                      for a in n.attempts)
    lines = ["# HELP clusterforge_repair_ended_total Repairs ended, by fault class and outcome.",
             "# TYPE clusterforge_repair_ended_total counter"]
    lines += [f"clusterforge_repair_ended_total{_labels(klass=k, outcome=o)} {c}" for (k, o), c in sorted(ended.items())]
    lines += ["# HELP clusterforge_repair_actions Actions within each node's window, by fault class, action, outcome.",
              "# TYPE clusterforge_repair_actions gauge"]
    lines += [f"clusterforge_repair_actions{_labels(klass=k, action=a, outcome=o)} {c}"
              for (k, a, o), c in sorted(actions.items())]
    lines += ["# HELP clusterforge_repair_seconds_to_service From fault to back in service: automatic, or by hand.",
              "# TYPE clusterforge_repair_seconds_to_service summary"]
    for how in HOW:
        done = totals.to_service.get(how, {})
        lines += [f"clusterforge_repair_seconds_to_service_sum{_labels(how=how)} {done.get('seconds', 0.0):.0f}",
                  f"clusterforge_repair_seconds_to_service_count{_labels(how=how)} {int(done.get('count', 0))}"]
    lines += ["# HELP clusterforge_repair_in_progress Nodes in repair now.", "# TYPE clusterforge_repair_in_progress gauge",
              f"clusterforge_repair_in_progress {sum(1 for n in nodes.values() if n.repair is not None)}",
              "# HELP clusterforge_repair_quarantined A node quarantined: nothing automatic touches it.",
              "# TYPE clusterforge_repair_quarantined gauge"]
    lines += [f"clusterforge_repair_quarantined{_labels(node=name)} 1" for name, n in sorted(nodes.items())
              if n.quarantined]
    lines += ["# HELP clusterforge_repair_breaker_open 1 while the breaker is open: no new repair.",
              "# TYPE clusterforge_repair_breaker_open gauge", f"clusterforge_repair_breaker_open {int(breaker.open)}",
              "# HELP clusterforge_repair_observed A node observe mode would repair now.",
              "# TYPE clusterforge_repair_observed gauge"]
    lines += [f"clusterforge_repair_observed{_labels(node=name)} 1" for name, n in sorted(nodes.items())
              if n.observed]
    lines += ["# HELP clusterforge_repair_last_pass_seconds When the loop last ran a pass (Unix time).",
              "# TYPE clusterforge_repair_last_pass_seconds gauge", f"clusterforge_repair_last_pass_seconds {now:.0f}"]
    return "\n".join(lines) + "\n"


def write(directory: str, content: str) -> None:
    """Where node exporter's textfile directory exists (monitoring on); replaced whole."""
    if not os.path.isdir(directory):
        return
    path = os.path.join(directory, FILE)
    tmp = f"{path}.{os.getpid()}.tmp"   # node exporter reads *.prom only
    with open(tmp, "w", encoding="utf-8") as file:
        file.write(content)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
