"""End to end: `clusterforge roll --reboot` on the running test cluster, jobs running: one node out at a time, every
job let finish, an admin's drain kept, a node back sick stops the roll, and a roll killed with SIGKILL is continued
by the next.

What is not real here, and why: a container cannot reboot its kernel, so the test inventory's RebootProgram
(testbed/reboot) restarts slurmd counting its uptime from that start (slurmd -b), and the machines' boot id does not
change; what shows that a node rebooted is Slurm's own view, the node's BootTime, which moves by more than a second
only where slurmctld counted a boot.
"""

from __future__ import annotations

import re
import signal
import subprocess
import threading
import time
from datetime import datetime, timedelta

import pytest
from e2e.test_health import CONTROL, check_now, sinfo, wait_for
from e2e.testbed import MACHINES, REPO, Testbed

pytestmark = pytest.mark.e2e

CTL = MACHINES["ctl"]
NODES = ("gpu01", "gpu02")
JITTER = timedelta(seconds=1)
OUT = re.compile(r"drain|down|reboot|fail|maint|[*~#!%$@^]$")


def roll(bed: Testbed, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(REPO / ".venv" / "bin" / "clusterforge"), "roll", *args,
                             str(bed.inventory)], cwd=REPO, env=bed.env(), text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


def boot_times(bed: Testbed) -> dict[str, datetime]:
    """Each node's boot as slurmctld counts it. Until a node registers with a slurmctld just restarted (an earlier
    test's deploy restarts it) its BootTime is None (seen in CI): wait for both."""
    deadline = time.monotonic() + 60
    while True:
        out = bed.run(CTL, "scontrol show node -o gpu[01-02]")
        found = dict(re.findall(r"NodeName=(\S+).*?BootTime=(\S+)", out))
        if len(found) == len(NODES) and "None" not in found.values():
            return {node: datetime.fromisoformat(boot) for node, boot in found.items()}
        assert time.monotonic() < deadline, f"a node with no boot time in slurmctld:\n{out}"
        time.sleep(1)


def booted(before: dict[str, datetime], after: dict[str, datetime]) -> set[str]:
    """The nodes Slurm counted a boot of between the two readings. slurmctld recomputes a node's BootTime at each
    registration as its clock's whole second less the uptime slurmd reports in whole seconds, so a node that did not
    boot but registered again (a deploy reconfigures) can move by a second either way (seen in CI: 13:49:01 then
    13:49:02, no reboot); a reboot here comes 3 s or more after the request."""
    return {node for node in before if after[node] - before[node] > JITTER}


def submit(bed: Testbed, options: str, seconds: int) -> str:
    return bed.run(CTL, f"sbatch --parsable {options} --wrap 'sleep {seconds}'").strip().split(";")[0]


def submit_running(bed: Testbed, options: str, seconds: int) -> str:
    """A job that runs when this returns: squeue lists a pending job on no node, so a roll would not wait for it."""
    job = submit(bed, options, seconds)
    bed.run(CTL, f"until [ \"$(squeue --noheader --jobs={job} --format=%T)\" = RUNNING ]; do sleep 1; done", 60)
    return job


def states(bed: Testbed, jobs: list[str]) -> set[str]:
    out = bed.run(CTL, f"sacct --noheader -X --parsable2 --duplicates --jobs={','.join(jobs)} --format=State")
    return set(out.split())


class Watched:
    """A roll's output, read as it comes (a thread), and the most nodes sinfo showed out of service at once."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process, self.lines, self.most = process, [], 0
        self.at_most: dict[str, tuple[str, str]] = {}  # sinfo when the most were out, and what the roll had said
        threading.Thread(target=lambda: self.lines.extend(iter(process.stdout.readline, "")), daemon=True).start()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def until(self, bed: Testbed, done=None) -> str:
        """Polls sinfo every second until the roll exits, or ``done(output so far)`` holds; the output."""
        deadline = time.monotonic() + 600
        while self.process.poll() is None and not (done and done(self.output)):
            assert time.monotonic() < deadline, self.output
            nodes = sinfo(bed)
            out = sum(bool(OUT.search(state)) for state, _ in nodes.values())
            if out > self.most:
                self.most, self.at_most = out, {**nodes, "roll so far": ("", self.output[-300:])}
            time.sleep(1)
        if self.process.poll() is not None:
            time.sleep(0.5)  # the reader's last lines
        return self.output


@pytest.fixture
def undrained(testbed):
    yield testbed
    for node in NODES:
        testbed.run(MACHINES[node], f"rm -f {CONTROL}/gpus-gone")
        check_now(testbed, node)
    testbed.run(CTL, "for n in gpu01 gpu02; do scontrol update nodename=$n state=undrain 2>/dev/null; done; true")
    wait_for(testbed, "nodes back", lambda nodes: all(nodes[n][0] in ("idle", "mixed") for n in NODES))


def test_one_node_out_at_a_time_every_job_completes_and_each_node_boots(undrained):
    bed = undrained
    before = boot_times(bed)
    jobs = [submit(bed, "--nodelist=gpu01", 25), submit(bed, "--nodelist=gpu02", 25), submit(bed, "--array=1-4", 10)]
    process = roll(bed, "--reboot", "--batch", "1", "--wait", "300")
    watched = Watched(process)
    output = watched.until(bed)
    assert process.returncode == 0, output
    assert watched.most <= 1, watched.at_most
    assert "batch 1/2 gpu01: drained ('cf:roll:reboot batch 1/2')" in output and "rolled 2 nodes" in output
    assert "batch 2/2 gpu02: back in service, healthy" in output
    bed.run(CTL, "until [ -z \"$(squeue --noheader)\" ]; do sleep 1; done", 120)
    assert states(bed, jobs) == {"COMPLETED"}, output
    after = boot_times(bed)
    assert booted(before, after) == set(NODES), (before, after)
    assert all(not reason for _, reason in sinfo(bed).values())


def test_a_roll_killed_in_the_middle_is_continued_by_the_next(undrained):
    bed = undrained
    job = submit_running(bed, "--nodelist=gpu02", 20)
    process = roll(bed, "--reboot", "--batch", "1", "--wait", "300", "--limit", "gpu02")
    output = Watched(process).until(bed, lambda out: "waiting for 1 job" in out)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert sinfo(bed)["gpu02"][1] == "cf:roll:reboot batch 1/1", output
    again = roll(bed, "--reboot", "--batch", "1", "--wait", "300")
    watched = Watched(again)
    output = watched.until(bed)
    assert again.returncode == 0, output
    assert "continuing an earlier roll: gpu02 (drained for it)" in output
    assert output.index("batch 1/2 gpu02") < output.index("batch 2/2 gpu01") and watched.most <= 1
    assert states(bed, [job]) == {"COMPLETED"}
    assert not any(reason.startswith("cf:") for _, reason in sinfo(bed).values())


def test_an_admins_drain_is_kept_and_a_node_back_sick_stops_the_roll_left_drained(undrained):
    bed = undrained
    bed.run(CTL, "scontrol update nodename=gpu02 state=drain reason='admin: fan'")
    before = boot_times(bed)
    job = submit_running(bed, "--nodelist=gpu01", 20)
    process = roll(bed, "--reboot")
    watched = Watched(process)
    watched.until(bed, lambda out: "waiting for 1 job" in out)
    # A GPU goes while the roll waits for the job: the periodic check leaves a node drained by anyone else, so
    # only the check after the reboot finds it.
    bed.run(MACHINES["gpu01"], f"mkdir -p {CONTROL}; echo 2 > {CONTROL}/gpus-gone")
    output = watched.until(bed)
    assert process.returncode == 1, output
    assert "already out of service: gpu02 (drained, 'admin: fan'): skipped" in output
    assert "gpu01: it came back drained" in output or "gpu01: it failed its health check" in output, output
    assert "cf:gpu:missing gpu2" in output
    nodes = sinfo(bed)
    assert nodes["gpu01"][1].startswith("cf:gpu:missing gpu2") and nodes["gpu02"][1] == "admin: fan"
    assert booted(before, boot_times(bed)) == {"gpu01"}
    assert states(bed, [job]) == {"COMPLETED"}


def rolling_past_a_job(bed: Testbed, node: str, *args: str) -> tuple[dict[str, datetime], str, Watched]:
    """The nodes' boot times, a 15 s job running on ``node``, and a roll started with ``args``, watched."""
    before = boot_times(bed)
    job = submit_running(bed, f"--nodelist={node}", 15)
    return before, job, Watched(roll(bed, *args))


def test_a_node_an_admin_drains_after_the_roll_planned_it_is_left_as_it_is_never_rebooted(undrained):
    bed = undrained
    before, job, watched = rolling_past_a_job(bed, "gpu01", "--reboot", "--batch", "1", "--wait", "300")
    process = watched.process
    watched.until(bed, lambda out: "waiting for 1 job" in out)
    # The roll has planned gpu02 for its second batch; the admin takes it first.
    bed.run(CTL, "scontrol update nodename=gpu02 state=drain reason='admin: fan'")
    output = watched.until(bed)
    assert process.returncode == 0, output
    assert "batch 2/2 gpu02: gpu02 left as it is: held by another (drained admin: fan), not rolled" in output
    assert "rolled 1 node" in output
    assert sinfo(bed)["gpu02"][1] == "admin: fan"
    assert booted(before, boot_times(bed)) == {"gpu01"}
    assert states(bed, [job]) == {"COMPLETED"}


def test_apply_deploys_to_each_drained_idle_batch_and_resumes_it_without_a_reboot(undrained):
    bed = undrained
    before, job, watched = rolling_past_a_job(bed, "gpu02", "--apply", "--batch", "2", "--wait", "300")
    process = watched.process
    output = watched.until(bed)
    assert process.returncode == 0, output
    assert "batch 1/1 gpu[01-02]: drained ('cf:roll:apply batch 1/1')" in output
    assert output.index("waiting for 1 job") < output.index("deploying to it") < output.index("back in service")
    assert states(bed, [job]) == {"COMPLETED"} and booted(before, boot_times(bed)) == set()
    assert all(not reason for _, reason in sinfo(bed).values())


def test_services_go_in_slurms_order_around_the_batches_the_accounting_database_dumped_first(undrained):
    bed = undrained
    job = submit_running(bed, "--nodelist=gpu02", 15)
    process = roll(bed, "--apply", "--services", "--batch", "1", "--wait", "300")
    watched = Watched(process)
    output = watched.until(bed)
    assert process.returncode == 0, output
    # Each line starts with the time it was said: "2026-11-25 14:14:35+0000 ctl (...): ..."
    dumped = re.search(r"^[\d-]+ [\d:+-]+ ctl \(slurmdbd, slurmctld\): slurm_acct_db dumped to (\S+) \(", output,
                       re.MULTILINE)
    assert dumped, output
    steps = [dumped.group(0), "ctl (slurmdbd, slurmctld): deployed", "batch 1/2 gpu01: drained",
             "batch 2/2 gpu02: waiting for 1 job", "batch 2/2 gpu02: back in service", "login1 (login): deploying",
             "login1 (login): deployed", "rolled 2 nodes"]
    assert [output.index(step) for step in steps] == sorted(output.index(step) for step in steps), output
    assert watched.most <= 1, watched.at_most
    assert states(bed, [job]) == {"COMPLETED"}
    # The dump is MariaDB's own, of the live accounting database, readable by root alone.
    path = dumped.group(1)
    assert bed.run(CTL, f"stat -c '%U %a' {path}").split() == ["root", "600"]
    tables = bed.run(CTL, f"gunzip -c {path} | sed -n 's/^CREATE TABLE `\\([a-z_]*\\)`.*/\\1/p'").split()
    assert "acct_table" in tables and "qos_table" in tables and any(t.endswith("_job_table") for t in tables)
    assert not any(reason for _, reason in sinfo(bed).values())
