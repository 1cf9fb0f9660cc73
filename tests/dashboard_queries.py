"""The PromQL of a rendered Grafana dashboard, as Prometheus receives it: every panel's and variable's expression with
Grafana's variables replaced the way Grafana replaces them, and the metric names an expression reads."""

from __future__ import annotations

import re
from dataclasses import dataclass

from clusterforge.render.dashboards import NODE_VARIABLE

# What Grafana puts in place of its variables before a query leaves it: $__rate_interval is a duration; $node, a
# multi-value variable, is a regex: its allValue for All, the hosts picked joined by '|' otherwise.
INTERPOLATIONS = (
    {"$__rate_interval": "2m", f"${NODE_VARIABLE}": ".+"},
    {"$__rate_interval": "1m", f"${NODE_VARIABLE}": "(gpu01|login1)"},
)
_LABEL_VALUES = re.compile(r"^label_values\((?P<selector>.+),\s*(?P<label>[A-Za-z_][A-Za-z0-9_]*)\)$")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_SELECTOR = re.compile(r"\{[^}]*\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_WORD = re.compile(r"(?P<word>[A-Za-z_:][A-Za-z0-9_:]*)\s*(?P<call>\()?")
_KEYWORDS = frozenset({"and", "or", "unless", "bool", "offset", "inf", "nan"})


@dataclass(frozen=True)
class Expression:
    where: str   # "panel 7 A: gpu: nodes", "variable node"
    expr: str    # as the dashboard holds it, Grafana's variables in it

    def interpolated(self, values: dict[str, str]) -> str:
        expr = self.expr
        for name, value in values.items():
            expr = expr.replace(name, value)
        return expr


def expressions(dashboard: dict) -> list[Expression]:
    """Every panel target's expression, and the series selector of every query variable (label_values(...))."""
    found = [Expression(f"panel {panel['id']} {target['refId']}: {panel['title']}", target["expr"])
             for panel in dashboard["panels"] for target in panel.get("targets", ())]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            match = _LABEL_VALUES.match(variable["query"]["query"])
            assert match, variable
            found.append(Expression(f"variable {variable['name']}", match["selector"]))
    return found


def metric_names(expr: str) -> set[str]:
    """The metric names an expression reads: what is left once strings, label matchers, ranges and grouping
    clauses are taken out, less function calls and operator keywords."""
    text = _GROUPING.sub(" ", _RANGE.sub(" ", _SELECTOR.sub(" ", _STRING.sub('""', expr))))
    return {m["word"] for m in _WORD.finditer(text) if not m["call"] and m["word"].lower() not in _KEYWORDS}
