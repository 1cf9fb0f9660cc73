"""The whole deploy/cluster.py on simulated hosts (tests/deploy/simhost.py), in seconds: what a first run does, that
a second changes nothing and costs one remote command per host, that a run interrupted at any step between a change
and the restart or reconfigure it owes is completed by the next, and each release's add-node procedure.

An interruption is simulated by failing one command, on one host or on all, as if the run had been killed just
before it: everything before it happened, nothing after it did. The real machines are tests/e2e's business.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from deploy import simslurm
from deploy.fakedeploy import FIVE_NODES, NEW_PARTITION, SECRETS, SimCluster, dump
from deploy.simhost import Sim

ALL = ("ctl", "gpu01", "gpu02", "gpu03", "gpu04", "login1")
NODES = ("gpu01", "gpu02", "gpu03", "gpu04")


def changed(cluster: SimCluster, **inventory: str) -> None:
    cluster.set_inventory(cluster.version, cluster.auth, inventory.get("extra", ""),
                          secrets=inventory.get("secrets"))  # type: ignore[arg-type]


def controller_holds(cluster: SimCluster, jobs: list[str] | None = None,
                     drained: dict[str, str] | None = None) -> None:
    """What the simulated controller's slurmctld holds from now on, as if it had happened there: the jobs running
    ("<id> <user> <nodes>"), the nodes drained and why (simslurm.py)."""
    ctl = cluster.directory / "ctl.json"
    sim = Sim.load(ctl)
    with sim.slurm_standin() as slurm:
        if jobs is not None:
            simslurm.hold_jobs(slurm, jobs)
        if drained is not None:
            simslurm.hold_drained(slurm, drained)
    sim.save(ctl)


def five_nodes_deployed(tmp_path: Path, version: str) -> SimCluster:
    cluster = SimCluster(tmp_path / "sim", version=version, extra=FIVE_NODES)
    assert cluster.deploy().returncode == 0
    return cluster


def assert_converged(cluster: SimCluster) -> None:
    again = cluster.deploy()
    assert again.returncode == 0, dump(again)
    assert {host: sim.events for host, sim in again.sims.items() if sim.events} == {}


def test_a_second_run_changes_nothing_and_reads_each_host_once(cluster):
    again = cluster.deploy()
    assert again.returncode == 0, dump(again)
    assert all(not sim.events for sim in again.sims.values()), dump(again)
    # Nothing to do on any host: not even the steps hosts share for ordering are created (engine/converge.py).
    assert again.operations() == [], dump(again)
    # One command reads a host's state; the database host (here also the controller) asks slurmdbd and MariaDB in
    # a second one.
    assert {host: sim.commands for host, sim in again.sims.items()} == {**dict.fromkeys(ALL, 1), "ctl": 2}


PMIX_LINK = "/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so"


def test_slurm_2205_hosts_get_the_pmix_runtime_and_the_link_its_plugin_opens_not_the_dev_package(cluster):
    sims = cluster.sims()
    # Every host runs or talks to Slurm (MpiDefault=pmix): 22.05's plugin opens pmix2/lib/libpmix.so, which
    # libpmix-dev would bring with autotools and the C headers; 24.11's opens libpmix.so.2 from libpmix2t64.
    assert all("libpmix-dev" not in sim.packages for sim in sims.values())
    if cluster.version == "22.05":
        assert all("libpmix2" in sim.packages and PMIX_LINK in sim.files for sim in sims.values())
    else:
        assert all("libpmix2t64" in sim.packages and PMIX_LINK not in sim.files for sim in sims.values())
    # A link gone (libpmix-dev installed and removed by an admin takes it) is made again, and nothing else is done.
    node = cluster.directory / "gpu01.json"
    sim = Sim.load(node)
    sim.files.pop(PMIX_LINK, None)
    sim.save(node)
    again = cluster.deploy()
    assert again.returncode == 0, dump(again)
    made = {host: sim.events for host, sim in again.sims.items() if sim.events}
    assert made == ({"gpu01": [f"ln -sfn libpmix.so.2 {PMIX_LINK}"]} if cluster.version == "22.05" else {}), \
        dump(again)


def test_a_slurm_2205_host_of_an_architecture_without_a_known_pmix_directory_is_refused_before_any_change(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="22.05")
    Sim(arch="loong64").save(cluster.directory / "gpu02.json")
    run = cluster.deploy()
    assert run.returncode != 0
    assert "gpu02: its architecture loong64 is none Debian releases Slurm 22.05 for" in run.output, run.output[-2000:]
    assert all(not sim.events for sim in run.sims.values()), dump(run)


def test_the_accounting_database_is_read_while_the_host_states_are(cluster):
    # sacctmgr waits on slurmdbd: read only when a step asks, after every host's state, its whole wait would add to
    # every run. Each host's state read is made slow here; the accounting read must start before any of them ends.
    again = cluster.deploy(slow={"@stat": 1.0, "sacctmgr": 0.1})
    assert again.returncode == 0, dump(again)
    starts = [(host, text) for what, host, text in again.reads if what == "start"]
    first_state_done = next(i for i, (what, _, text) in enumerate(again.reads) if (what, text) == ("end", "@stat"))
    assert ("ctl", "sacctmgr") in starts, again.reads
    assert again.reads.index(("start", "ctl", "sacctmgr")) < first_state_done, again.reads
    # The host states were still read together, and the accounting read did not make ctl's wait for it.
    assert len(starts) == len(ALL) + 1 and again.reads.index(("start", "ctl", "@stat")) < first_state_done


def test_the_daemons_start_in_order_across_the_cluster(cluster, tmp_path):
    fresh = SimCluster(tmp_path / "fresh", version=cluster.version, auth=cluster.auth)
    run = fresh.deploy()
    starts = [(host, command.split()[-1]) for host, command in run.order if command.startswith("systemctl start")]
    first = {unit: starts.index(next(s for s in starts if s[1] == unit)) for _, unit in starts}
    last_slurmd = max(i for i, (_, unit) in enumerate(starts) if unit == "slurmd.service")
    assert first["slurmdbd.service"] < first["slurmctld.service"] < first["slurmd.service"] <= last_slurmd
    assert ("login1", "sackd.service") in starts if cluster.auth == "slurm" else "sackd.service" not in first


@pytest.mark.parametrize("fail", [
    "ctl:scontrol reconfigure",                            # killed after every upload, before the reconfigure
    "ctl:cp /etc/slurm/slurm.conf",                        # after the reconfigure, before it was recorded
    "gpu03:chmod 0644 /etc/slurm/slurm.conf",              # one node's upload half done
    "*:chown root:root /etc/slurm/slurm.conf",             # every upload half done
])
def test_an_interrupted_partition_change_is_completed_by_the_next_run(cluster, fail):
    changed(cluster, extra=NEW_PARTITION)
    broken = cluster.deploy(fail=fail)
    assert broken.returncode != 0 and any(e.startswith("FAILED") for s in broken.sims.values() for e in s.events)
    again = cluster.deploy()
    assert again.returncode == 0, dump(again)
    # Whatever the interrupted run did, the next reconfigures (or the change was applied and recorded already).
    reconfigured = [c for h, c in broken.order + again.order if h == "ctl" and c == "scontrol reconfigure"]
    assert reconfigured, dump(again)
    assert again.ran("ctl", "scontrol reconfigure") or not broken.sims["ctl"].events[-1].startswith("FAILED scontrol")
    assert not any(again.ran(node, "systemctl restart slurmd") for node in NODES)
    assert_converged(cluster)


def test_a_new_key_interrupted_before_its_restarts_is_restarted_by_the_next_run(cluster):
    name = "slurm-key" if cluster.auth == "slurm" else "munge-key"
    daemon = "slurmctld" if cluster.auth == "slurm" else "munge"
    changed(cluster, secrets={name: b"n" * 256})
    broken = cluster.deploy(fail=f"*:systemctl restart {daemon}")
    assert broken.returncode != 0
    again = cluster.deploy()
    assert again.returncode == 0, dump(again)
    restarted = {(host, c.split()[-1]) for host, c in again.order if c.startswith("systemctl restart")}
    if cluster.auth == "slurm":
        # The daemons whose restart did not fail restarted in the broken run (pyinfra goes on with the other
        # hosts); slurmctld's is still owed, and made now.
        assert ("ctl", "slurmctld.service") in restarted
        done = {(h, c.split()[-1]) for h, c in broken.order + again.order if c.startswith("systemctl restart")}
        assert done >= {("ctl", "slurmdbd.service"), *((n, "slurmd.service") for n in NODES),
                        ("login1", "sackd.service")}
    else:
        assert restarted == {(host, "munge.service") for host in ALL}
    assert_converged(cluster)


def test_a_new_munge_key_is_proven_by_a_credential_from_the_controller_on_every_other_host(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="22.05", auth="munge")
    assert cluster.deploy().returncode == 0
    cluster.set_inventory("22.05", "munge", secrets={"munge-key": b"n" * 64})
    refused = cluster.deploy(fail="gpu01:unmunge")  # gpu01's munged would not decode what ctl's made
    assert refused.returncode != 0
    assert "gpu01 cannot decode a credential made on ctl" in refused.output, dump(refused)
    # Checked on every host but ctl, which made it, and gpu01, which failed.
    assert refused.changed().get("munged | a credential made on ctl decodes here") == len(ALL) - 2, dump(refused)
    # gpu01's munged was restarted, but never shown to share ctl's key: the next run owes it both again, and only it.
    again = cluster.deploy()
    assert again.returncode == 0, dump(again)
    assert [host for host, c in again.order if c == "systemctl restart munge.service"] == ["gpu01"], dump(again)
    assert again.changed().get("munged | a credential made on ctl decodes here") == 1, dump(again)
    assert_converged(cluster)


def test_a_new_slurm_key_restarts_its_daemons_in_order_munge_is_never_used(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="24.11", auth="slurm")
    assert cluster.deploy().returncode == 0
    sims = cluster.sims()
    # Debian's Slurm packages bring munge in; its daemon is stopped and disabled, and it gets no key.
    assert all(sim.units.get("munge.service", {}).get("enabled") is not True and "/etc/munge/munge.key" not in
               sim.files for sim in sims.values())
    assert all("munge.service" in sims[h].units for h in ALL)
    assert [h for h, sim in sims.items() if "sackd" in sim.packages] == ["login1"]
    key = sims["gpu01"].files["/etc/slurm/slurm.key"]
    assert (key["user"], key["group"], key["mode"]) == ("slurm", "slurm", "600")
    cluster.set_inventory("24.11", "slurm", secrets={"slurm-key": b"n" * 256})
    run = cluster.deploy()
    restarts = [(h, c.split()[-1]) for h, c in run.order if c.startswith("systemctl restart")]
    units = [u for _, u in restarts]
    assert units[:2] == ["slurmdbd.service", "slurmctld.service"] and units[-1] == "sackd.service"
    assert sorted(h for h, u in restarts if u == "slurmd.service") == list(NODES)


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_an_added_node_follows_the_releases_procedure(tmp_path, version):
    cluster = SimCluster(tmp_path / "sim", version=version)
    assert cluster.deploy().returncode == 0
    cluster.set_inventory(version, "munge", FIVE_NODES)
    run = cluster.deploy()
    assert run.returncode == 0, dump(run)
    ctl = [c for h, c in run.order if h == "ctl" and c.startswith(("systemctl", "scontrol reconfigure"))]
    restarted = sorted(h for h, c in run.order if c == "systemctl restart slurmd.service")
    if version == "22.05":
        # SchedMD's procedure up to 24.05: slurmctld stopped, new files everywhere, every slurmd restarted, started.
        assert ctl == ["systemctl stop slurmctld.service", "systemctl restart slurmctld.service"]
        assert restarted == list(NODES)
        stop, start = (run.order.index(("ctl", c)) for c in ctl)
        assert all(stop < run.order.index((n, "systemctl restart slurmd.service")) < start for n in NODES)
    else:
        assert ctl == ["scontrol reconfigure"] and restarted == []
    assert ("gpu05", "systemctl start slurmd.service") in run.order
    assert_converged(cluster)


def test_an_add_node_interrupted_with_slurmctld_stopped_is_completed(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="22.05")
    assert cluster.deploy().returncode == 0
    cluster.set_inventory("22.05", "munge", FIVE_NODES)
    broken = cluster.deploy(fail="gpu02:systemctl restart slurmd")
    assert broken.returncode != 0 and ("ctl", "systemctl stop slurmctld.service") in broken.order
    run = cluster.deploy()
    assert run.returncode == 0, dump(run)
    assert [c for h, c in run.order if h == "ctl" and c.startswith("systemctl")] == [
        "systemctl stop slurmctld.service", "systemctl restart slurmctld.service"]
    # gpu05 started in the broken run, so it is one of "every slurmd" now.
    assert sorted(h for h, c in run.order if c == "systemctl restart slurmd.service") == [*NODES, "gpu05"]
    assert_converged(cluster)


def test_ctrl_c_exits_130_and_says_what_is_owed(tmp_path):
    import os
    import signal
    import subprocess

    from deploy.fakedeploy import PYINFRA, REPO, TESTS

    cluster = SimCluster(tmp_path / "sim")
    env = {**os.environ, "PYINFRA_PROGRESS": "off", "CLUSTERFORGE_SIM_DIR": str(cluster.directory),
           "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS / "deploy")]), "PYINFRA_FAKE_DELAY": "0"}
    process = subprocess.Popen([PYINFRA, "-y", str(cluster.directory / "hosts.py"),
                                str(REPO / "deploy" / "cluster.py")], cwd=cluster.directory, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    # Interrupt once the operations run (a host has changed something).
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (cluster.directory / "order.log").exists():
        time.sleep(0.05)
    while time.monotonic() < deadline and not (cluster.directory / "order.log").read_text():
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    output = process.communicate(timeout=60)[0].decode()
    assert process.returncode == 130, output[-3000:]
    assert "Interrupted" in output and "run the deploy again" in output


def test_no_secret_reaches_the_verbose_output(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="24.11", auth="slurm")
    run = cluster.deploy("-vvv")
    assert run.returncode == 0
    for secret in SECRETS.values():
        assert secret[:16] not in run.output.encode()
    assert "/etc/shadow" not in run.output


def test_a_limited_run_refuses_to_change_the_key_on_some_hosts_only(cluster):
    name = "slurm-key" if cluster.auth == "slurm" else "munge-key"
    changed(cluster, secrets={name: b"n" * 256})
    run = cluster.deploy("--limit", "@fake/gpu01")
    assert run.returncode != 0
    assert "differs from the" in run.output and "this run is limited" in run.output
    assert not run.sims["gpu01"].events


def test_diff_is_refused_because_it_would_print_a_key(tmp_path):
    cluster = SimCluster(tmp_path / "sim", version="24.11", auth="slurm")
    run = cluster.deploy("--dry", "--diff")
    assert run.returncode != 0
    assert "--diff would print the contents of /etc/slurm/slurm.key" in run.output and "Traceback" not in run.output
    assert all(not sim.events for sim in run.sims.values())


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_a_removed_node_is_drained_and_leaves_only_once_its_jobs_end(tmp_path, version):
    cluster = five_nodes_deployed(tmp_path, version)
    controller_holds(cluster, jobs=["41 alice gpu05", "42 bob gpu01"])
    cluster.set_inventory(version, "munge")  # gpu05 is gone from the inventory
    stopped = cluster.deploy()
    assert stopped.returncode != 0
    assert "gpu05 left the inventory and is drained" in stopped.output and "41 alice gpu05" in stopped.output
    assert "42 bob" not in stopped.output.split("jobs still run there")[1].split("\n")[0]
    assert stopped.sims["ctl"].drained == {"gpu05": "cf:removed from the inventory"}
    assert len(stopped.sims["ctl"].events) == 1 and all(not s.events for h, s in stopped.sims.items() if h != "ctl")

    controller_holds(cluster, jobs=["42 bob gpu01"])  # 41 ended
    run = cluster.deploy()
    assert run.returncode == 0, dump(run)
    assert "gpu05" not in run.sims["ctl"].content("/etc/slurm/slurm.conf").decode()
    ctl_actions = [c for h, c in run.order if h == "ctl" and c.startswith(("systemctl", "scontrol reconfigure"))]
    if version == "22.05":
        assert ctl_actions == ["systemctl stop slurmctld.service", "systemctl restart slurmctld.service"]
    else:
        assert ctl_actions == ["scontrol reconfigure"]
    assert_converged(cluster)


def test_a_node_put_back_is_resumed_and_no_one_elses_drain_is_touched(tmp_path):
    cluster = five_nodes_deployed(tmp_path, "24.11")
    ctl = cluster.directory / "ctl.json"
    # an admin's drain, Slurm's own, and one clusterforge set before its reasons began with cf:
    controller_holds(cluster, jobs=["41 alice gpu05"], drained={
        "gpu01": "admin: fan", "gpu02": "Kill task failed", "gpu03": "clusterforge: removed from inventory"})
    cluster.set_inventory("24.11", "munge")  # gpu05 leaves the inventory while its job runs: drained, refused
    assert cluster.deploy().returncode != 0
    assert Sim.load(ctl).drained["gpu05"] == "cf:removed from the inventory"

    cluster.set_inventory("24.11", "munge", FIVE_NODES)  # and comes back
    plan = cluster.plan("--detailed-exitcode")
    assert plan.returncode == 2, dump(plan)
    assert "resume gpu[03,05]: back in the inventory, drained by clusterforge for its removal" in plan.output
    report = "\n".join(line for line in plan.output.splitlines() if not line.startswith("plan: "))  # not progress
    assert "gpu01" not in report and "gpu02" not in report
    run = cluster.deploy()
    assert run.returncode == 0, dump(run)
    assert Sim.load(ctl).drained == {"gpu01": "admin: fan", "gpu02": "Kill task failed"}
    assert [c for c in run.sims["ctl"].events if "State=UNDRAIN" in c] and \
        all("State=UNDRAIN" not in c for h, s in run.sims.items() if h != "ctl" for c in s.events)
    assert_converged(cluster)


def test_a_removal_refused_after_waiting_says_it_waited_and_how_to_wait_longer(tmp_path):
    cluster = five_nodes_deployed(tmp_path, "24.11")
    controller_holds(cluster, jobs=["41 alice gpu05"])
    cluster.set_inventory("24.11", "munge")
    default = cluster.deploy()
    assert "but jobs still run there: 41 alice gpu05" in default.output
    assert "or have the deploy wait for them: --data drain_wait=SECONDS" in default.output
    waited = cluster.deploy("--data", "drain_wait=20")
    assert waited.returncode != 0
    assert "but after waiting 20 s, jobs still run there: 41 alice gpu05" in waited.output
    assert "or wait longer than 20 s: --data drain_wait=SECONDS" in waited.output


def test_a_deletion_slurmdbd_refuses_fails_the_run_naming_it_with_the_reason_and_the_rest_is_done(cluster):
    ctl = cluster.directory / "ctl.json"
    sim = Sim.load(ctl)
    sim.accounting["qos"] = [*sim.accounting.get("qos", []), "legacy", "old"]
    sim.accounting["busy"] = ["legacy"]  # jobs still use it
    sim.save(ctl)
    changed(cluster, extra="accounting=Accounting(prune=True)")
    refused = cluster.deploy()
    assert refused.returncode != 0, dump(refused)
    reason = "delete QOS legacy (Error with request: Job(s) active, cancel job(s) before remove)"
    assert f"slurmdbd refused: {reason}" in refused.output
    # Said again at the end, after everything else the run printed.
    assert refused.output.rstrip().endswith(f"The accounting database is not yet as the inventory says; slurmdbd "
                                            f"refused: {reason}.")
    # A refusal, not a broken host: the controller's steps after it ran, to its last one, which fails the run; the
    # controller is not named as failed.
    assert "These hosts failed" not in refused.output, dump(refused)
    assert "what slurmdbd refused" in refused.output  # the controller's last step ran, and failed the run
    assert Sim.load(ctl).accounting["qos"].count("old") == 0 and "legacy" in Sim.load(ctl).accounting["qos"]
    sim = Sim.load(ctl)
    sim.accounting["busy"] = []  # its jobs ended
    sim.save(ctl)
    again = cluster.deploy()
    assert again.returncode == 0, dump(again)
    assert "legacy" not in Sim.load(ctl).accounting["qos"]
    assert_converged(cluster)
