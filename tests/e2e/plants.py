"""What alice plants on a node for the admission gate's boundary test (test_gate.py, issue 46): a healthy node's
ib_write_bw output in the gate script's format, a link to a file of root's, a FIFO or that table at every name the
gate's test outputs had, for the next job ids Slurm hands out, and tries of the gate's own directory."""

from __future__ import annotations

from e2e.testbed import MACHINES

from clusterforge.admission.tests import MARK

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

def at_every_output(prefix: str, dirs: str, table: str, canary: str, ahead: int) -> str:
    """Shell lines of alice's: at each output name ``<dir>/<prefix>-<id>.out`` of the next ``ahead`` job ids (Slurm
    hands them out in order), a link to ``canary`` (a file of root's), a FIFO open to all, or a copy of ``table`` (a
    healthy node's output), in turn."""
    return f"""for i in $(seq $((SLURM_JOB_ID + 1)) $((SLURM_JOB_ID + {ahead}))); do
  for dir in {dirs}; do
    f=$dir/{prefix}-$i.out
    case $((i % 3)) in
      0) ln -s {canary} "$f" ;;
      1) mkfifo -m 0666 "$f" ;;
      2) cp {table} "$f"; chmod 0666 "$f" ;;
    esac
  done
done"""


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
{at_every_output("cf-gate", "/var/tmp /tmp", '"$table"', CANARY, AHEAD)}
for target in {RUNS}/gpu02 {RUNS}/gpu02/x {RUNS}/x; do
  ln -s {CANARY} "$target" 2>/dev/null && echo "PLANTED $target"
  mkfifo "$target.fifo" 2>/dev/null && echo "PLANTED $target.fifo"
done
ls {RUNS} >/dev/null 2>&1 && echo LISTED
echo "planted $(ls /var/tmp/cf-gate-*.out | wc -l) on $(hostname)"
"""
