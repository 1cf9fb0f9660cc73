"""The repair loop's passes on Slurm's stand-in: each fault class to service with no one's command, the budgets that
end, the breaker, observe mode, and every other holder left as it is (issue 48)."""

from __future__ import annotations

import pytest
from repair.standin import XID48, XID79, bench

from clusterforge.repair.passes import close_breaker
from clusterforge.slurm import drains, repairs, reservations


def reasons(b) -> dict[str, str]:
    return {name: node.reason for name, node in b.slurm.nodes.items()}


def history(b) -> list[dict]:
    return b.loop.store.history()


# -- reboot class ---------------------------------------------------------------------------------------------------

def test_a_reboot_class_fault_is_rebooted_through_slurm_and_returns(tmp_path):
    b = bench(tmp_path)
    b.health_drains("gpu01", XID79)
    b.tick()
    # Neither ASAP (22.05 would resume the node at its registration) nor a next state: the drain outlives the boot.
    assert b.asked() == [["scontrol", "reboot", "reason=cf:repair:reboot xid79 (attempt 1 of 2)", "gpu01"]]
    b.tick(60, passes=3)   # issued, rebooted, registered: the node's check lifts the loop's drain
    assert not b.node("gpu01").flags and b.node("gpu01").reason == ""
    [ended] = history(b)
    assert ended["outcome"] == "back in service" and ended["in_service"] and ended["actions"] == ["reboot"]
    assert ended["ended_at"] - ended["seen_at"] > 0
    assert b.node("gpu02").flags == set()


def test_a_node_with_a_job_reboots_after_it_and_the_job_is_never_killed(tmp_path):
    b = bench(tmp_path)
    job = b.slurm.place("alice", ["gpu01"], 5000, gpus=(0, 1))
    b.health_drains("gpu01", XID79)
    b.tick(600, passes=6)   # past the reboot's bound: the bound runs from the job's end
    assert "REBOOT_REQUESTED" in b.node("gpu01").flags and job.state == "RUNNING"
    assert not any(a[0] == "scancel" for a in b.slurm.asked)
    assert not [line for line in b.logged if "failed" in line]
    b.tick(600, passes=6)
    assert job.state == "COMPLETED"
    assert [h["outcome"] for h in history(b)] == ["back in service"]


def test_with_admission_the_node_waits_for_the_gate(tmp_path):
    b = bench(tmp_path, gate=True)
    b.health_drains("gpu01", XID79)
    b.tick()
    b.tick(60, passes=2)       # registered: its check holds it for the gate, then lifts the loop's drain
    assert b.slurm.reservations
    b.tick(60, passes=3)
    assert history(b) == [] and any("tested by the admission gate" in line for line in b.logged)
    b.gate_passes("gpu01")
    b.tick()
    assert [h["outcome"] for h in history(b)] == ["back in service"]


def test_a_node_that_fails_the_gate_is_left_to_the_admin(tmp_path):
    b = bench(tmp_path, gate=True)
    b.health_drains("gpu01", XID79)
    b.tick()
    b.tick(60, passes=2)
    b.health_drains("gpu01", "cf:gate:allreduce 402 GB/s < 460")
    b.tick(passes=3)
    assert [h["outcome"] for h in history(b)] == ["failed the gate: cf:gate:allreduce 402 GB/s < 460"]
    assert b.node("gpu01").reason == "cf:gate:allreduce 402 GB/s < 460"
    assert len([a for a in b.asked() if a[1] == "reboot"]) == 1


# -- reset class ----------------------------------------------------------------------------------------------------

def test_a_reset_waits_for_the_gpus_jobs_and_leaves_the_others_running(tmp_path):
    b = bench(tmp_path)
    on_gpu3 = b.slurm.place("alice", ["gpu01"], 300, gpus=(3,), cpus=8)
    other = b.slurm.place("bob", ["gpu01"], 5000, gpus=(0, 1), cpus=8)
    b.health_drains("gpu01", XID48)
    b.tick(passes=3)
    assert b.asked() == [] and any("waits for the jobs on gpu3" in line for line in b.logged)
    b.tick(300)
    assert on_gpu3.state == "COMPLETED" and other.state == "RUNNING"
    assert b.asked() == [drains.drain_argv("gpu01", "cf:repair:reset gpu3 0000:5d:00 xid48 (attempt 1 of 2)")]
    b.health_resets("gpu01")
    b.tick(passes=2)
    assert other.state == "RUNNING"
    assert [(h["outcome"], h["actions"]) for h in history(b)] == [("back in service", ["reset"])]


def test_a_refused_reset_is_an_attempt_and_the_node_is_rebooted(tmp_path):
    b = bench(tmp_path)
    b.health_drains("gpu01", XID48)
    b.tick()
    b.health_refuses_reset("gpu01", "nvidia-smi -r exited 1: in use by another client")
    b.tick()
    assert b.asked()[-1][:2] == ["scontrol", "reboot"]
    assert "reason=cf:repair:reboot xid48 (attempt 2 of 2)" in b.asked()[-1]
    assert any("reset refused: gpu3 0000:5d:00 nvidia-smi -r exited 1" in line for line in b.logged)
    b.tick(60, passes=3)
    [ended] = history(b)
    assert ended["actions"] == ["reset", "reboot"] and ended["in_service"]


def test_a_reset_not_done_in_its_bound_fails_to_a_reboot(tmp_path):
    b = bench(tmp_path)
    b.health_drains("gpu01", XID48)
    b.tick()
    b.tick(601)
    assert any("reset not done within 600 s" in line for line in b.logged)
    assert b.asked()[-1][:2] == ["scontrol", "reboot"]


# -- budgets that end -----------------------------------------------------------------------------------------------

def test_a_node_that_faults_after_each_repair_is_quarantined_at_its_budget(tmp_path):
    b = bench(tmp_path, attempts=2)
    for _ in range(2):
        b.health_drains("gpu01", XID79)
        b.tick()
        b.tick(60, passes=3)
    assert [h["outcome"] for h in history(b)] == ["back in service"] * 2
    b.health_drains("gpu01", XID79)
    b.tick()
    assert b.node("gpu01").reason == "cf:repair:quarantined xid79 2"
    assert "DRAIN" in b.node("gpu01").flags
    asked = len(b.asked())
    b.tick(3600, passes=5)
    assert len(b.asked()) == asked, "nothing automatic touches a quarantined node"
    # an admin lifts it: its attempts start again
    b.admin(*drains.undrain_argv("gpu01"))
    b.tick()
    b.health_drains("gpu01", XID79)
    b.tick()
    assert "reason=cf:repair:reboot xid79 (attempt 1 of 2)" in b.asked()[-1]


def test_a_node_not_back_is_power_cycled_through_its_bmc(tmp_path):
    b = bench(tmp_path, power_cycle=True)
    b.slurm.reboot_s = 10 ** 6    # hangs in its reboot
    b.health_drains("gpu01", XID79)
    b.tick()
    b.tick(300, passes=3)
    assert b.power_cycled == []
    b.tick(300, passes=2)         # past the reboot's 900 s
    assert b.power_cycled == ["gpu01"]
    assert any("not back within 900 s of its reboot" in line for line in b.logged)
    b.tick(60, passes=3)
    [ended] = history(b)
    assert ended["actions"] == ["reboot", "power_cycle"] and ended["in_service"]


def test_without_a_bmc_a_node_not_back_is_quarantined(tmp_path):
    b = bench(tmp_path)
    b.slurm.reboot_s = 10 ** 6
    b.health_drains("gpu01", XID79)
    b.tick()
    b.tick(1000)
    assert b.node("gpu01").reason == "cf:repair:quarantined xid79 1"
    assert [h["outcome"] for h in history(b)] == ["quarantined after 1 attempt(s)"]


@pytest.mark.parametrize("release", ["22.05", "26.05"])
def test_a_reboot_slurm_timed_out_is_quarantined_past_the_bound(tmp_path, release):
    # Slurm's ResumeTimeout before the loop's bound: the node DOWN, " : reboot timed out" added to the loop's reason
    # (26.05 keeps the drain, 22.05 lifts it). Slurm's own DOWN of the loop's reboot: quarantined all the same.
    b = bench(tmp_path)
    b.slurm.release, b.slurm.reboot_s, b.slurm.resume_timeout = release, 10 ** 6, 600
    b.health_drains("gpu01", XID79)
    b.tick(passes=2)   # asked, issued
    b.tick(700)
    node = b.node("gpu01")
    assert node.base == "DOWN" and node.flags == ({"DRAIN"} if release == "26.05" else set())
    assert node.reason == "cf:repair:reboot xid79 (attempt 1 of 2) : reboot issued : reboot timed out"
    b.tick(300)
    assert b.node("gpu01").reason == "cf:repair:quarantined xid79 1"
    assert b.node("gpu01").flags == {"DRAIN"} and b.node("gpu01").next_state == ""   # the drain outlives a boot
    assert [h["outcome"] for h in history(b)] == ["quarantined after 1 attempt(s)"]


def test_a_bmc_that_refuses_is_a_failed_attempt_named(tmp_path):
    b = bench(tmp_path, power_cycle=True)
    b.slurm.reboot_s = 10 ** 6
    b.bmc_refuses = "127.0.0.1: Unable to establish IPMI v2 / RMCP+ session"
    b.health_drains("gpu01", XID79)
    b.tick()
    b.tick(1000)
    assert any("power cycle: 127.0.0.1: Unable to establish" in line for line in b.logged)
    assert b.node("gpu01").reason == "cf:repair:quarantined xid79 2"


# -- the fleet -----------------------------------------------------------------------------------------------------

def test_the_fleet_budget_repairs_so_many_nodes_at_once(tmp_path):
    b = bench(tmp_path, names=["gpu01", "gpu02", "gpu03"], budget=1)
    for name in ("gpu01", "gpu02"):
        b.health_drains(name, XID79)
    b.tick()
    assert [a[-1] for a in b.asked()] == ["gpu01"]
    assert any("gpu02: waits: 1 node(s) in repair" in line for line in b.logged)
    b.tick(60, passes=4)
    assert [a[-1] for a in b.asked()] == ["gpu01", "gpu02"]
    b.tick(60, passes=4)
    # gpu02's time to act counts its wait for the budget: from the loop's first sight of its fault
    first, second = history(b)
    assert second["node"] == "gpu02" and second["acted"][0]["at"] - second["seen_at"] >= 60
    assert first["acted"][0]["at"] == first["seen_at"]


def test_the_breaker_opens_past_the_faults_allowed_and_stays_open_until_closed(tmp_path):
    names = [f"gpu0{i}" for i in range(1, 7)]
    b = bench(tmp_path, names=names, breaker=3, budget=10)
    for name in names:
        b.health_drains(name, XID79)
    b.tick()
    rebooted = [a[-1] for a in b.asked()]
    assert rebooted == names[:3]
    assert any(line.startswith("breaker open: 4 nodes faulted") for line in b.logged)
    b.tick(60, passes=5)   # the repairs under way finish; the others stay drained
    assert [a[-1] for a in b.asked()] == rebooted
    assert all(b.node(n).reason == XID79 for n in names[3:])
    assert len(history(b)) == 3
    assert close_breaker(b.loop.store, float(b.slurm.now))
    b.tick(60, passes=4)
    assert sorted(a[-1] for a in b.asked()) == names


def test_observe_mode_says_what_it_would_do_and_changes_nothing(tmp_path):
    b = bench(tmp_path, mode="observe")
    b.health_drains("gpu01", XID79)
    b.health_drains("gpu02", XID48)
    b.tick(60, passes=5)
    assert b.asked() == []
    assert [line for line in b.logged if "would" in line] == [
        f"gpu01: would reboot (observe mode): {XID79}", f"gpu02: would reset (observe mode): {XID48}"]
    assert [h["outcome"] for h in history(b)] == ["observed", "observed"]
    assert reasons(b) == {"gpu01": XID79, "gpu02": XID48}


@pytest.mark.parametrize("reason", ["cf:ib:down mlx5_0 port 1 Down Polling", "cf:gpu:remap-failed gpu1 0000:18:00 x",
                                    "cf:gpu:xid13 gpu1 0000:18:00 the application's", "disk swap", "Kill task failed",
                                    "cf:gate:allreduce 402 GB/s < 460", "cf:mount /scratch not mounted"])
def test_what_is_never_automatic(tmp_path, reason):
    b = bench(tmp_path)
    b.health_drains("gpu01", reason)
    b.tick(60, passes=3)
    assert b.asked() == [] and b.node("gpu01").reason == reason


# -- others' decisions ---------------------------------------------------------------------------------------------

def test_an_admins_maintenance_reservation_is_left_alone(tmp_path):
    b = bench(tmp_path)
    b.admin("scontrol", "create", "reservation", "ReservationName=site", "StartTime=now", "Duration=infinite",
            "Users=root", "Flags=MAINT,IGNORE_JOBS", "Nodes=gpu01")
    b.health_drains("gpu01", XID79)
    b.tick(60, passes=3)
    assert b.asked() == []


def test_an_admins_drain_while_the_reboot_waits_for_jobs_withdraws_the_reboot(tmp_path):
    b = bench(tmp_path)
    job = b.slurm.place("alice", ["gpu01"], 5000)
    b.health_drains("gpu01", XID79)
    b.tick()
    b.admin(*drains.drain_argv("gpu01", "disk swap"))
    b.tick()
    # The withdrawal lifts every drain (the reboot's next state is none): the admin's is set again at once, the node
    # held from users' jobs meanwhile in the loop's guard.
    assert b.asked()[-4:] == [reservations.guard_argv("gpu01"), ["scontrol", "cancel_reboot", "gpu01"],
                              drains.drain_argv("gpu01", "disk swap"),
                              ["scontrol", "delete", "ReservationName=cf-repair-guard-gpu01"]]
    assert b.slurm.reservations == {}
    assert b.node("gpu01").reason == "disk swap" and "DRAIN" in b.node("gpu01").flags
    b.tick(6000, passes=3)
    assert job.state == "COMPLETED"
    assert b.node("gpu01").reason == "disk swap" and "DRAIN" in b.node("gpu01").flags
    assert not {"REBOOT_REQUESTED", "REBOOT_ISSUED"} & b.node("gpu01").flags
    assert history(b)[-1]["outcome"].startswith("stopped, the node left as it is: drained by another")


def test_an_admins_drain_while_the_node_reboots_is_kept_and_stops_the_repair(tmp_path):
    b = bench(tmp_path)
    b.slurm.reboot_s = 120
    b.health_drains("gpu01", XID79)
    b.tick()
    b.tick(10)    # issued
    assert "REBOOT_ISSUED" in b.node("gpu01").flags
    b.admin(*drains.drain_argv("gpu01", "disk swap"))
    b.tick()
    b.tick(120, passes=2)   # registered: the admin's drain stays
    assert b.node("gpu01").reason == "disk swap" and "DRAIN" in b.node("gpu01").flags
    assert history(b)[-1]["outcome"] == "stopped, the node left as it is: drained by another during its repair: " \
                                        "disk swap"
    assert [a for a in b.asked() if a[:2] == ["scontrol", "update"]] == []


def test_an_admins_drain_after_the_loops_last_pass_before_the_registration_is_kept(tmp_path):
    """The window Slurm's nextstate=resume left: the loop never sees the admin's drain before the node registers."""
    b = bench(tmp_path)
    b.slurm.reboot_s = 120
    b.health_drains("gpu01", XID79)
    b.tick()
    b.tick(10)    # issued
    b.tick(100)
    assert "REBOOT_ISSUED" in b.node("gpu01").flags
    b.admin(*drains.drain_argv("gpu01", "disk swap"))
    b.tick(30)    # registered before this pass
    assert "REBOOT_ISSUED" not in b.node("gpu01").flags
    b.tick(passes=3)
    assert b.node("gpu01").reason == "disk swap" and "DRAIN" in b.node("gpu01").flags
    assert [h["outcome"] for h in history(b)] == ["stopped, the node left as it is: drained by another during its "
                                                  "repair: disk swap"]


def test_a_node_registered_after_its_reboot_waits_for_its_check(tmp_path):
    """The registration keeps the loop's drain: the node's check lifts it where healthy (or drains over it), and
    until then the node is not back."""
    b = bench(tmp_path)
    b.checks = False     # the node's check comes late
    b.slurm.reboot_s = 120
    b.health_drains("gpu01", XID79)
    b.tick()
    b.tick(60, passes=4)
    assert not {"REBOOT_ISSUED", "REBOOT_REQUESTED"} & b.node("gpu01").flags
    assert b.node("gpu01").reason == "cf:repair:reboot xid79 (attempt 1 of 2) : reboot issued"
    assert "DRAIN" in b.node("gpu01").flags
    assert history(b) == [] and b.loop.store.node("gpu01").repair is not None
    b.health_checks_registered("gpu01")
    b.tick(passes=2)
    assert [h["outcome"] for h in history(b)] == ["back in service"]


def test_a_node_whose_check_does_not_answer_after_its_reboot_fails_the_attempt(tmp_path):
    b = bench(tmp_path, attempts=1)
    b.checks = False     # the node's check never comes
    b.slurm.reboot_s = 120
    b.health_drains("gpu01", XID79)
    b.tick()
    b.tick(60, passes=20)  # past the reboot's 900 s
    assert any("its check did not answer within 900 s of its reboot" in line for line in b.logged), b.logged
    assert [h["outcome"] for h in history(b)] == ["quarantined after 1 attempt(s)"]
    assert b.node("gpu01").reason == "cf:repair:quarantined xid79 1"


def test_an_admins_drain_over_an_asked_reset_stops_the_repair(tmp_path):
    b = bench(tmp_path)
    b.health_drains("gpu01", XID48)
    b.tick()
    b.admin(*drains.drain_argv("gpu01", "swap GPU 3"))
    b.tick(700, passes=3)
    assert b.node("gpu01").reason == "swap GPU 3"
    assert [a for a in b.asked() if a[1] == "reboot"] == []


def test_a_reboot_slurmctld_did_not_take_is_asked_again(tmp_path):
    b = bench(tmp_path)
    b.health_drains("gpu01", XID79)
    b.slurm.down = True
    b.tick()
    b.slurm.down = False
    b.tick()
    assert [a for a in b.asked() if a[1] == "reboot"][-1][-1] == "gpu01"
    assert "REBOOT_REQUESTED" in b.node("gpu01").flags or "REBOOT_ISSUED" in b.node("gpu01").flags


def _boots_with(b, name: str, reason: str, passes: int) -> None:
    """Passes of 10 s in which the node's check, at each boot, finds ``reason`` again before the loop's next pass: it
    drains over the loop's reboot reason, which the registration kept."""
    boot = b.node(name).boot
    for _ in range(passes):
        b.slurm.advance(10)
        if b.node(name).boot != boot:
            boot = b.node(name).boot
            if not b.node(name).reason or repairs.reboot_asked(b.node(name).reason):
                b.health_drains(name, reason)
        b.loop.one_pass()


def test_a_node_back_from_its_reboot_with_the_same_fault_worded_the_same_is_not_rebooted_again(tmp_path):
    """Seen on the test cluster: a GPU gone for good is drained again at each boot with the very reason that started
    the repair, which the loop took for its reboot not taken by slurmctld, and asked again every pass."""
    missing = "cf:gpu:missing gpu3 /dev/nvidia3 not seen by nvidia-smi (7 of 8 GPUs)"
    b = bench(tmp_path, attempts=1)
    b.health_drains("gpu01", missing)
    b.tick()
    _boots_with(b, "gpu01", missing, passes=40)
    assert len([a for a in b.asked() if a[1] == "reboot"]) == 1
    assert b.node("gpu01").reason == "cf:repair:quarantined missing 1"
    assert any("reboot failed: still faulty after the reboot: " + missing in line for line in b.logged), b.logged


def test_a_node_back_from_its_reset_with_the_same_fault_is_not_reset_again(tmp_path):
    b = bench(tmp_path, attempts=2)
    b.health_drains("gpu01", XID48)
    b.tick()
    assert b.node("gpu01").reason.startswith("cf:repair:reset gpu3")
    b.health_drains("gpu01", XID48)   # the check reset it, and found the fault again, worded the same
    b.tick()
    assert len([a for a in b.asked() if "cf:repair:reset" in " ".join(a)]) == 1
    assert any("reset failed: still faulty after the reset" in line for line in b.logged), b.logged
    assert "reason=cf:repair:reboot xid48 (attempt 2 of 2)" in b.asked()[-1]


@pytest.mark.parametrize("earlier_loop", [False, True])
def test_a_node_quarantined_while_its_reboot_is_issued_stays_quarantined_after_slurm_registers_it(tmp_path,
                                                                                                  earlier_loop):
    """Seen on the test cluster: a node not back from its reboot whose BMC does not answer was left "in repair",
    its quarantine refused on a DOWN node. It is quarantined as it is; the registration after that reboot keeps the
    drain (an earlier loop's reboot asked nextstate=resume, which lifts every drain: undone); an admin's lift is
    not."""
    b = bench(tmp_path, power_cycle=True)
    b.bmc_refuses = "BMC 10.2.0.1: chassis power status failed: exit 1: Error: Unable to establish IPMI v2 / RMCP+ session"
    b.slurm.reboot_s = 3000           # not back within the reboot's bound (900 s)
    b.health_drains("gpu01", XID79)
    b.tick()
    b.tick(100, passes=10)
    assert b.node("gpu01").reason == "cf:repair:quarantined xid79 2"
    assert {"REBOOT_ISSUED", "DRAIN"} <= b.node("gpu01").flags
    [ended] = history(b)
    assert ended["outcome"] == "quarantined after 2 attempt(s)"
    if earlier_loop:
        b.node("gpu01").next_state = "RESUME"
    b.tick(300, passes=10)            # it boots at last and registers
    assert "REBOOT_ISSUED" not in b.node("gpu01").flags
    # Slurm timed the reboot out first (ResumeTimeout), and said so in the reason it kept; a registration that
    # lifted the drain (nextstate=resume) is undone with the quarantine's own words.
    kept = "" if earlier_loop else " : reboot timed out"
    assert b.node("gpu01").reason == "cf:repair:quarantined xid79 2" + kept and "DRAIN" in b.node("gpu01").flags
    assert any("its quarantine drained again" in line for line in b.logged) == earlier_loop, b.logged
    b.admin(*drains.undrain_argv("gpu01"))
    b.tick(passes=2)
    assert "DRAIN" not in b.node("gpu01").flags and b.node("gpu01").reason == ""
    assert any("its quarantine was lifted" in line for line in b.logged)
