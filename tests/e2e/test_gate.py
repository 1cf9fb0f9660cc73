"""End to end: the admission gate on the running test cluster. The test turns admission on in the inventory
(CLUSTERFORGE_TESTBED_ADMISSION=on, which the other e2e tests run without), makes gpu02 a new node (its slurmd never
ran since, no record), and the deploy holds it before its slurmd starts; the gate tests it with Slurm jobs in its
reservation and drains it with the number its stand-in all_reduce_perf gives (300 GB/s < 460), while a job that asks
for it waits; an admin's drain on a held node keeps its reason and gets no gate job; once the admins resume them,
both are tested again, pass and are released, and the waiting job runs. The test turns admission off again at the
end, which stops the gate and deletes any hold it left.

What is not real here, and why: the machines have no GPU and no HCA, so the tests' programs are the testbed's
stand-ins (testbed/accept/), printing the real tools' formats with the figures a test sets per node in
/home/.clusterforge-testbed/accept.json. Slurm's reservations, jobs and drains are real.

A node drained for a hardware Xid (a kernel record, as in test_health.py) and rebooted through Slurm comes back held
by its own health check in cf-gate-repaired-<node>, at the first check of its new boot, and is released by the gate
once it passes. Every test here shares the one deploy that turns admission on (gate_on), and the one that turns it
off after them.

gpu01, drained by an admin for an RMA and reimaged (none of the records an earlier deploy leaves, its slurmd never
started since: what an RMA'd board back from a fresh install looks like to the deploy), is held by the next deploy
as repaired, though the controller admitted it before; the admin's drain is left as it is until they resume it.

Issue 46, the gate's boundary: a job user cannot give the gate its verdict, make root write a file of root's, or
stall the gate's passes through the files she can plant on a node (plants.py: alice, a declared person with no sudo,
plants a link to a file of root's, a FIFO or a healthy node's ib_write_bw table at each name the gate's outputs had,
for the next job ids; and tries the gate's own directory). gpu02, its HCA mlx5_4 slow (190 Gb/s, which perftest
reports with exit 0), is then held as repaired: it is drained with the slow HCA's number, root wrote through none of
her files, and the gate answered within its passes. Then the partition gpu02 is in is cut to a 1-minute MaxTime (an
admin's change on the cluster): the resumed node is drained ``cf:gate:cannot run: ...`` with the limit named, `check`
names it and Prometheus fires GateCannotRun (tests/realslurm/test_gate_boundary.py runs both refusal paths on the
real slurmctld).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
import urllib.request

import pytest
from e2e.plants import AHEAD, CANARY, GPU02, HCAS, LOGIN, PARTITION, PLANT, RUNS, SLOW, TEXT
from e2e.test_health import CONTROL, XID79, check_now, kernel_record
from e2e.test_monitoring import eventually, query
from e2e.testbed import MACHINES, REPO, STATE, Testbed

from clusterforge.engine.state import APPLIED_DIR
from clusterforge.slurm import reservations
from clusterforge.model.settings import SLURM_EXPORTER_PORT

pytestmark = pytest.mark.e2e

CTL = MACHINES["ctl"]
NODES = ("gpu01", "gpu02")
RESULTS = STATE / "home" / ".clusterforge-testbed" / "accept.json"  # the shared /home, seen from this machine
GATE_DIR = "/var/lib/clusterforge/gate"
ADMIN = "e2e: RMA fan, ticket 4711"


def deploy(bed: Testbed, admission: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / ".venv" / "bin" / "pyinfra"), "-y", str(bed.inventory),
                           str(REPO / "deploy" / "cluster.py")], cwd=REPO, text=True, capture_output=True,
                          env=bed.env(CLUSTERFORGE_TESTBED_ADMISSION=admission,
                                      CLUSTERFORGE_TESTBED_REPAIR="observe" if admission == "on" else "off"),
                          timeout=1800)


def check(bed: Testbed, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / ".venv" / "bin" / "clusterforge"), "check", str(bed.inventory), *args],
                          cwd=REPO, env=bed.env(CLUSTERFORGE_TESTBED_ADMISSION="on"), text=True, capture_output=True,
                          timeout=600)


def holds(bed: Testbed) -> dict[str, str]:
    return reservations.held(reservations.parse_reservations(bed.run(CTL, "scontrol -o show reservation")))


def node(bed: Testbed, name: str) -> tuple[str, str]:
    state, _, reason = bed.run(CTL, f"sinfo --noheader --Node --nodes={name} --format='%T|%E' | head -n 1") \
        .strip().partition("|")
    return state, "" if reason == "none" else reason


def admitted(bed: Testbed, name: str) -> dict:
    return json.loads(bed.run(CTL, f"cat {GATE_DIR}/admitted/{name}"))


def job_state(bed: Testbed, job: str) -> str:
    return bed.run(CTL, f"scontrol -o show job {job} | grep -o 'JobState=[A-Z_]*' | cut -d= -f2").strip()


def exported() -> str:
    with urllib.request.urlopen(f"http://{CTL}:{SLURM_EXPORTER_PORT}/metrics", timeout=20) as answer:
        return answer.read().decode()


def wait_for(what: str, test, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not test():
        assert time.monotonic() < deadline, f"not {what} within {timeout:g} s"
        time.sleep(2)


@pytest.fixture(scope="module")
def gate_on(testbed):
    """Admission turned on over the running cluster once for this module's tests (the deploy's result given to the
    first test), and off again after them: that stops the gate and deletes any hold it left."""
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("{}")
    # A cluster that never had admission (an earlier run on a cluster kept up leaves the gate's records).
    testbed.run(CTL, f"rm -rf {GATE_DIR}/admitted {GATE_DIR}/records {GATE_DIR}/held")
    # Nor repair's attempts (an earlier run's count toward this one's budget, as they should on a real cluster).
    testbed.run(CTL, "rm -rf /var/lib/clusterforge/repair")
    for name in NODES:
        testbed.run(MACHINES[name], f"rm -rf {GATE_DIR}/holds")
    try:
        yield deploy(testbed, "on")
    finally:
        RESULTS.unlink(missing_ok=True)
        testbed.run(CTL, "for r in $(scontrol -o show reservation | grep -o '^ReservationName=cf-gate-[^ ]*' | "
                         "cut -d= -f2); do scancel --reservation=$r; done; scancel --name=e2e-waits; sleep 5; true")
        off = deploy(testbed, "off")  # stops the gate, deletes its holds
        for name in NODES:
            if node(testbed, name)[1].startswith(("cf:gate:", "e2e:")):
                testbed.run(CTL, f"scontrol update NodeName={name} State=RESUME")
        assert off.returncode == 0, off.stdout[-6000:] + off.stderr[-2000:]
    assert holds(testbed) == {}
    assert testbed.run(CTL, "systemctl is-active clusterforge-gate || true").strip() != "active"
    assert testbed.run(CTL, "systemctl is-active clusterforge-repair || true").strip() != "active"


def test_a_new_node_is_held_until_it_passes_a_slow_one_stays_drained_and_an_admins_drain_survives(testbed, gate_on):
    RESULTS.write_text(json.dumps({"gpu02": {"allreduce": 300}}))
    try:
        on = gate_on
        assert on.returncode == 0, on.stdout[-6000:] + on.stderr[-2000:]
        # In service when admission is turned on: recorded, not taken out of service to be tested.
        assert holds(testbed) == {}
        for name in NODES:
            assert admitted(testbed, name) == {"how": "in service before the gate", "node": name}
        assert testbed.run(CTL, "systemctl is-active clusterforge-gate").strip() == "active"

        # gpu02 made a new node: its slurmd has not run since, the controller has no record of it. gpu01 drained
        # by an admin for an RMA, and back reimaged: no record of any deploy, its slurmd not started since.
        testbed.run(MACHINES["gpu02"], f"systemctl stop slurmd; rm -f {GATE_DIR}/holds/gpu02")
        testbed.run(CTL, f"rm -f {GATE_DIR}/admitted/gpu02")
        drained_at = testbed.run(CTL, "date +%Y-%m-%dT%H:%M:%S").strip()
        testbed.run(CTL, f"scontrol update NodeName=gpu01 State=DRAIN Reason={shlex.quote(ADMIN)}")
        testbed.run(MACHINES["gpu01"], f"systemctl stop slurmd; rm -rf {APPLIED_DIR} {GATE_DIR}/holds")
        grown = deploy(testbed, "on")
        assert grown.returncode == 0, grown.stdout[-6000:] + grown.stderr[-2000:]
        assert holds(testbed) == {"gpu02": "new", "gpu01": "repaired"}
        # A user's job for it, once it is held (one Slurm placed on the node before its hold would run there).
        waiting = testbed.run(CTL, "sbatch --parsable --nodelist=gpu02 --job-name=e2e-waits --output=/dev/null "
                                   "--wrap=true").strip()
        said = check(testbed, "--limit", "gpu02")
        assert said.returncode == 1, said.stdout + said.stderr
        assert "held by the admission gate: cf:gate:new, reservation cf-gate-new-gpu02; clusterforge's" in said.stdout

        # Its all_reduce gives 300 GB/s: drained with the number, still held; the job that asked for it waits.
        wait_for("gpu02 drained by the gate", lambda: node(testbed, "gpu02")[1].startswith("cf:gate:"))
        assert node(testbed, "gpu02")[1].startswith("cf:gate:allreduce 300 GB/s < 460"), node(testbed, "gpu02")
        assert holds(testbed) == {"gpu02": "new", "gpu01": "repaired"}
        assert job_state(testbed, waiting) == "PENDING"
        records = [json.loads(line) for line in testbed.run(CTL, f"cat {GATE_DIR}/records/gpu02.jsonl").split("\n")
                   if line.strip()]
        assert {(r["test"], r["passed"], r["source"]) for r in records} >= {("allreduce", False, "gate")}
        assert [r["value"] for r in records if r["test"] == "allreduce"] == [300]

        # gpu01's admin drain, on the node held as repaired: theirs, left as it is, no gate job.
        repaired = reservations.name(reservations.REPAIRED, "gpu01")
        time.sleep(15)  # three of the gate's passes
        assert node(testbed, "gpu01")[1] == ADMIN
        # No job of the gate's on gpu01 since the admin's drain (the accounting's: squeue --states=all would show
        # an earlier run's on a cluster kept up).
        assert "cf-gate:" not in testbed.run(CTL, "sacct --noheader --allocations --nodelist=gpu01 "
                                                  f"--starttime={drained_at} --format=JobName%60")

        # Both resumed by their admins (gpu02's all_reduce repaired): tested again, passed, released.
        RESULTS.write_text("{}")
        testbed.run(CTL, "scontrol update NodeName=gpu02 State=RESUME; scontrol update NodeName=gpu01 State=RESUME")
        wait_for("both released", lambda: holds(testbed) == {}, timeout=900)
        assert admitted(testbed, "gpu02")["how"] == "passed"
        assert admitted(testbed, "gpu01") == {"how": "passed", "node": "gpu01", "reservation": repaired,
                                              "time": admitted(testbed, "gpu01")["time"]}
        wait_for("the waiting job run", lambda: job_state(testbed, waiting) == "COMPLETED", timeout=300)
        # The Slurm exporter (as nobody) reads the gate's records: gpu02's all_reduce, its last (passing) number
        # and its baseline, the first that passed.
        metrics = exported()
        for family in ("slurm_node_test_last", "slurm_node_test_baseline"):
            found = [float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                     if line.startswith(family + "{") and 'node="gpu02"' in line and 'test="allreduce"' in line]
            assert len(found) == 1 and found[0] >= 460, (family, found, metrics[-3000:])
        for name in NODES:
            assert "drain" not in node(testbed, name)[0], node(testbed, name)
    finally:
        RESULTS.write_text("{}")
        testbed.run(CTL, "scancel --name=e2e-waits; true")


EVIDENCE = "/var/lib/clusterforge/evidence"
SLURMD_LOG = "/var/log/slurm/slurmd.log"


def boot_time(bed: Testbed, name: str) -> str:
    return re.search(r"BootTime=(\S+)", bed.run(CTL, f"scontrol show node {name}")).group(1)


def test_a_node_drained_for_a_hardware_xid_is_held_after_its_reboot_until_it_passes_again(testbed, gate_on):
    gpu01 = MACHINES["gpu01"]
    before = admitted(testbed, "gpu01")["time"]  # the first test's admission of gpu01
    testbed.run(gpu01, f"rm -rf {EVIDENCE}")
    waiting, logged = "", 0
    try:
        # A GPU falls off the bus: the health check (run now, as slurmd runs it) drains gpu01 for hardware.
        kernel_record(testbed, "gpu01", XID79)
        check_now(testbed, "gpu01")
        assert node(testbed, "gpu01")[1].startswith("cf:gpu:xid79 gpu3 0000:5d:00"), node(testbed, "gpu01")
        # Meanwhile an admin drains the other node, and a job asks for gpu01: it waits for the drain.
        testbed.run(CTL, f"scontrol update NodeName=gpu02 State=DRAIN Reason={shlex.quote(ADMIN)}")
        waiting = testbed.run(CTL, "sbatch --parsable --nodelist=gpu01 --job-name=e2e-waits --output=/dev/null "
                                   "--wrap=true").strip()
        # Rebooted as an admin or the roll reboots it, through Slurm (RebootProgram: clusterforge's wrapper, then
        # testbed/reboot, a new boot). Never in the second of the node's last boot (testbed/reboot says why).
        boot = boot_time(testbed, "gpu01")
        while testbed.run(CTL, "date +%Y-%m-%dT%H:%M:%S").strip() <= boot:
            time.sleep(0.2)
        logged = int(testbed.run(gpu01, f"wc -l < {SLURMD_LOG}").strip())
        # Its all_reduce waits 20 s before its table (well inside its bound, then healthy): the gate's tests are
        # still running, and the node still held, while check looks below (a few seconds), however fast the gate is.
        RESULTS.write_text(json.dumps({"gpu01": {"hang": 20}}))
        testbed.run(CTL, "scontrol reboot ASAP nextstate=resume gpu01")
        # The check at slurmd's start, before the node registers, holds it: no hand of the test's made this one.
        wait_for("gpu01 held as repaired", lambda: holds(testbed) == {"gpu01": "repaired"}, timeout=120)
        said = check(testbed, "--limit", "gpu01")
        assert said.returncode == 1, said.stdout + said.stderr
        assert ("held by the admission gate: cf:gate:repaired, reservation cf-gate-repaired-gpu01; clusterforge's"
                in said.stdout), said.stdout
        assert job_state(testbed, waiting) == "PENDING"
        # The evidence of the Xid was kept before the reboot emptied the boot's kernel records.
        [kept] = testbed.run(gpu01, f"ls {EVIDENCE}").split()
        assert re.fullmatch(r"\d{8}T\d{6}Z-xid79-gpu3-reboot", kept), kept
        assert XID79 in testbed.run(gpu01, f"cat {EVIDENCE}/{kept}/kernel-records.log")

        # The gate tests it in its hold (healthy stand-ins), it passes, the hold goes and the job runs.
        wait_for("gpu01 released", lambda: holds(testbed) == {}, timeout=600)
        record = admitted(testbed, "gpu01")
        assert record["how"] == "passed" and record["reservation"] == "cf-gate-repaired-gpu01", record
        assert record["time"] > before, (record, before)
        wait_for("the waiting job run", lambda: job_state(testbed, waiting) == "COMPLETED", timeout=300)
        assert "drain" not in node(testbed, "gpu01")[0], node(testbed, "gpu01")
        # Back in a new boot, the check holds no fault any more; the admin's drain was never touched.
        assert "keep gpu01" not in check_now(testbed, "gpu01")
        assert node(testbed, "gpu02") == ("drained", ADMIN), node(testbed, "gpu02")
    finally:
        # For a failure's report: what slurmd said since the reboot (its health checks' output, where one failed).
        print(testbed.run(gpu01, f"tail -n +{logged + 1} {SLURMD_LOG} | tail -n 40; true"))
        RESULTS.write_text("{}")
        testbed.run(CTL, "scancel --name=e2e-waits; scontrol update NodeName=gpu02 State=RESUME; true")
        testbed.run(gpu01, f"rm -rf {EVIDENCE}")


def gate_said(bed: Testbed, since: str) -> str:
    return bed.run(CTL, f"journalctl -u clusterforge-gate --no-pager -o cat --since {shlex.quote(since)}; true")


def test_planted_outputs_give_the_gate_no_verdict_and_a_test_that_cannot_run_drains_and_alerts(testbed, gate_on):
    assert gate_on.returncode == 0, gate_on.stdout[-6000:] + gate_on.stderr[-2000:]
    testbed.run(GPU02, f"printf %s {shlex.quote(TEXT)} > {CANARY}; chmod 0644 {CANARY}")
    canary = testbed.run(GPU02, f"sha256sum {CANARY}")
    hold = reservations.name(reservations.REPAIRED, "gpu02")
    since = testbed.run(CTL, "date '+%Y-%m-%d %H:%M:%S'").strip()
    try:
        planted = testbed.run(LOGIN, "cd /tmp && runuser -u alice -- srun --nodes=1 --nodelist=gpu02 --ntasks=1 "
                                     f"--time=5 sh -c {shlex.quote(PLANT)}", timeout=300)
        assert "PLANTED" not in planted and "LISTED" not in planted, planted
        assert [line.split()[-1] for line in planted.splitlines() if line.startswith("planted ")] == ["gpu02"]
        assert int(next(line.split()[1] for line in planted.splitlines() if line.startswith("planted "))) >= AHEAD
        healthy = testbed.run(GPU02, "cat /home/alice/.cf-healthy-ib")
        assert healthy.count(" exit 0") == len(HCAS) and "392.77" in healthy, healthy  # a table that would pass

        # gpu02's mlx5_4 slow; held as repaired (as its health check holds it after a hardware drain's reboot).
        RESULTS.write_text(json.dumps({"gpu02": {"hca": {"mlx5_4": 190}}}))
        testbed.run(CTL, shlex.join(reservations.create_argv(hold, "gpu02")))
        started = time.monotonic()
        wait_for("gpu02 drained by the gate", lambda: node(testbed, "gpu02")[1].startswith("cf:gate:"), timeout=300)
        took = time.monotonic() - started
        assert node(testbed, "gpu02")[1].startswith(SLOW), node(testbed, "gpu02")
        said = gate_said(testbed, since)
        # No read waited on a FIFO (150 s each, a pass at a time), none ran again for want of an output.
        assert "could not be read" not in said and "foreign output" not in said and "no output" not in said, \
            said[-3000:]
        assert took < 240, (took, said[-3000:])
        # Root wrote nothing through her links, and nothing into her files; its own directory is root's alone.
        assert testbed.run(GPU02, f"sha256sum {CANARY}") == canary
        changed = testbed.run(GPU02, "for f in /tmp/cf-gate-*.out /var/tmp/cf-gate-*.out; do "
                                     '[ -f "$f" ] && [ ! -L "$f" ] && ! cmp -s "$f" /home/alice/.cf-healthy-ib '
                                     '&& echo "$f"; done; true')
        assert changed.strip() == "", changed
        assert testbed.run(GPU02, f"stat -c '%U %a' {RUNS} {RUNS}/gpu02").split() == ["root", "700", "root", "700"]

        # The partition cut to a minute on the cluster: a gate test asks two at least. Resumed, gpu02 is drained
        # cannot run at the next pass, with the limit; check and the monitoring show it.
        RESULTS.write_text("{}")
        testbed.run(CTL, f"scontrol update PartitionName={PARTITION} MaxTime=1; "
                         "scontrol update NodeName=gpu02 State=RESUME")
        wait_for("gpu02 drained cannot run", lambda: node(testbed, "gpu02")[1].startswith("cf:gate:cannot run"),
                 timeout=120)
        assert f"TimeLimit {PARTITION} 1 min" in node(testbed, "gpu02")[1], node(testbed, "gpu02")
        said = check(testbed, "--limit", "gpu02")
        assert "cf:gate:cannot run: " in said.stdout and "held by the admission gate: cf:gate:repaired" \
            in said.stdout, said.stdout
        eventually("GateCannotRun firing for gpu02", lambda: query(
            'ALERTS{alertname="GateCannotRun",alertstate="firing",node="gpu02"}'), 180)
    finally:
        RESULTS.write_text("{}")
        testbed.run(CTL, f"scontrol update PartitionName={PARTITION} MaxTime=01:00:00; "
                         f"scancel --reservation={hold}; sleep 2; "
                         f"scontrol delete ReservationName={hold}; true")
        if node(testbed, "gpu02")[1].startswith("cf:gate:"):
            testbed.run(CTL, "scontrol update NodeName=gpu02 State=RESUME")
        testbed.run(GPU02, f"rm -f {CANARY} /home/alice/.cf-healthy-ib; "
                           "find /tmp /var/tmp -maxdepth 1 -name 'cf-gate-*.out' -user alice -delete; true")


REPAIR_PLAN = "/etc/clusterforge/repair.json"


def repair_mode(bed: Testbed, mode: str) -> None:
    """The plan's mode for the test cluster's profile, as a deploy with Repair(mode=...) would write it: the loop
    reads the plan at every pass."""
    bed.run(CTL, "python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); "
                 "[v.update(mode=sys.argv[2]) for v in p[\"profiles\"].values()]; "
                 "open(sys.argv[1], \"w\").write(json.dumps(p, sort_keys=True, indent=1) + \"\\n\")' "
                 f"{REPAIR_PLAN} {mode}")


def test_a_reboot_class_fault_returns_to_service_with_no_command_typed(testbed, gate_on):
    """Issue 48: Repair(mode="observe") (the gate module's deploy) says what it would do and does nothing; turned on,
    a node with a job running that faults with a reboot-class Xid is rebooted through Slurm once the job has ended
    (never killed), comes back held by its check, passes the gate and takes jobs again, with no command typed. The
    time from the fault to service is printed."""
    gpu01 = MACHINES["gpu01"]
    assert testbed.run(CTL, "systemctl is-active clusterforge-repair").strip() == "active"
    job = ""
    try:
        job = testbed.run(CTL, "sbatch --parsable --nodelist=gpu01 --job-name=e2e-repair --output=/dev/null "
                               "--wrap='sleep 45'").strip()
        wait_for("the job running", lambda: job_state(testbed, job) == "RUNNING", timeout=120)
        since = testbed.run(CTL, "date +%s").strip()
        kernel_record(testbed, "gpu01", XID79)
        check_now(testbed, "gpu01")
        fault = time.monotonic()
        assert node(testbed, "gpu01")[1].startswith("cf:gpu:xid79 gpu3 0000:5d:00"), node(testbed, "gpu01")
        # Observed: said (since this fault), and nothing done.
        wait_for("observe mode's line", lambda: "gpu01: would reboot (observe mode): cf:gpu:xid79" in testbed.run(
            CTL, f"journalctl -u clusterforge-repair --no-pager --since @{since}"), timeout=60)
        assert node(testbed, "gpu01")[1].startswith("cf:gpu:xid79"), node(testbed, "gpu01")
        repair_mode(testbed, "on")
        wait_for("the loop's reboot asked", lambda: node(testbed, "gpu01")[1].startswith(
            "cf:repair:reboot xid79 (attempt 1 of 2)"), timeout=60)
        acted = time.monotonic()
        assert job_state(testbed, job) == "RUNNING"
        wait_for("the job's end", lambda: job_state(testbed, job) == "COMPLETED", timeout=120)
        wait_for("gpu01 back, held by its check for the gate", lambda: holds(testbed) == {"gpu01": "repaired"},
                 timeout=300)
        wait_for("gpu01 released by the gate", lambda: holds(testbed) == {}, timeout=600)
        wait_for("gpu01 in service", lambda: node(testbed, "gpu01") == ("idle", ""), timeout=120)
        service = time.monotonic()
        wait_for("the repair ended", lambda: "gpu01: back in service" in testbed.run(
            CTL, "clusterforge-repair --status"), timeout=60)
        print(f"fault to action {acted - fault:.0f} s, to service {service - fault:.0f} s (the job ran 45 s of it)")
        ran = testbed.run(CTL, f"scontrol -o show job {job}")
        assert "ExitCode=0:0" in ran, ran
        took = testbed.run(CTL, "sbatch --parsable --wait --nodelist=gpu01 --output=/dev/null --wrap=true; "
                                "echo $?").split()[-1]
        assert took == "0"
        metrics = testbed.run(CTL, "cat /var/lib/prometheus/node-exporter/clusterforge_repair.prom 2>/dev/null; true")
        assert not metrics or 'outcome="back"' in metrics, metrics
    finally:
        repair_mode(testbed, "observe")
        testbed.run(CTL, f"scancel {job} 2>/dev/null; true" if job else "true")
        print(testbed.run(CTL, "journalctl -u clusterforge-repair --no-pager -n 40; true"))


XID48 = ("NVRM: Xid (PCI:0000:5d:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) "
         "has been detected on GPU in the framebuffer at partition 0, subpartition 0.")


def test_a_reset_class_fault_resets_only_that_gpu_while_the_nodes_other_job_runs(testbed, gate_on):
    """Issue 48: a reset-class Xid on gpu3 of gpu01, while a job holds gpu0 there: the loop asks the node's check for
    the reset through the node's reason (Slurm shows gpu3 free), the check resets that GPU alone (the testbed's
    nvidia-smi logs each reset), holds the node for the gate, and the gate admits it once the job has ended; the job
    was never stopped."""
    gpu01 = MACHINES["gpu01"]
    job = ""
    testbed.run(gpu01, f"rm -f {CONTROL}/resets")
    try:
        job = testbed.run(CTL, "sbatch --parsable --nodelist=gpu01 --gres=gpu:1 --job-name=e2e-repair --output="
                               "/dev/null --wrap='sleep 60'").strip()
        wait_for("the job running", lambda: job_state(testbed, job) == "RUNNING", timeout=120)
        repair_mode(testbed, "on")
        kernel_record(testbed, "gpu01", XID48)
        check_now(testbed, "gpu01")
        fault = time.monotonic()
        wait_for("the reset asked", lambda: node(testbed, "gpu01")[1].startswith(
            "cf:repair:reset gpu3 0000:5d:00 xid48 (attempt 1 of 2)"), timeout=60)
        check_now(testbed, "gpu01")    # as slurmd runs it every interval: it starts the asked reset
        wait_for("gpu3 reset", lambda: testbed.run(gpu01, f"cat {CONTROL}/resets 2>/dev/null; true").split() ==
                 ["00000000:5D:00.0"], timeout=120)
        assert job_state(testbed, job) == "RUNNING"
        wait_for("gpu01 held for the gate", lambda: holds(testbed) == {"gpu01": "repaired"}, timeout=120)
        wait_for("the job's end", lambda: job_state(testbed, job) == "COMPLETED", timeout=120)
        wait_for("gpu01 released by the gate", lambda: holds(testbed) == {}, timeout=600)
        wait_for("the repair ended", lambda: "gpu01: back in service" in testbed.run(
            CTL, "clusterforge-repair --status").split("last ended:")[-1].splitlines()[-1], timeout=120)
        print(f"reset class: fault to service {time.monotonic() - fault:.0f} s (a 60 s job on another GPU ran on)")
        assert "ExitCode=0:0" in testbed.run(CTL, f"scontrol -o show job {job}")
        assert testbed.run(gpu01, f"cat {CONTROL}/resets").split() == ["00000000:5D:00.0"]
    finally:
        repair_mode(testbed, "observe")
        testbed.run(CTL, f"scancel {job} 2>/dev/null; true" if job else "true")
        testbed.run(gpu01, f"rm -f {CONTROL}/resets")
        print(testbed.run(CTL, "journalctl -u clusterforge-repair --no-pager -n 30; true"))
