"""Issue 48: automatic repair's alerts under `promtool test rules`: a quarantined node, the breaker open, and what
observe mode would repair, from the loop's textfile metrics (repair/metrics.py) as node exporter gives them."""

from __future__ import annotations

import dataclasses

from monitoring.test_alerts_fire import RULES, VALID, alert, series
from monitoring.tools import check_alerts

from clusterforge.model.resolved import RepairSetup
from clusterforge.model.repair import Breaker
from clusterforge.render import alert_rules

CTL = {"instance": "10.30.0.2:9100", "job": "node", "groups": "controller"}


def with_repair() -> str:
    return alert_rules.render(dataclasses.replace(VALID, repair=RepairSetup((), 4, Breaker(), {})))


def test_quarantine_breaker_and_observe_mode_fire_with_the_node_named():
    quarantined = {"node": "gpu01", **CTL}
    observed = {"node": "gpu02", **CTL}
    check_alerts(with_repair(),
                 {series("clusterforge_repair_quarantined", quarantined): "1x5",
                  series("clusterforge_repair_breaker_open", CTL): "0 0 1 1 1",
                  series("clusterforge_repair_observed", observed): "1x5"},
                 [("0m", "RepairQuarantined", [alert(
                     "warning", "Node gpu01 is quarantined by automatic repair: its attempts ran out, and nothing "
                     "automatic touches it until an admin lifts its drain", **quarantined)]),
                  ("0m", "RepairBreakerOpen", []),
                  ("3m", "RepairBreakerOpen", [alert(
                      "critical", "Automatic repair's breaker is open: more nodes faulted at once than the inventory "
                      "allows (the fabric, power or a driver?); no new repair until an admin runs clusterforge repair "
                      "--close-breaker", **CTL)]),
                  ("0m", "RepairWouldAct", [alert(
                      "info", "Automatic repair (observe mode) would repair node gpu02", **observed)])])


def test_no_repair_rule_without_repair():
    assert "Repair" not in RULES
