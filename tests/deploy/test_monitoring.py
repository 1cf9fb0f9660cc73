"""Monitoring through the whole deploy on simulated hosts."""

from __future__ import annotations

from deploy.fakedeploy import SimCluster

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
