"""`clusterforge accept` (admission/accept.py) against the real slurmctld and slurmd of 26.05 (the release whose root
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
from pathlib import Path

import pytest
from realslurm import harness

from clusterforge.admission import records
from clusterforge.admission.accept import Accept
from clusterforge.admission.verdict import Result
from clusterforge.health.commands import Answer

NODES = ["gpu01", "gpu02", "gpu03"]   # gpu01 runs slurmd; gpu02 never registers; gpu03 an admin drains
FLOOR = 460.0
ADMIN = "RMA: fan (admin)"


def stand_in_script(values: Path):
    def script(test: dict, nodes: list[str]) -> str:
        return f"#!/bin/sh\n#SBATCH --nodelist={','.join(nodes)}\n#SBATCH --time=2\ncat {values}/{test['name']}\n"
    return script


def judge(test: dict, node: str, output: str, exit_status: int) -> list[Result]:
    try:
        value = float(output.strip())
    except ValueError:
        return [Result(node, test["name"], False, detail=f"unreadable output: {output.strip()[:80]!r}")]
    return [Result(node, test["name"], exit_status == 0 and value >= FLOOR, value, "GB/s", FLOOR)]


def slurm_conf(scratch: Path) -> Path:
    etc = scratch / "etc"
    etc.mkdir(mode=0o755)
    keys = harness.overrides(scratch, harness.free_port())
    # One CPU and 100 MB: no more than this machine has, so slurmctld does not drain gpu01 for its hardware.
    (etc / "slurm.conf").write_text(
        "ClusterName=accept\nSlurmUser=slurm\nAuthType=auth/munge\nSelectType=select/cons_tres\n"
        "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nMpiDefault=none\nReturnToService=2\n"
        "MinJobAge=300\n" + "".join(f"{k}={v}\n" for k, v in keys.items())
        + "NodeName=gpu01 NodeAddr=127.0.0.1 CPUs=1 RealMemory=100 State=UNKNOWN\n"
        "NodeName=gpu[02-03] NodeAddr=127.0.0.2 CPUs=1 RealMemory=100 State=UNKNOWN\n"
        "PartitionName=all Nodes=gpu[01-03] Default=YES State=UP\n")
    (etc / "cgroup.conf").write_text("CgroupPlugin=autodetect\n")
    return etc


def shown(ctld: harness.Slurmctld, node: str) -> dict[str, str]:
    return harness.parse_oneliner(ctld.scontrol("-o", "show", "node", node))[0]


@pytest.mark.realslurm
@pytest.mark.parametrize("reserve", [False, True], ids=["idle-nodes", "reserve"])
def test_accept_runs_its_tests_as_real_jobs_and_drains_the_node_below_its_floor(reserve, tmp_path):
    runtime = harness.require("26.05")
    with harness.scratch_dir() as scratch:
        etc = slurm_conf(scratch)
        values = scratch / "values"
        values.mkdir(mode=0o755)
        (values / "allreduce").write_text("300\n")
        (values / "dcgm").write_text("999\n")
        with harness.running_slurmctld(runtime, etc, scratch) as ctld, harness.running_slurmd(ctld, "gpu01"):
            ctld.scontrol("update", "NodeName=gpu03", "State=DRAIN", f"Reason={ADMIN}")

            seen: list[str] = []   # what scontrol show job said while accept waited

            def controller(command: str) -> Answer:
                done = ctld.run("sh", "-c", command, check=False, timeout=60)
                if command.startswith("scontrol -o show job"):
                    seen.append(done.stdout)
                return Answer(done.returncode, done.stdout, done.stderr)

            said: list[str] = []
            plan = {n: [{"name": "allreduce", "timeout": 30}, {"name": "dcgm", "timeout": 30}] for n in NODES}
            run = Accept(plan, [("all nodes", NODES)], {}, controller, lambda node: controller, said.append,
                         stand_in_script(values), judge, tmp_path / "records", reserve=reserve, wait_s=0)
            report = run.run()
            assert report.tested == ["gpu01"], said
            assert set(report.left_alone) == {"gpu02", "gpu03"}
            assert report.left_alone["gpu03"].startswith("drained") and ADMIN in report.left_alone["gpu03"]
            [finding] = report.findings
            assert (finding.node, finding.drain.reason) == ("gpu01", "cf:accept:allreduce 300 GB/s < 460")
            node = shown(ctld, "gpu01")
            assert "DRAIN" in node["State"] and node["Reason"].startswith("cf:accept:allreduce 300 GB/s < 460")
            assert shown(ctld, "gpu03")["Reason"].startswith(ADMIN)
            jobs = harness.parse_oneliner(ctld.run("scontrol", "-o", "show", "job").stdout)
            assert sorted(j["JobName"] for j in jobs) == ["cf-accept:allreduce", "cf-accept:dcgm"]
            assert all(j["JobState"] == "COMPLETED" and j["NodeList"] == "gpu01" for j in jobs)
            # Each job ran inside cf-accept (slurmctld forgets a job's reservation once the reservation is gone).
            ran = harness.parse_oneliner(seen[-1])
            assert [j.get("Reservation", "(null)") for j in ran] == ["cf-accept" if reserve else "(null)"] * 2, ran
            kept = records.read(tmp_path / "records", "gpu01")
            assert [(r["test"], r["passed"], r["value"]) for r in kept] == [("allreduce", False, 300.0),
                                                                           ("dcgm", True, 999.0)]
            assert "No reservations in the system" in ctld.run("scontrol", "show", "reservation").stdout
            if reserve:
                assert "reservation cf-accept holds 1 node" in said and "reservation cf-accept deleted" in said


@pytest.mark.realslurm
def test_with_reserve_a_node_busy_with_a_users_job_is_tested_once_the_job_has_ended(tmp_path):
    """cf-accept (MAINT, IGNORE_JOBS) is made over the busy node; accept waits, reading sinfo's states as 26.05
    prints them (allocated, then maint: idle in a MAINT reservation), and tests it then."""
    runtime = harness.require("26.05")
    with harness.scratch_dir() as scratch:
        etc = slurm_conf(scratch)
        values = scratch / "values"
        values.mkdir(mode=0o755)
        (values / "allreduce").write_text("478.5\n")
        with harness.running_slurmctld(runtime, etc, scratch) as ctld, harness.running_slurmd(ctld, "gpu01"):
            user = ctld.run("sbatch", "--parsable", "--job-name=user", "--output=/dev/null", "--wrap=sleep 8")
            states = []

            def controller(command: str) -> Answer:
                done = ctld.run("sh", "-c", command, check=False, timeout=60)
                if command.startswith("sinfo"):
                    states.append(next(line.split("|")[1] for line in done.stdout.splitlines()
                                       if line.startswith("gpu01|")))
                return Answer(done.returncode, done.stdout, done.stderr)

            deadline = time.monotonic() + 30
            while "allocated" not in controller("sinfo --noheader --Node --format='%N|%T|%E'").out:
                assert time.monotonic() < deadline, "the user's job did not start"
                time.sleep(0.5)
            said: list[str] = []
            plan = {"gpu01": [{"name": "allreduce", "timeout": 30}]}
            run = Accept(plan, [("all nodes", ["gpu01"])], {}, controller, lambda node: controller, said.append,
                         stand_in_script(values), judge, tmp_path / "records", reserve=True, wait_s=60)
            report = run.run()
            assert report.tested == ["gpu01"] and report.findings == [] and report.exit_status == 0, said
            assert "allocated$" in states and "maint" in states, states
            assert harness.parse_oneliner(ctld.scontrol("-o", "show", "job", user.stdout.strip()))[0][
                "JobState"] == "COMPLETED"
            assert [r["value"] for r in records.read(tmp_path / "records", "gpu01")] == [478.5]
            assert "No reservations in the system" in ctld.run("scontrol", "show", "reservation").stdout
