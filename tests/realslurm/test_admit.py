"""`clusterforge admit` (accept/admit.py) against the real slurmctld and slurmd of 26.05, through a runner that
runs the controller's commands here: a node the gate holds and drained for a failed test, with the gate's test job
still running in its hold and a user's job waiting for the node, is admitted: the test job cancelled, the hold
deleted, the gate's drain lifted, and the user's job runs. A held node an admin drained loses the hold, as asked,
and keeps the admin's drain; a node not held is left alone and said so."""

from __future__ import annotations

import time

import pytest
from realslurm import gate_fixtures, harness
from realslurm.gate_fixtures import ADMIN

from clusterforge.accept.admit import Admitted, admit
from clusterforge.reach.controller import Controller, ControllerRefused
from clusterforge.slurm import drains, reservations

NODE, HELD_BY_ADMIN, FREE = "gpu01", "gpu02", "gpu03"  # gpu01 runs slurmd; the others never register


def job_state(ctld: harness.Slurmctld, job_id: str) -> str:
    return harness.parse_oneliner(ctld.scontrol("-o", "show", "job", job_id.strip()))[0]["JobState"]


def wait_for(what: str, test, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not test():
        assert time.monotonic() < deadline, f"not {what} within {timeout} s"
        time.sleep(0.5)


@pytest.mark.realslurm
def test_a_held_node_failed_by_the_gate_is_admitted_its_test_cancelled_and_an_admins_drain_kept():
    runtime = harness.require("26.05")
    with harness.scratch_dir() as scratch:
        etc = gate_fixtures.slurm_conf(scratch, "admit", {NODE: "127.0.0.1", f"{HELD_BY_ADMIN},{FREE}": "127.0.0.2"})
        with harness.running_slurmctld(runtime, etc, scratch) as ctld:
            hold, other = reservations.name("new", NODE), reservations.name("repaired", HELD_BY_ADMIN)
            ctld.run(*reservations.create_argv(hold, NODE))
            ctld.run(*reservations.create_argv(other, HELD_BY_ADMIN))
            with harness.running_slurmd(ctld, NODE):
                # The gate's test, running in the hold (as root), and the gate's drain of an earlier failed one;
                # a user's job waits for the node.
                test = ctld.run("sbatch", "--parsable", f"--reservation={hold}", "--job-name=cf-gate:allreduce",
                                "--output=/dev/null", "--wrap=sleep 300").stdout
                wait_for("the gate's test running", lambda: job_state(ctld, test) == "RUNNING")
                ctld.run(*drains.drain_argv(NODE, "cf:gate:allreduce 300 GB/s < 460"))
                # (A user's as test_gate_program submits one: outside the reservation, which only its jobs enter.)
                user = ctld.run("sbatch", "--parsable", f"--nodelist={NODE}", "--output=/dev/null",
                                "--wrap=true").stdout
                ctld.run(*drains.drain_argv(HELD_BY_ADMIN, ADMIN))
                assert job_state(ctld, user) == "PENDING"  # the node is the gate's while it holds it
                controller = Controller("ctl", gate_fixtures.shell_runner(ctld))

                done = admit([NODE, HELD_BY_ADMIN, FREE], controller)

                assert done == [Admitted(NODE, hold, lifted=True), Admitted(HELD_BY_ADMIN, other, kept=ADMIN),
                                Admitted(FREE, None)]
                assert [d.line() for d in done] == [
                    f"{NODE}: admitted by hand ({hold} deleted, the gate's drain lifted)",
                    f"{HELD_BY_ADMIN}: admitted by hand ({other} deleted); still drained by another, left as it is: "
                    f"{ADMIN}",
                    f"{FREE}: not held by the admission gate; nothing to do"]
                assert gate_fixtures.shown_reservations(ctld) == []
                assert job_state(ctld, test) == "CANCELLED"
                wait_for("the user's job run", lambda: job_state(ctld, user) == "COMPLETED")
                assert gate_fixtures.node(ctld, HELD_BY_ADMIN)["Reason"].startswith(ADMIN)
                # Again: nothing held any more, nothing done.
                assert admit([NODE], controller) == [Admitted(NODE, None)]


@pytest.mark.realslurm
def test_admitting_cancels_only_the_gates_jobs_an_admins_job_in_the_hold_runs_on_and_is_named():
    """Issue 46, 8: `admit` cancelled every job in the hold. An admin's job there (root's, as the hold admits root
    alone; named as they like) is theirs: it runs on, the hold stays (slurmctld refuses to delete a reservation a job
    runs in), and admit fails naming it; the gate's own test is cancelled."""
    runtime = harness.require("26.05")
    with harness.scratch_dir() as scratch:
        etc = gate_fixtures.slurm_conf(scratch, "admitown", {NODE: "127.0.0.1"})
        etc.joinpath("slurm.conf").write_text(etc.joinpath("slurm.conf").read_text().replace(
            f"NodeName={NODE} NodeAddr=127.0.0.1 CPUs=1", f"NodeName={NODE} NodeAddr=127.0.0.1 CPUs=2"))
        with harness.running_slurmctld(runtime, etc, scratch) as ctld:
            hold = reservations.name("new", NODE)
            ctld.run(*reservations.create_argv(hold, NODE))
            with harness.running_slurmd(ctld, NODE):
                test = ctld.run("sbatch", "--parsable", f"--reservation={hold}", "--job-name=cf-gate:allreduce",
                                "--ntasks=1", "--mem=10", "--output=/dev/null", "--wrap=sleep 300").stdout
                burn_in = ctld.run("sbatch", "--parsable", f"--reservation={hold}", "--job-name=admin-burn-in",
                                   "--ntasks=1", "--mem=10", "--output=/dev/null", "--wrap=sleep 300").stdout
                wait_for("both running", lambda: job_state(ctld, test) == job_state(ctld, burn_in) == "RUNNING")
                # One refusal, naming the controller, what it was asked and what it said.
                with pytest.raises(ControllerRefused, match=fr"(?s)^ctl: admitting {NODE} \({hold}\) failed "
                                                            fr"\(exit 1\): .*slurmctld kept {hold}, jobs not the "
                                                            fr"gate's in it: {burn_in.strip()} root admin-burn-in"):
                    admit([NODE], Controller("ctl", gate_fixtures.shell_runner(ctld)))
                assert job_state(ctld, burn_in) == "RUNNING"
                assert job_state(ctld, test) == "CANCELLED"
                assert [r.name for r in gate_fixtures.shown_reservations(ctld)] == [hold]
                ctld.run("scancel", burn_in.strip())
