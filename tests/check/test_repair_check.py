"""`clusterforge check`'s repair check, on the controller of an inventory that repairs: the loop's own account read
through the controller (`clusterforge-repair --status --json`, answered here by the loop's real code on a stand-in
Slurm's files): each repaired node's last repairs ended, the repairs under way; a quarantined node and an open breaker
are findings that say what lifts them; an answer that is not the loop's is a finding, never "nothing to say"."""

from __future__ import annotations

import contextlib
import dataclasses
import io

import pytest
from clusters import gpu_profile, small_cluster
from repair.standin import XID48, XID79, bench

from clusterforge.check import repair as repair_check
from clusterforge.check.probes import Context, checks_for, perform
from clusterforge.model import Repair, Vault, resolve
from clusterforge.repair import main as repair_main
from clusterforge.repair.passes import close_breaker
from clusterforge.repair.status import utc
from clusterforge.slurm.commands import Answer


@pytest.fixture
def valid():
    return resolve(small_cluster(profiles=(gpu_profile(repair=Repair(mode="on", attempts=1)),), vault=Vault()))


def machine(valid, name):
    return next(m for m in valid.machines if m.name == name)


def the_loop(state_dir: str):
    """The controller, whose only command here is the loop's status, answered by the loop's own code."""
    asked = []

    def run(command: str) -> Answer:
        asked.append(command)
        assert command == "/usr/sbin/clusterforge-repair --status --json"
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = repair_main.main(["--status", "--json", "--state-dir", state_dir])
        return Answer(rc, out.getvalue(), "")

    return run, asked


def check(valid, run, limit=None):
    ctl = machine(valid, "ctl")
    [found] = [c for c in checks_for(ctl, valid, smoke=False) if c.name == "repair"]
    return perform(found, Context(valid, ctl, run, limit=limit))


def test_each_repaired_nodes_history_and_a_quarantine_with_what_lifts_it(valid, tmp_path):
    b = bench(tmp_path, attempts=1)
    b.health_drains("gpu02", XID48)
    b.tick()
    b.health_resets("gpu02")
    b.tick()
    b.tick()
    b.health_drains("gpu01", XID79)
    b.tick()
    b.slurm.reboot_s = 10 ** 6
    b.tick(1000)
    run, asked = the_loop(b.loop.store.root)
    outcome = check(valid, run)
    assert asked and outcome.host == "ctl" and outcome.status == "FINDING"
    ended = {e["node"]: e["ended_at"] for e in b.loop.store.history()}
    assert outcome.detail == (
        f"breaker closed | gpu01: {utc(ended['gpu01'])} {XID79}: reboot, quarantined after 1 attempt(s) (1000 s from "
        f"its fault) | gpu02: {utc(ended['gpu02'])} {XID48}: reset, back in service (20 s from its fault) | 2 "
        "repaired node(s) with no repair ended lately")
    assert [f.message for f in outcome.findings] == [
        "gpu01 is quarantined (cf:repair:quarantined xid79 1): nothing automatic repairs it; once it is mended, an "
        "admin lifts it: scontrol update nodename=gpu01 state=resume"]


def test_a_repair_under_way_is_shown_with_its_next_step_and_an_open_breaker_is_a_finding(valid, tmp_path):
    b = bench(tmp_path, breaker=0)
    b.health_drains("gpu01", XID79)
    b.tick()
    run, _ = the_loop(b.loop.store.root)
    opened = b.loop.store.breaker().open_since
    outcome = check(valid, run)
    assert outcome.detail == f"breaker open since {utc(opened)} | 4 repaired node(s) with no repair ended lately"
    assert [f.message for f in outcome.findings] == [
        f"the repair breaker is open since {utc(opened)}: 1 nodes faulted within 3600 s, more than 0: gpu01; no new "
        "repair starts until an admin closes it: clusterforge repair --close-breaker INVENTORY"]
    assert close_breaker(b.loop.store, float(b.slurm.now))
    b.tick()
    outcome = check(valid, run)
    assert outcome.status == "ok" and outcome.findings == ()
    assert outcome.detail.startswith("breaker closed | gpu01 under way: reboot (attempt 1), next the node to register "
                                     "after Slurm's reboot (the node's jobs end first), by ")


def test_limit_keeps_the_nodes_named_and_the_breaker(valid, tmp_path):
    b = bench(tmp_path, attempts=1)
    b.health_drains("gpu01", XID79)
    b.tick()
    b.slurm.reboot_s = 10 ** 6
    b.tick(1000)
    run, _ = the_loop(b.loop.store.root)
    other = check(valid, run, limit=frozenset({"gpu02"}))
    assert other.findings == () and other.detail == "breaker closed | 1 repaired node(s) with no repair ended lately"
    assert len(check(valid, run, limit=frozenset({"gpu01"})).findings) == 1


@pytest.mark.parametrize("answer, said", [
    (Answer(127, "", "sh: 1: /usr/sbin/clusterforge-repair: not found"),
     "/usr/sbin/clusterforge-repair is not installed: the deploy installs it"),
    (Answer(2, "", "clusterforge-repair: error: unrecognized arguments: --json"),
     "/usr/sbin/clusterforge-repair on the controller predates --status --json: run the deploy"),
    (Answer(1, "", "/var/lib/clusterforge/repair: permission denied: --status reads root's files (run it as root)"),
     "`/usr/sbin/clusterforge-repair --status --json` failed: exit 1: /var/lib/clusterforge/repair: permission "
     "denied: --status reads root's files (run it as root)"),
    (Answer(124, "", ""), "`/usr/sbin/clusterforge-repair --status --json` failed: gave no answer in time"),
    (Answer(0, "breaker: closed\n", ""),
     "`/usr/sbin/clusterforge-repair --status --json`: Expecting value: line 1 column 1 (char 0)"),
    (Answer(0, '{"version": 9}\n', ""),
     "`/usr/sbin/clusterforge-repair --status --json`: the repair loop's status is version 9, this reads 1"),
])
def test_an_answer_that_is_not_the_loops_status_is_a_finding_naming_it(valid, answer, said):
    outcome = check(valid, lambda command: answer)
    assert outcome.status == "FINDING" and [f.message for f in outcome.findings] == [said]


def test_the_repair_check_runs_on_the_controller_only_where_a_profile_is_repaired(valid):
    assert "repair" in [c.name for c in checks_for(machine(valid, "ctl"), valid, smoke=False)]
    assert "repair" not in [c.name for c in checks_for(machine(valid, "gpu01"), valid, smoke=False)]
    unrepaired = dataclasses.replace(valid, repair=None)
    assert "repair" not in [c.name for c in checks_for(machine(valid, "ctl"), unrepaired, smoke=False)]
    observed = resolve(small_cluster(profiles=(gpu_profile(repair=Repair(mode="observe")),), vault=Vault()))
    assert "repair" in [c.name for c in checks_for(machine(observed, "ctl"), observed, smoke=False)]
    assert repair_check.COMMAND == "/usr/sbin/clusterforge-repair --status --json"
