"""`clusterforge plan` on simulated hosts (tests/deploy/simhost.py): it changes nothing, it says what the next deploy
does, and the deploy then does exactly that; a secret is never shown. The real machines are tests/e2e's business."""

from __future__ import annotations

import base64
import json
import re

from deploy.fakedeploy import FIVE_NODES, NEW_PARTITION, SECRETS, Run, SimCluster, dump
from deploy.simhost import Sim
from deploy.test_deploy_flow import controller_holds

from clusterforge.engine import ops


def planned(cluster: SimCluster, *args: str) -> tuple[Run, dict]:
    run = cluster.plan("--json", *args)
    assert run.returncode == 0, dump(run)
    assert {host: sim.events for host, sim in run.sims.items() if sim.events} == {}, "a plan changed a host"
    # stdout, then the progress lines plan wrote on stderr
    return run, json.JSONDecoder().raw_decode(run.output, run.output.index("{"))[0]


_FILE = re.compile(r"^(/\S+): (?:changed|created)")
_UNIT = re.compile(r"^(?:run: systemctl (start|restart|stop) (\S+?)(?:\.service)?|(\S+): (started|restarted))$")


def _planned_actions(entries: list[dict]) -> tuple[set[str], set[tuple[str, str]]]:
    files, units = set(), set()
    for line in (line for entry in entries for line in entry["lines"]):
        if found := _FILE.match(line):
            files.add(found.group(1))
        elif found := _UNIT.match(line.split(" (")[0]):
            # "restarted" -> "restart", as the command says it
            units.add((found.group(1), found.group(2)) if found.group(1) else (found.group(4)[:-2], found.group(3)))
    return files, units


def assert_the_deploy_does_the_plan(cluster: SimCluster, plan: dict) -> None:
    """On every host, the deploy writes exactly the files the plan said and starts, stops and restarts exactly the
    daemons it said; and it changes as many operations as the plan listed."""
    run = cluster.deploy()
    assert run.returncode == 0, dump(run)
    for host in run.sims:
        # A file renamed into place is uploaded beside it first (ops.file(atomic=True)).
        files = {c.split(" ", 1)[1].removesuffix(ops.STAGED) for h, c in run.order
                 if h == host and c.startswith("upload ")}
        units = {(m.group(1), m.group(2)) for h, c in run.order if h == host
                 if (m := re.match(r"systemctl (start|restart|stop) (\S+?)\.service$", c))}
        assert (files, units) == _planned_actions(plan["hosts"].get(host, [])), host
    total = re.findall(r"Grand total\s+\S+\s+(\S+)", run.output)[-1]
    assert int(total.replace("-", "0")) == sum(len(found) for found in plan["hosts"].values())


def test_a_plan_right_after_a_deploy_has_nothing_to_do_and_reads_each_host_once(cluster):
    run = cluster.plan()
    assert run.returncode == 0, dump(run)
    assert "Plan: nothing to do on 6 hosts." in run.output
    assert {host: sim.commands for host, sim in run.sims.items()} == {**dict.fromkeys(run.sims, 1), "ctl": 2}
    assert all(not sim.events for sim in run.sims.values())


def test_a_new_partition_is_a_diff_and_a_reconfigure_and_the_deploy_does_just_that(cluster):
    cluster.set_inventory(cluster.version, cluster.auth, NEW_PARTITION)
    run = cluster.plan("--detailed-exitcode")
    assert run.returncode == 2, dump(run)
    assert "+PartitionName=short Nodes=gpu[01-02]" in run.output
    assert "scontrol reconfigure: slurm.conf: settings or partitions changed" in run.output
    assert "run: scontrol reconfigure" in run.output and "wait until slurmctld answers scontrol ping" in run.output
    assert "restarted" not in run.output
    _, plan = planned(cluster)
    assert_the_deploy_does_the_plan(cluster, plan)
    again = cluster.plan()
    assert again.returncode == 0 and "Plan: nothing to do" in again.output, dump(again)


def test_adding_a_node_plans_each_releases_procedure(cluster):
    cluster.set_inventory(cluster.version, cluster.auth, FIVE_NODES)
    run = cluster.plan("--detailed-exitcode")
    assert run.returncode == 2, dump(run)
    if cluster.version == "22.05":
        assert "run: systemctl stop slurmctld.service" in run.output
        assert "needs slurmctld stopped, every slurmd restarted, then slurmctld started" in run.output
    else:
        assert "Slurm 24.11 adds them with scontrol reconfigure" in run.output
        assert "systemctl stop slurmctld" not in run.output
    # The new node's daemons start: it is planned as a host like the others (the simulated host exists already).
    assert "gpu05" in run.output
    _, plan = planned(cluster)
    assert_the_deploy_does_the_plan(cluster, plan)


def test_a_new_key_and_password_are_shown_as_changed_never_their_values(cluster):
    key = b"K" * 32 + b"\x01\x02\xfe" * 32
    password = "N3w-db-passphrase-0x5eed"
    name = "munge-key" if cluster.auth == "munge" else "slurm-key"
    cluster.set_inventory(cluster.version, cluster.auth, secrets={name: key, "db-password": password.encode()})
    run = cluster.plan("--detailed-exitcode")
    assert run.returncode == 2, dump(run)
    path = "/etc/munge/munge.key" if cluster.auth == "munge" else "/etc/slurm/slurm.key"
    assert f"{path}: changed; it holds a secret" in run.output
    assert "/etc/slurm/slurmdbd.conf: changed; it holds a secret" in run.output
    assert "slurmdbd: restarted" in run.output
    if cluster.auth == "munge":
        assert "munge: restarted" in run.output and "the key from Vault differs" in run.output
    for secret in (key, password.encode(), SECRETS["db-password"]):
        for shown in (secret, base64.b64encode(secret), secret.hex().encode(), secret.hex().upper().encode()):
            assert shown.decode(errors="replace") not in run.output
    _, plan = planned(cluster)
    assert_the_deploy_does_the_plan(cluster, plan)


def test_a_removed_node_is_planned_as_drained_with_its_jobs_and_is_not_drained(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="24.11", extra=FIVE_NODES)
    assert cluster.deploy().returncode == 0
    ctl = cluster.directory / "ctl.json"
    controller_holds(cluster, jobs=["41 alice gpu05", "42 bob gpu01"])
    cluster.set_inventory("24.11", "munge")  # gpu05 leaves the inventory
    run = cluster.plan("--detailed-exitcode")
    assert run.returncode == 2, dump(run)
    assert "Nodes removed from the inventory, to drain first: gpu05; jobs there now: 41 alice gpu05. The deploy " \
           "would drain it and stop, changing nothing, until these jobs end" in run.output
    assert Sim.load(ctl).drained == {}
    assert all(not s.events for s in run.sims.values())


def test_a_bad_inventory_is_named_and_nothing_is_contacted(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="24.11", extra='partitions=(Partition("x", profiles=("nope",)),)')
    run = cluster.plan()
    assert run.returncode == 1
    assert "nope" in run.output and "Traceback" not in run.output
    assert not run.sims  # no host was ever asked anything


def test_a_deploy_error_is_a_plan_error_named_without_a_traceback(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="24.11")
    assert cluster.deploy().returncode == 0
    cluster.set_inventory("22.05", "munge")  # the hosts run 24.11
    cluster.release = "24.11"
    run = cluster.plan()
    assert run.returncode == 1
    assert "the plan could not be made" in run.output and "has Slurm 24.11.1-1 installed, but the inventory says " \
           "slurm_version='22.05'" in run.output and "Traceback" not in run.output
    assert all(not s.events for s in run.sims.values())


def test_what_the_deploy_would_leave_in_the_database_is_a_note_of_the_plan_not_a_change(cluster):
    ctl = cluster.directory / "ctl.json"
    sim = Sim.load(ctl)
    sim.accounting.setdefault("qos", []).append("legacy")  # in the database, not in the inventory, not pruned
    sim.save(ctl)
    deployed = cluster.deploy()
    note = ("ctl: left in the accounting database, not in the inventory (Accounting(prune=True) removes them): "
            "QOS legacy")
    assert deployed.returncode == 0 and note in deployed.output
    run = cluster.plan()
    assert run.returncode == 0, dump(run)  # nothing the deploy would change
    assert f"Note, the deploy changes nothing here: {note}" in run.output
    assert "Plan: nothing to do on 6 hosts." in run.output


def test_a_health_change_is_a_diff_of_what_the_nodes_check_and_the_deploy_does_just_that(cluster):
    cluster.set_inventory(cluster.version, cluster.auth, "health=Health(xid={43: 'drain'}, interval=120)")
    run = cluster.plan("--detailed-exitcode")
    assert run.returncode == 2, dump(run)
    assert "-HealthCheckInterval=300" in run.output and "+HealthCheckInterval=120" in run.output
    assert "/etc/clusterforge/health.json: changed" in run.output
    assert '+  "43": "drain"' in run.output
    _, plan = planned(cluster)
    assert_the_deploy_does_the_plan(cluster, plan)


def test_an_inventory_that_jumps_slurm_from_debian_12s_release_to_debian_13s_is_refused_with_the_path(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="22.05")
    assert cluster.deploy().returncode == 0
    cluster.set_inventory("24.11", "munge")  # the hosts run 22.05
    for run in (cluster.plan(), cluster.deploy()):
        assert run.returncode != 0
        assert "the inventory's slurm_version='24.11' is not a move Slurm supports" in run.output, run.output[-3000:]
        assert "Slurm 24.11 takes over only from 23.02, 23.11, 24.05, not from 22.05" in run.output
        assert "Go through 22.05 -> 23.02 -> 24.11" in run.output and "Traceback" not in run.output
        assert all(not s.events for s in run.sims.values())
