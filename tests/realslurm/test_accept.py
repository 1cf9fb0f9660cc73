"""`clusterforge accept` (accept/run.py) against the real slurmctld and slurmd of 26.05 (the release whose root
has slurmd, so jobs run), the controller reached through a runner that runs its commands here: the states read from
the real sinfo, the reservations from the real scontrol, each test a real batch job (sbatch with its script on stdin,
scontrol show job read as it runs and ends, its output file read back from the batch host), the cf-accept
reservation created and deleted, and the node found drained through drains.py, never over an admin's drain.

One slurmd runs on this machine, so one node runs jobs: the multi-node rounds and the bisection are proved against
the Slurm stand-in (tests/accept). The tests' scripts are stand-ins (each prints the number a file under the scratch
directory holds; the verdict holds it to a floor, as admission.tests' hold a tool's number): what is proved here is
accept's use of Slurm."""

from __future__ import annotations

import time

import pytest
from realslurm import gate_fixtures, harness
from realslurm.gate_fixtures import ADMIN, judge, stand_in_script

from clusterforge.admission import records
from clusterforge.accept.run import Accept
from clusterforge.reach.controller import Controller
from clusterforge.slurm import nodes
from clusterforge.slurm.commands import Answer

NODES = ["gpu01", "gpu02", "gpu03"]   # gpu01 runs slurmd; gpu02 never registers; gpu03 an admin drains
ADDRESSES = {"gpu01": "127.0.0.1", "gpu[02-03]": "127.0.0.2"}


@pytest.mark.realslurm
@pytest.mark.parametrize("reserve", [False, True], ids=["idle-nodes", "reserve"])
def test_accept_runs_its_tests_as_real_jobs_and_drains_the_node_below_its_floor(reserve, tmp_path):
    runtime = harness.require("26.05")
    with harness.scratch_dir() as scratch:
        etc = gate_fixtures.slurm_conf(scratch, "accept", ADDRESSES)
        values = gate_fixtures.values(scratch, allreduce="300", dcgm="999")
        with harness.running_slurmctld(runtime, etc, scratch) as ctld, harness.running_slurmd(ctld, "gpu01"):
            ctld.scontrol("update", "NodeName=gpu03", "State=DRAIN", f"Reason={ADMIN}")

            seen: list[str] = []   # what scontrol show job said while accept waited

            def watch(command: str, answer: Answer) -> None:
                if command.startswith("scontrol -o show job"):
                    seen.append(answer.out)

            controller = gate_fixtures.shell_runner(ctld, watch)

            said: list[str] = []
            plan = {n: [{"name": "allreduce", "timeout": 30}, {"name": "dcgm", "timeout": 30}] for n in NODES}
            run = Accept(plan, [("all nodes", NODES)], {}, Controller("ctl", controller), lambda node: controller,
                         said.append, stand_in_script(values), judge, tmp_path / "records", reserve=reserve, wait_s=0,
                         controller_records=str(scratch / "gate" / "records"))
            report = run.run()
            assert report.tested == ["gpu01"], said
            assert set(report.left_alone) == {"gpu02", "gpu03"}
            assert report.left_alone["gpu03"].startswith("drained") and ADMIN in report.left_alone["gpu03"]
            [finding] = report.findings
            assert (finding.node, finding.drain.reason) == ("gpu01", "cf:accept:allreduce 300 GB/s < 460")
            node = gate_fixtures.node(ctld, "gpu01")
            assert "DRAIN" in node["State"] and node["Reason"].startswith("cf:accept:allreduce 300 GB/s < 460")
            assert gate_fixtures.node(ctld, "gpu03")["Reason"].startswith(ADMIN)
            jobs = harness.parse_oneliner(ctld.run("scontrol", "-o", "show", "job").stdout)
            # The failed allreduce run once more alone before the drain (slow again).
            assert sorted(j["JobName"] for j in jobs) == ["cf-accept:allreduce", "cf-accept:allreduce",
                                                          "cf-accept:dcgm"]
            assert all(j["JobState"] == "COMPLETED" and j["NodeList"] == "gpu01" for j in jobs)
            # Each job ran inside cf-accept (slurmctld forgets a job's reservation once the reservation is gone).
            ran = harness.parse_oneliner(seen[-1])
            assert [j.get("Reservation", "(null)") for j in ran] == ["cf-accept" if reserve else "(null)"], ran
            kept = records.read(tmp_path / "records", "gpu01")
            assert [(r["test"], r["passed"], r["value"]) for r in kept] == [("allreduce", False, 300.0),
                                                                           ("dcgm", True, 999.0),
                                                                           ("allreduce", False, 300.0)]
            # Appended on the controller too (its sh, as root), where the gate's are and the exporter reads them.
            assert records.read_all(scratch / "gate" / "records") == {"gpu01": kept}
            assert "No reservations in the system" in ctld.run("scontrol", "show", "reservation").stdout
            if reserve:
                assert "reservation cf-accept holds 1 node" in said and "reservation cf-accept deleted" in said


@pytest.mark.realslurm
def test_with_reserve_a_node_busy_with_a_users_job_is_tested_once_the_job_has_ended(tmp_path):
    """cf-accept (MAINT, IGNORE_JOBS) is made over the busy node; accept waits, reading sinfo's states as 26.05
    prints them (allocated, then maint: idle in a MAINT reservation), and tests it then."""
    runtime = harness.require("26.05")
    with harness.scratch_dir() as scratch:
        etc = gate_fixtures.slurm_conf(scratch, "accept", ADDRESSES)
        values = gate_fixtures.values(scratch, allreduce="478.5")
        with harness.running_slurmctld(runtime, etc, scratch) as ctld, harness.running_slurmd(ctld, "gpu01"):
            user = ctld.run("sbatch", "--parsable", "--job-name=user", "--output=/dev/null", "--wrap=sleep 8")
            states = []

            def watch(command: str, answer: Answer) -> None:
                if command.startswith("sinfo"):
                    states.append(next(n.state for n in nodes.parse_sinfo(answer.out) if n.name == "gpu01"))

            controller = gate_fixtures.shell_runner(ctld, watch)

            deadline = time.monotonic() + 30
            while "|allocated|" not in controller(nodes.sinfo_command()).out:
                assert time.monotonic() < deadline, "the user's job did not start"
                time.sleep(0.5)
            said: list[str] = []
            plan = {"gpu01": [{"name": "allreduce", "timeout": 30}]}
            run = Accept(plan, [("all nodes", ["gpu01"])], {}, Controller("ctl", controller), lambda node: controller,
                         said.append, stand_in_script(values), judge, tmp_path / "records", reserve=True, wait_s=60)
            report = run.run()
            assert report.tested == ["gpu01"] and report.findings == [] and report.exit_status == 0, said
            assert "allocated$" in states and "maint" in states, states
            assert harness.parse_oneliner(ctld.scontrol("-o", "show", "job", user.stdout.strip()))[0][
                "JobState"] == "COMPLETED"
            assert [r["value"] for r in records.read(tmp_path / "records", "gpu01")] == [478.5]
            assert "No reservations in the system" in ctld.run("scontrol", "show", "reservation").stdout
