"""Issue 46: a node the admission gate holds whose test cannot run is never held silently. The gate drains it
``cf:gate:cannot run: <Slurm's reason>`` (tests/gate/test_boundary.py, tests/realslurm/test_gate_boundary.py); the
Slurm exporter exports that drain as clusterforge's, and the rendered rules fire GateCannotRun for it, under
`promtool test rules`, beside ClusterforgeDrained; a failed test's drain fires no GateCannotRun."""

from __future__ import annotations

from monitoring.test_alerts_fire import RULES, SLURM, alert, series, with_admission
from monitoring.tools import check_alerts

from clusterforge.exporter import families
from clusterforge.gate.passes import cannot_run
from clusterforge.render import alert_rules
from clusterforge.slurm.nodes import parse_sinfo

REASON = cannot_run("allreduce: sbatch: Requested time limit is invalid (missing or exceeds some limit)").reason


def test_the_gates_cannot_run_drain_is_exported_as_clusterforges_and_fires_gate_cannot_run():
    assert REASON.startswith(alert_rules.GATE_CANNOT_RUN)
    # sinfo -O as the exporter reads it: gpu01 held and drained by the gate, gpu02 failed its test.
    nodes = parse_sinfo(f"gpu01|gpu|infinite|drained|idle+drain+maintenance+reserved|gpu:h100:8|gpu:h100:0|{REASON}|\n"
                        "gpu02|gpu|infinite|drained|idle+drain+maintenance+reserved|gpu:h100:8|gpu:h100:0|"
                        "cf:gate:allreduce 300 GB/s < 460|\n")
    [info] = [f for f in families.node_families(nodes) if f.name == "slurm_node_drain_info"]
    assert [(s.labels["node"], s.labels["owner"], s.labels["reason"]) for s in info.samples] == [
        ("gpu01", "clusterforge", REASON), ("gpu02", "clusterforge", "cf:gate:allreduce 300 GB/s < 460")]
    held = {"node": "gpu01", "reason": REASON, "owner": "clusterforge", **SLURM}
    failed = {"node": "gpu02", "reason": "cf:gate:allreduce 300 GB/s < 460", "owner": "clusterforge", **SLURM}
    check_alerts(with_admission(**{"hgx-h100": 10, "hgx-h200": 20}),
                 {series("slurm_node_drain_info", held): "1x5", series("slurm_node_drain_info", failed): "1x5"},
                 [("0m", "GateCannotRun", [alert(
                     "warning", f"Node gpu01 is held by the admission gate and its test cannot run: {REASON}",
                     **held)])])


def test_no_gate_rule_without_admission():
    assert "GateCannotRun" not in RULES
