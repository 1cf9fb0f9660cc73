"""Monitoring through the whole deploy on simulated hosts."""

from __future__ import annotations

import io
import zipfile

from deploy.fakedeploy import SimCluster, dump
from deploy.simhost import Sim

from clusterforge.engine import ops
from clusterforge.engine.state import APPLIED_DIR
from clusterforge.render.programs import EXPORTER

MONITORING = 'monitoring=Monitoring(host=Host("mon1", address="10.9.0.9"))'


def test_a_host_no_group_of_the_inventory_file_binds_stops_the_run_naming_the_line_to_add(tmp_path):
    cluster = SimCluster(tmp_path / "sim", extra=MONITORING)
    inventory = cluster.directory / "hosts.py"
    text = inventory.read_text()
    inventory.write_text(text[:text.index("monitoring = ")])  # an inventory file written before Monitoring existed
    run = cluster.deploy()
    assert run.returncode != 0
    assert ('mon1: not a host of this inventory file, which binds no group holding it; add monitoring = '
            'host_group(cluster, "monitoring", ...)') in run.output, run.output[-2000:]
    assert not run.sims or all(not s.events for s in run.sims.values())


def test_monitoring_on_the_controller_every_host_exported_and_a_second_run_quiet(tmp_path):
    cluster = SimCluster(tmp_path / "sim", extra='monitoring=Monitoring(host=Host("ctl"), webhook="http://10.9.0.1/x")')
    first = cluster.deploy()
    assert first.returncode == 0, dump(first)
    sims = first.sims
    for name, sim in sims.items():
        assert "prometheus-node-exporter" in sim.packages, name
        assert sim.units["prometheus-node-exporter.service"] == {"active": True, "enabled": True}, name
        assert "/var/lib/prometheus/node-exporter" in sim.dirs, name
    ctl = sims["ctl"]
    assert {"prometheus", "prometheus-alertmanager", "python3-prometheus-client"} <= set(ctl.packages)
    assert not {"prometheus", "python3-prometheus-client"} & set(sims["gpu01"].packages)
    for unit in ("prometheus.service", "prometheus-alertmanager.service", "clusterforge-slurm-exporter.service"):
        assert ctl.units[unit]["active"], unit
    assert "url: 'http://10.9.0.1/x'" in ctl.content("/etc/prometheus/alertmanager.yml").decode()
    assert "gpu01:9100" in ctl.content("/etc/prometheus/prometheus.yml").decode() or \
        "10.9.1.1:9100" in ctl.content("/etc/prometheus/prometheus.yml").decode()
    with zipfile.ZipFile(io.BytesIO(ctl.content(EXPORTER))) as program:
        assert program.read("clusterforge_exporter/exporter/main.py").decode().startswith('"""The Slurm exporter')
    assert "--listen :9341" in ctl.content("/etc/systemd/system/clusterforge-slurm-exporter.service").decode()
    # The exporter starts once slurmctld runs; node exporter is there for the health check to write into.
    order = [f"{h} {c}" for h, c in first.order]
    assert order.index("ctl systemctl start slurmctld.service") < order.index(
        "ctl systemctl start clusterforge-slurm-exporter.service")
    again = cluster.deploy()
    assert again.returncode == 0 and again.operations() == [], dump(again)

    cluster.set_inventory(extra='monitoring=Monitoring(host=Host("ctl"), retention_days=90)')
    changed = cluster.deploy()
    assert changed.returncode == 0, dump(changed)
    # The retention is a flag: Prometheus restarts; Alertmanager's configuration alone changed: it reloads.
    acted = [(h, c) for h, c in changed.order if c.startswith(("systemctl restart", "systemctl reload"))]
    assert acted == [("ctl", "systemctl reload prometheus-alertmanager.service"),
                     ("ctl", "systemctl restart prometheus.service")], acted
    cluster.set_inventory(extra='monitoring=Monitoring(host=Host("ctl"), retention_days=90, pending_minutes=5)')
    rules = cluster.deploy()  # new rules alone: Prometheus reloads, and keeps its alerts' state
    assert rules.returncode == 0, dump(rules)
    assert [(h, c) for h, c in rules.order if c.startswith(("systemctl restart", "systemctl reload"))] == [
        ("ctl", "systemctl reload prometheus.service")]
    assert cluster.deploy().operations() == []


def test_a_run_stopped_between_the_exporter_units_upload_and_systemds_reload_reloads_on_the_next(tmp_path):
    """The Slurm exporter's unit, like every unit file and drop-in, is read by systemd in a reload owed until it has
    happened: the next run reloads before it restarts the exporter, never restarting it on the unit systemd had."""
    unit = "/etc/systemd/system/clusterforge-slurm-exporter.service"
    cluster = SimCluster(tmp_path / "sim", extra=MONITORING)
    assert (first := cluster.deploy()).returncode == 0, dump(first)
    path = cluster.directory / "ctl.json"
    sim = Sim.load(path)  # the unit an older release wrote, which systemd read and runs the exporter with
    older = "[Service]\nExecStart=/usr/sbin/clusterforge-slurm-exporter --listen :9999\n"
    sim.put(unit, older.encode())
    sim.put(f"{APPLIED_DIR}/systemd-slurm-exporter", f"{ops.digest(older)}\n".encode())
    sim.put(f"{APPLIED_DIR}/clusterforge-slurm-exporter.service", b"its older inputs\n")
    sim.save(path)
    stopped = cluster.deploy(fail="ctl:systemctl daemon-reload")
    assert stopped.returncode != 0 and stopped.ran("ctl", f"upload {unit}"), dump(stopped)
    assert not stopped.ran("ctl", "systemctl restart clusterforge-slurm-exporter"), dump(stopped)
    again = cluster.deploy()
    assert again.returncode == 0, dump(again)
    events = again.events("ctl")
    assert "systemctl daemon-reload" in events, events
    restart = "systemctl restart clusterforge-slurm-exporter.service"
    assert events.index("systemctl daemon-reload") < events.index(restart)
    assert (quiet := cluster.deploy()).returncode == 0 and not quiet.events("ctl"), dump(quiet)
