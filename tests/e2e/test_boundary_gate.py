"""End to end, issue 46, the admission gate's side: a job user cannot give the gate its verdict, make root write a
file of root's, or stall the gate's passes through the files she can plant on a node; and a node whose test cannot
run is drained and alerted, never held silently.

alice (uid 2001, a declared person of inventories/vagrant.py: no sudo, no admin group) runs a job of hers on gpu02
that plants, at every name the gate's test outputs had (/var/tmp/cf-gate-<id>.out, and /tmp's, for the next ids
Slurm hands out: they are sequential), a symbolic link to a file of root's under /etc, a FIFO, or a file of hers
holding a healthy node's ib_write_bw output, every HCA's test ending "exit 0"; and she tries the directory the gate
writes to now (/var/lib/clusterforge/gate-runs). Then gpu02, its HCA mlx5_4 slow (190 Gb/s, which perftest reports
with exit 0), is held as repaired and the gate tests it. Before the fix the gate's job output followed her links,
a FIFO stalled each pass's read for 150 s, and a planted table stood for a slow HCA; now gpu02 is drained with the
slow HCA's number, the file under /etc is as it was, her files are hers, and the gate answered within its passes.

Then the partition gpu02 is in is cut to a 1-minute MaxTime (an admin's change on the cluster: the inventory says an
hour): each gate test asks more, so the resumed node is drained ``cf:gate:cannot run: ...`` at the next pass, with
the partition's limit named, `clusterforge check` names it, the Slurm exporter exports it as clusterforge's drain
and Prometheus fires GateCannotRun. (The literal 44-minute test in a 30-minute partition is the same code path:
tests/realslurm/test_gate_boundary.py runs both refusal paths on the real slurmctld with EnforcePartLimits=ALL.)

Shares test_gate.py's deploy with admission on (its gate_on fixture, imported: one deploy on and one off for this
module); needs the test cluster up with monitoring, alice deployed, the stand-ins bound into the GPU machines; run
with CLUSTERFORGE_E2E=1. Not yet run on the test cluster by its author (the lead runs the tier).
"""

from __future__ import annotations

import json
import shlex
import time

import pytest
from e2e.test_gate import RESULTS, check, gate_on, node, wait_for  # noqa: F401  (gate_on: the shared deploy)
from e2e.test_monitoring import eventually, query
from e2e.testbed import MACHINES, Testbed

from clusterforge.admission.tests import MARK
from clusterforge.health import reservations

pytestmark = pytest.mark.e2e

CTL = MACHINES["ctl"]
LOGIN = MACHINES["login1"]
GPU02 = MACHINES["gpu02"]
BIN = "/usr/local/lib/clusterforge-testbed/accept"
CANARY = "/etc/cf-gate-canary"
TEXT = "root's, not to be written through a link\n"
AHEAD = 60      # job ids planted past her job's own: the gate's round here is some 8 jobs, their reads inside them
RUNS = "/var/lib/clusterforge/gate-runs"
HCAS = ("mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5")  # the vagrant profile's NCCL HCAs: ib_write_bw's
SLOW = "cf:gate:ib_write_bw:mlx5_4 190 Gb/s < 380"
PARTITION = "gpu"

# Run by alice in her job on gpu02: a healthy node's ib_write_bw output in the gate script's format (the stand-ins,
# server and client per HCA, as gpu01 measures), then the plants, then what she could see or plant in the gate's
# directory.
PLANT = f"""
set -u
table=$HOME/.cf-healthy-ib
: > "$table"
port=23000
for h in {' '.join(HCAS)}; do
  port=$((port + 1))
  echo "{MARK} $h" >> "$table"
  SLURMD_NODENAME=gpu01 {BIN}/ib_write_bw -d $h -p $port -s 8388608 -F --report_gbits > "$table.server" 2>&1 &
  sleep 1
  SLURMD_NODENAME=gpu01 {BIN}/ib_write_bw -d $h -p $port -s 8388608 -F --report_gbits localhost >> "$table" 2>&1
  wait; cat "$table.server" >> "$table"; rm -f "$table.server"
  echo "{MARK} $h exit 0" >> "$table"
done
for i in $(seq $((SLURM_JOB_ID + 1)) $((SLURM_JOB_ID + {AHEAD}))); do
  for dir in /var/tmp /tmp; do
    f=$dir/cf-gate-$i.out
    case $((i % 3)) in
      0) ln -s {CANARY} "$f" ;;
      1) mkfifo -m 0666 "$f" ;;
      2) cp "$table" "$f"; chmod 0666 "$f" ;;
    esac
  done
done
for target in {RUNS}/gpu02 {RUNS}/gpu02/x {RUNS}/x; do
  ln -s {CANARY} "$target" 2>/dev/null && echo "PLANTED $target"
  mkfifo "$target.fifo" 2>/dev/null && echo "PLANTED $target.fifo"
done
ls {RUNS} >/dev/null 2>&1 && echo LISTED
echo "planted $(ls /var/tmp/cf-gate-*.out | wc -l) on $(hostname)"
"""


def results(found: dict) -> None:
    """The stand-ins' figures (testbed/accept/results.py), on the shared /home."""
    RESULTS.write_text(json.dumps(found))


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
        results({"gpu02": {"hca": {"mlx5_4": 190}}})
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
        results({})
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
        results({})
        testbed.run(CTL, f"scontrol update PartitionName={PARTITION} MaxTime=01:00:00; "
                         f"scancel --reservation={hold}; sleep 2; "
                         f"scontrol delete ReservationName={hold}; true")
        if node(testbed, "gpu02")[1].startswith("cf:gate:"):
            testbed.run(CTL, "scontrol update NodeName=gpu02 State=RESUME")
        testbed.run(GPU02, f"rm -f {CANARY} /home/alice/.cf-healthy-ib; "
                           "find /tmp /var/tmp -maxdepth 1 -name 'cf-gate-*.out' -user alice -delete; true")
