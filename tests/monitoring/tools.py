"""The real checkers of Prometheus' and Alertmanager's files: promtool (Debian's prometheus package) and amtool
(prometheus-alertmanager), the daemons themselves for their command lines, and node exporter
(prometheus-node-exporter) for the metrics the dashboard reads.

Needs the packages in apt-packages.txt. Where they are missing the tests skip, unless
CLUSTERFORGE_REQUIRE_REALSLURM=1 (set by scripts/test.sh, as for the real-Slurm tests) makes that a failure.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from needs import skip_or_fail

PACKAGES = {"promtool": "prometheus", "prometheus": "prometheus", "amtool": "prometheus-alertmanager",
            "prometheus-alertmanager": "prometheus-alertmanager",
            "prometheus-node-exporter": "prometheus-node-exporter"}


def require(tool: str) -> str:
    """The tool's path, or the test skipped saying what to install (failed under CLUSTERFORGE_REQUIRE_REALSLURM=1)."""
    found = shutil.which(tool)
    if found is None:
        skip_or_fail(f"{tool} not installed (apt-get install {PACKAGES[tool]})")
    return found


def run(tool: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([require(tool), *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def accepted(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, f"{' '.join(result.args)}: exit {result.returncode}\n{result.stdout}{result.stderr}"


def check_alerts(rules: str, series: dict[str, str], expected: list[tuple[str, str, list[dict]]]) -> None:
    """`promtool test rules` on the rules text: the input series (promtool's expanding notation: '1x10',
    '1 1 stale'), sampled each minute and evaluated each minute; for each (time, alert name, alerts) exactly those
    alerts, with all their labels and annotations, firing at that time ([] : none)."""
    unit = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [{"series": name, "values": values} for name, values in series.items()],
            "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": alerts}
                                for at, alert, alerts in expected],
        }],
    }
    with tempfile.TemporaryDirectory(prefix="clusterforge-promtool-") as tmp:
        Path(tmp, "rules.yml").write_text(rules)
        Path(tmp, "test.yml").write_text(json.dumps(unit, indent=1))  # JSON is YAML to promtool
        accepted(run("promtool", "test", "rules", "test.yml", cwd=Path(tmp)))


def check_expressions(expressions: list[str]) -> None:
    """`promtool check rules` parses each expression, written as a recording rule."""
    rules = {"groups": [{"name": "expressions", "rules": [{"record": f"expression:{i}", "expr": expr}
                                                          for i, expr in enumerate(expressions)]}]}
    with tempfile.TemporaryDirectory(prefix="clusterforge-promtool-") as tmp:
        Path(tmp, "rules.yml").write_text(json.dumps(rules, indent=1))
        result = run("promtool", "check", "rules", "rules.yml", cwd=Path(tmp))
        accepted(result)
        assert f"SUCCESS: {len(expressions)} rules found" in result.stdout + result.stderr


def evaluate(expr: str, series: dict[str, str], expected: dict[str, float], at: str = "5m") -> None:
    """`promtool test rules` evaluating ``expr`` at ``at`` over the input series (sampled each minute): exactly the
    ``expected`` samples, each by its labels as Prometheus prints them ('{state="running"}', '{}' for none)."""
    unit = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [{"series": name, "values": values} for name, values in series.items()],
            "promql_expr_test": [{"expr": expr, "eval_time": at,
                                  "exp_samples": [{"labels": labels, "value": value}
                                                  for labels, value in expected.items()]}],
        }],
    }
    with tempfile.TemporaryDirectory(prefix="clusterforge-promtool-") as tmp:
        Path(tmp, "test.yml").write_text(json.dumps(unit, indent=1))
        accepted(run("promtool", "test", "rules", "test.yml", cwd=Path(tmp)))
