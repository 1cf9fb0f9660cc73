"""`clusterforge repair`: refused, named, where the inventory repairs nothing; otherwise the loop's own answer through
the controller (a stand-in controller here, whose launcher is the loop's real command line on a stand-in Slurm's files:
test_status.py holds the loop's words; the e2e repair test asks the loop on the test cluster)."""

from __future__ import annotations

import contextlib
import io

from click.testing import CliRunner
from golden_cases import PROD
from repair.standin import XID79, bench

from clusterforge.cli import cli
from clusterforge.reach.controller import Controller
from clusterforge.render.repair import LAUNCHER
from clusterforge.repair import main as repair_main
from clusterforge.repair.status import utc
from clusterforge.slurm.commands import Answer


def test_an_inventory_that_repairs_nothing_is_refused_naming_why():
    result = CliRunner().invoke(cli, ["repair", str(PROD)])
    assert result.exit_code == 2
    assert "no profile has Repair(mode='observe' or 'on'): nothing is repaired" in result.output


def through_the_loop(monkeypatch, state_dir: str, rc: int | None = None) -> list[str]:
    """The controller of a repairing inventory (the test cluster's, repair on), whose launcher is the loop's real
    command line on ``state_dir``; with ``rc``, a launcher that refuses with it."""
    monkeypatch.setenv("CLUSTERFORGE_TESTBED_REPAIR", "on")
    asked: list[str] = []

    def run(command: str) -> Answer:
        asked.append(command)
        if rc is not None:
            return Answer(rc, "", f"{state_dir}: permission denied: --status reads root's files (run it as root)")
        launcher, _, option = command.partition(" ")
        assert launcher == LAUNCHER
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = repair_main.main([option, "--state-dir", state_dir])
        return Answer(code, out.getvalue(), "")

    monkeypatch.setattr(Controller, "over", classmethod(lambda cls, connections, name: cls(name, run)))
    return asked


def test_the_status_is_the_loops_under_way_with_next_step_and_deadline_quarantines_and_breaker(tmp_path,
                                                                                                 monkeypatch):
    b = bench(tmp_path, attempts=1)
    b.health_drains("gpu01", XID79)
    b.tick()
    b.slurm.reboot_s = 10 ** 6
    b.tick(1000)
    b.health_drains("gpu02", XID79)
    b.tick()
    asked = through_the_loop(monkeypatch, b.loop.store.root)
    result = CliRunner().invoke(cli, ["repair", "inventories/vagrant.py"])
    assert result.exit_code == 0, result.output
    assert asked == [f"{LAUNCHER} --status"]
    deadline = utc(b.loop.store.node("gpu02").repair.deadline)
    lines = result.output.splitlines()
    assert lines[:2] == ["breaker: closed", "under way:"]
    assert lines[2].startswith(f"  gpu02: reboot (attempt 1) for {XID79}; next: the node to register after Slurm's "
                               f"reboot (the node's jobs end first), by {deadline} (")
    assert lines[3:5] == ["quarantined (nothing automatic touches them; an admin's resume lifts it):",
                          "  gpu01: cf:repair:quarantined xid79 1; scontrol update nodename=gpu01 state=resume"]
    assert lines[5] == "last ended:" and lines[6].endswith(f"gpu01: quarantined after 1 attempt(s) ({XID79}; reboot; "
                                                           "1000 s from its fault)")


def test_close_breaker_is_the_loops_close_through_the_controller(tmp_path, monkeypatch):
    b = bench(tmp_path, breaker=0)
    b.health_drains("gpu01", XID79)
    b.tick()
    assert b.loop.store.breaker().open
    asked = through_the_loop(monkeypatch, b.loop.store.root)
    result = CliRunner().invoke(cli, ["repair", "inventories/vagrant.py", "--close-breaker"])
    assert result.exit_code == 0 and result.output == "breaker closed: new repairs from now on\n"
    assert asked == [f"{LAUNCHER} --close-breaker"] and not b.loop.store.breaker().open


def test_a_loop_that_refuses_is_exit_2_naming_the_controller_and_why(tmp_path, monkeypatch):
    through_the_loop(monkeypatch, str(tmp_path), rc=1)
    result = CliRunner().invoke(cli, ["repair", "inventories/vagrant.py"])
    assert result.exit_code == 2
    assert (f"ctl: the repair loop's status failed (exit 1): {tmp_path}: permission denied: --status reads root's "
            "files (run it as root)") in result.output


def test_bmcs_is_the_loops_check_of_each_bmc_through_the_controller_exit_1_where_one_fails(tmp_path, monkeypatch):
    """The loop's own --bmcs on a plan of the test cluster's shape: its credentials files missing here, each BMC is
    named failing without a request (test_redfish.py asks a real emulator); exit 1, the lines as the loop said them.
    A plan the loop cannot read is the controller's refusal, exit 2."""
    from clusterforge.repair.plan import Bmc, NodePlan, Plan, Policy

    plan = tmp_path / "repair.json"
    plan.write_text(Plan(nodes={n: NodePlan("dgx", Bmc(f"10.77.0.2{i}", "ipmi", str(tmp_path / f"{n}.json")))
                                for i, n in ((11, "gpu01"), (12, "gpu02"))},
                         profiles={"dgx": Policy("on", power_cycle=True)}).to_json())
    asked: list[str] = []

    def run(command: str) -> Answer:
        asked.append(command)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = repair_main.main([*command.split()[1:], "--plan", str(plan)])
        return Answer(code, out.getvalue(), "")

    monkeypatch.setenv("CLUSTERFORGE_TESTBED_REPAIR", "on")
    monkeypatch.setattr(Controller, "over", classmethod(lambda cls, connections, name: cls(name, run)))
    result = CliRunner().invoke(cli, ["repair", "inventories/vagrant.py", "--bmcs"])
    assert asked == [f"{LAUNCHER} --bmcs"]
    assert result.exit_code == 1, result.output
    assert result.output.splitlines() == [
        f"gpu01: FAILED: BMC 10.77.0.211: credentials refused: {tmp_path}/gpu01.json: No such file or directory",
        f"gpu02: FAILED: BMC 10.77.0.212: credentials refused: {tmp_path}/gpu02.json: No such file or directory",
        "0 of 2 BMCs answered"]
    plan.write_text("{not a plan")
    result = CliRunner().invoke(cli, ["repair", "inventories/vagrant.py", "--bmcs"])
    assert result.exit_code == 2
    assert "ctl: the repair loop's check of the BMCs failed (exit 2)" in result.output
    both = CliRunner().invoke(cli, ["repair", "inventories/vagrant.py", "--bmcs", "--close-breaker"])
    assert both.exit_code == 2 and "--close-breaker and --bmcs are two commands" in both.output
