"""End to end, issue 46: a job user cannot give `clusterforge accept` its verdict, make root write a file of root's, or
stall a round, through the files she can plant on the nodes.

alice (uid 2001, a declared person of inventories/vagrant.py: no sudo, no admin group) runs a job of hers on gpu01
and gpu02 that plants, at every name accept's job outputs had (/tmp/cf-accept-<id>.out, and /var/tmp's, for the next
ids Slurm hands out: they are sequential), a symbolic link to a file of root's under /etc, a FIFO, or a file of hers
holding a healthy node's all_reduce table; and she tries the directory accept writes to now
(/var/lib/clusterforge/accept-runs). Then an admin runs `clusterforge accept` with gpu02 slow. Before the fix root's
job output followed her links into /etc (seen on this test cluster) and a FIFO stalled the read; now gpu02 is still
drained with its number, the file under /etc is as it was, and every round ends.

Needs the test cluster up and deployed (conftest's testbed fixture), alice deployed, the stand-ins bound into the GPU
machines; run with CLUSTERFORGE_E2E=1. One accept run, about as long as test_testbed_accept's slow-node test."""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest
from e2e.plants import at_every_output
from e2e.testbed import MACHINES, REPO, Testbed

pytestmark = pytest.mark.e2e

CTL = MACHINES["ctl"]
LOGIN = MACHINES["login1"]
NODES = ("gpu01", "gpu02")
BIN = "/usr/local/lib/clusterforge-testbed/accept"
RESULTS = "/home/.clusterforge-testbed/accept.json"
CANARY = "/etc/cf-boundary-canary"
TEXT = "root's, not to be written through a link\n"
AHEAD = 300   # job ids planted past her job's own: one accept here submits some 12 jobs
SLOW = "cf:accept:allreduce 300 GB/s < 460"

# Run by alice in her job on each node: the plants, then what she could see or plant in accept's directory.
PLANT = f"""
set -u
SLURMD_NODENAME=gpu01 {BIN}/all_reduce_perf -b 16G -e 16G -g 8 > "$HOME/.cf-healthy-table-$(hostname)" 2>/dev/null
{at_every_output("cf-accept", "/tmp /var/tmp", '"$HOME/.cf-healthy-table-$(hostname)"', CANARY, AHEAD)}
for target in /var/lib/clusterforge/accept-runs/x.out /var/lib/clusterforge/accept-runs/run-x; do
  ln -s {CANARY} "$target" 2>/dev/null && echo "PLANTED $target"
done
ls /var/lib/clusterforge/accept-runs >/dev/null 2>&1 && echo LISTED
echo "planted $(ls /tmp/cf-accept-*.out | wc -l) on $(hostname)"
"""


def accept(bed: Testbed, state: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / ".venv" / "bin" / "clusterforge"), "accept", str(bed.inventory)],
                          cwd=REPO, env=bed.env(CLUSTERFORGE_TESTBED_ADMISSION="on", XDG_STATE_HOME=state),
                          text=True, capture_output=True, timeout=900)


def reason(bed: Testbed, node: str) -> str:
    said = bed.run(CTL, f"sinfo --noheader --Node --nodes={node} --format=%E | head -n 1").strip()
    return "" if said == "none" else said


def test_files_links_and_fifos_alice_plants_at_every_output_name_give_no_verdict_and_touch_nothing_of_roots(
        testbed, tmp_path):
    canary = {}
    for node in NODES:
        testbed.run(MACHINES[node], f"printf %s {shlex.quote(TEXT)} > {CANARY}; chmod 0644 {CANARY}")
        canary[node] = testbed.run(MACHINES[node], f"sha256sum {CANARY}")
    testbed.run(CTL, f"mkdir -p /home/.clusterforge-testbed && printf '%s' "
                     f"{shlex.quote(json.dumps({'gpu02': {'allreduce': 300}}))} > {RESULTS}")
    try:
        planted = testbed.run(LOGIN, "cd /tmp && runuser -u alice -- srun --nodes=2 --nodelist=gpu01,gpu02 "
                                     f"--ntasks-per-node=1 --time=5 sh -c {shlex.quote(PLANT)}", timeout=300)
        assert "PLANTED" not in planted and "LISTED" not in planted, planted
        assert sorted(line.split()[-1] for line in planted.splitlines() if line.startswith("planted ")) == [
            "gpu01", "gpu02"], planted
        assert all(int(line.split()[1]) >= AHEAD for line in planted.splitlines() if line.startswith("planted ")), \
            planted

        done = accept(testbed, str(tmp_path))
        out = done.stdout + done.stderr
        # Every round ended (a FIFO read would have stalled it), and the slow node is found by its own number.
        assert done.returncode == 1, out
        assert f"gpu02 drained: {SLOW!r}" in done.stdout, out
        assert reason(testbed, "gpu02") == SLOW
        assert reason(testbed, "gpu01") == "", out
        assert "output refused" not in out, out
        for node in NODES:
            assert testbed.run(MACHINES[node], f"sha256sum {CANARY}") == canary[node], node
            # Her files hold her table still: root's jobs wrote into none of them.
            changed = testbed.run(MACHINES[node], "for f in /tmp/cf-accept-*.out /var/tmp/cf-accept-*.out; do "
                                                  '[ -f "$f" ] && [ ! -L "$f" ] && ! cmp -s "$f" '
                                                  f'/home/alice/.cf-healthy-table-{node} && echo "$f"; done; true')
            assert changed.strip() == "", (node, changed)
            # The run's directory is gone; its parent is root's alone.
            assert testbed.run(MACHINES[node], "stat -c '%U %a' /var/lib/clusterforge/accept-runs; "
                                               "ls -A /var/lib/clusterforge/accept-runs").split() == ["root", "700"]
    finally:
        testbed.run(CTL, "scontrol update NodeName=gpu02 State=RESUME; true")
        testbed.run(CTL, f"rm -f {RESULTS}")
        for node in NODES:
            testbed.run(MACHINES[node], f"rm -f {CANARY} /home/alice/.cf-healthy-table-*; "
                                        "find /tmp /var/tmp -maxdepth 1 -name 'cf-accept-*.out' -user alice -delete")
